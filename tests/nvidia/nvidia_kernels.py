"""Hand-written kernels for the NVIDIA backend tests (no tilec frontend involved)."""

VECTOR_ADD_LLIR = """\
define ptx_kernel void @vector_add(ptr addrspace(1) %x, ptr addrspace(1) %y, ptr addrspace(1) %out, i32 %n) {
entry:
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %base = mul i32 %bid, %ntid
  %i = add i32 %base, %tid
  %inside = icmp slt i32 %i, %n
  br i1 %inside, label %body, label %exit
body:
  %index = sext i32 %i to i64
  %px = getelementptr float, ptr addrspace(1) %x, i64 %index
  %py = getelementptr float, ptr addrspace(1) %y, i64 %index
  %po = getelementptr float, ptr addrspace(1) %out, i64 %index
  %vx = load float, ptr addrspace(1) %px, align 4
  %vy = load float, ptr addrspace(1) %py, align 4
  %sum = fadd float %vx, %vy
  store float %sum, ptr addrspace(1) %po, align 4
  br label %exit
exit:
  ret void
}
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
"""
VECTOR_ADD_SIGNATURE = ("*fp32", "*fp32", "*fp32", "i32")
VECTOR_ADD_NAMES = ("x", "y", "out", "n")

# Hand-written PTX (ISA 7.8 runs on every driver of sm_90 and newer; JIT-compiled on load):
# out[i] = x[i] * scale + (flag ? 1 : 0), for i < n; exercises f32 and i1 (.u8) parameters.
SCALE_PTX = """\
.version 7.8
.target sm_80
.address_size 64

.visible .entry scale(
    .param .u64 x,
    .param .u64 out,
    .param .f32 factor,
    .param .u8 flag,
    .param .u32 n
)
{
    .reg .pred %p<2>;
    .reg .b16 %h<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<6>;

    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [out];
    ld.param.f32 %f1, [factor];
    ld.param.u8 %h1, [flag];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.f32 %f2, [%rd4];
    mul.f32 %f3, %f2, %f1;
    cvt.rn.f32.u16 %f4, %h1;
    add.f32 %f3, %f3, %f4;
    st.global.f32 [%rd5], %f3;
DONE:
    ret;
}
"""
SCALE_SIGNATURE = ("*fp32", "*fp32", "fp32", "i1", "i32")
SCALE_NAMES = ("x", "out", "factor", "flag", "n")
