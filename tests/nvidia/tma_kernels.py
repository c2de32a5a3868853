"""A TMA copy kernel built with `tilec_nvidia.tma` in LLVM IR (llvmlite), for the PTX tests and
the GPU test of the TMA building blocks (docs/tma.md), before any tilec kernel reaches them.

`tma_copy(base, rows, columns, row_stride, out, ld_out, tensor_map)` (the parameters of a tilec
kernel taking a host descriptor and an output, its tensor map last, as `tma_launch` passes it;
the descriptor's parts are unused: the map has them): block (x, y) copies `steps` boxes of `box` (rows, columns)
at rows y * rows and columns (x * steps + s) * columns of the mapped tensor into shared memory
(swizzled `swizzle` bytes wide), one mbarrier reused with parities 0, 1, 0, ..., and its threads
write each box, un-swizzled, to `out` (rows of `ld_out` elements), elements out of the tensor
as TMA filled them.
"""

from __future__ import annotations

from llvmlite import ir

import tilec
import tilec.language as tl
from tilec_nvidia import tma

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
THREADS = 128
NAME = "tma_copy"
MAP_INDEX = 6
"""The tensor map's parameter index."""


def signature(element: str) -> tuple[str, ...]:
    """The signature's parameters (the map's not among them: `metadata["tensor_maps"]`)."""
    return (f"*{element}", "i32", "i32", "i64", f"*{element}", "i32")


def tensor_maps(element: str, block: tuple[int, int], padding: str, swizzle: int) -> list:
    """`metadata["tensor_maps"]` of the kernel: the descriptor's parts are parameters 0-3."""
    return [{
        "element": element, "base": 0, "shape": [["param", 1], ["param", 2]],
        "strides": [["param", 3], ["const", 1]], "block": list(block), "padding": padding,
        "swizzle": swizzle,
    }]  # fmt: skip


TRIPLE = "nvptx64-nvidia-cuda"


def _sreg(module: ir.Module, builder: ir.IRBuilder, name: str) -> ir.Value:
    function = module.globals.get(f"llvm.nvvm.read.ptx.sreg.{name}")
    if function is None:
        function = ir.Function(module, ir.FunctionType(I32, []), f"llvm.nvvm.read.ptx.sreg.{name}")
    return builder.call(function, [])


def swizzled(offset: int, swizzle: int) -> int:
    """The byte of a box row-major `offset` in shared memory swizzled `swizzle` bytes wide: the
    16-byte chunk's bits 4-6 (as many as the swizzle has chunks a row) xor bits 7-9 of the
    offset (CUTLASS's Swizzle<3,4,3>, <2,4,3>, <1,4,3>; the buffer aligned to 1024 bytes)."""
    if not swizzle:
        return offset
    return offset ^ (((offset >> 7) & (swizzle // 16 - 1)) << 4)


def tma_copy_llir(arch: str, box: tuple[int, int], element_bytes: int, swizzle: int = 0,
                  steps: int = 1) -> str:  # fmt: skip
    rows, columns = box
    box_bytes = rows * columns * element_bytes
    module = ir.Module(name=NAME)
    module.triple = TRIPLE
    element = ir.IntType(8 * element_bytes)
    buffer = ir.GlobalVariable(module, ir.ArrayType(I8, box_bytes), "tma_buffer", addrspace=3)
    buffer.align, buffer.linkage = 1024, "internal"
    buffer.initializer = ir.Constant(buffer.value_type, None)
    barrier = ir.GlobalVariable(module, I64, "tma_barrier", addrspace=3)
    barrier.align, barrier.linkage = 8, "internal"
    barrier.initializer = ir.Constant(I64, None)
    global_pointer = ir.PointerType(addrspace=1)
    params = [global_pointer, I32, I32, I64, global_pointer, I32, ir.PointerType()]
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), params), NAME)
    function.calling_convention = "ptx_kernel"
    tensor_map = tma.tensor_map_parameter(function, len(params) - 1)
    out, ld_out = function.args[4], function.args[5]
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    tid = _sreg(module, builder, "tid.x")
    block_x, block_y = _sreg(module, builder, "ctaid.x"), _sreg(module, builder, "ctaid.y")
    issuer = builder.icmp_unsigned("==", tid, I32(0))
    tma.prefetch(arch, builder, tensor_map)
    tma.init(arch, builder, barrier, issuer)
    row0 = builder.mul(block_y, I32(rows))
    for step in range(steps):
        tile = builder.add(builder.mul(block_x, I32(steps)), I32(step))
        column0 = builder.mul(tile, I32(columns))
        tma.load_box(arch, builder, buffer, barrier, tensor_map, [row0, column0], box_bytes,
                     issuer, I32(step % 2))  # fmt: skip
        for first in range(0, rows * columns, THREADS):
            index = builder.add(tid, I32(first))  # rows * columns is a multiple of THREADS
            row, column = builder.udiv(index, I32(columns)), builder.urem(index, I32(columns))
            offset = builder.mul(index, I32(element_bytes))
            chunk_row = builder.and_(builder.lshr(offset, I32(7)), I32(max(swizzle // 16 - 1, 0)))
            physical = builder.xor(offset, builder.shl(chunk_row, I32(4)))
            source = builder.gep(buffer, [I32(0), physical], inbounds=True)
            value = builder.load(source, typ=element)
            out_row = builder.zext(builder.add(row0, row), I64)
            out_column = builder.zext(builder.add(column0, column), I64)
            at = builder.add(builder.mul(out_row, builder.zext(ld_out, I64)), out_column)
            builder.store(value, builder.gep(out, [at], source_etype=element))
        builder.call(_barrier_sync(module), [])  # reads done before the next copy lands
    builder.ret_void()
    return str(module)


def _barrier_sync(module: ir.Module) -> ir.Function:
    name = "llvm.nvvm.barrier0"
    function = module.globals.get(name)
    return function or ir.Function(module, ir.FunctionType(ir.VoidType(), []), name)


@tilec.jit  # a matmul through host descriptors (test_tma_gpu, test_nvidia_host_descriptors)
def matmul_descriptors(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr):  # fmt: skip
    i, j = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([i * BM, k * BK])
        b = b_desc.load([k * BK, j * BN])
        acc = tl.dot(a, b, acc)
    c_desc.store([i * BM, j * BN], acc.to(c_desc.dtype))


PIPELINED = [  # matmul_tiles' cases (test_tma_gpu, test_tma_compile)
    # element, (M, N, K), (BM, BN, BK), num_stages, num_warps, b transposed (b^T's rows)
    ("fp16", (256, 192, 1000), (64, 64, 32), 2, 4, False),  # K not a multiple of BK
    ("bf16", (200, 72, 104), (64, 64, 32), 3, 4, False),  # ragged M and N
    ("fp16", (384, 256, 520), (128, 128, 64), 4, 8, True),  # the benchmark's host-desc shape
    ("bf16", (300, 260, 16), (64, 64, 32), 3, 4, True),  # one iteration, the others never issued
    ("fp16", (128, 64, 4096), (64, 64, 64), 4, 4, False),  # a long K: the phases wrap often
    ("fp8e4nv", (256, 128, 304), (64, 64, 64), 3, 4, False),  # b K-major for wgmma: cp.async
    (
        "fp8e4nv",
        (256, 256, 1008),
        (128, 128, 128),
        3,
        8,
        True,
    ),  # both through TMA (1008: 16-byte rows)
    # issue 23, wrong on the H200 while A went to registers (ldmatrix) under a wgmma in flight:
    ("fp16", (256, 256, 256), (128, 256, 64), 3, 8, True),  # a 32 KB B box, wgmma N = 256
    ("fp16", (2048, 2048, 520), (128, 128, 64), 3, 4, True),  # 2 blocks an SM, waves, K ragged
    ("fp16", (2048, 2048, 520), (128, 128, 64), 4, 8, True),  # the benchmark's, many waves
]

LDMATRIX_RINGS = [  # matmul_tiles' cases on mma.sync (BM = 32: no wgmma), rings TMA fills read
    # into registers by ldmatrix through NvmmaTile's offsets (test_tma_gpu, test_tma_compile)
    ("bf16", (160, 192, 520), (32, 64, 64), 3, 8, False),  # both rings, 8 warps, ragged M
    ("fp16", (1024, 1024, 520), (32, 128, 64), 4, 8, False),  # 256 programs: waves
    ("fp16", (96, 192, 520), (32, 64, 64), 3, 4, True),  # a's ring; b^T one TMA load a step
]


@tilec.jit  # pipelined descriptor loads filling the K loop's ring through TMA (test_tma_gpu)
def matmul_tiles(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr, PROGRAMS: tl.constexpr, B_T: tl.constexpr):  # fmt: skip
    """c (fp32, M x N, row-major) = a @ b (b^T's rows with `B_T`, as the benchmark's host-desc
    kernel), each of `PROGRAMS` programs looping over tiles, so that a program fewer than the
    tiles enters the pipelined K loop (and inits its barriers) several times."""
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, PROGRAMS):
        i = tile // tiles_n
        j = tile % tiles_n
        acc = tile_dot(a_desc, b_desc, i, j, K, BM, BN, BK, B_T)
        rows = i * BM + tl.arange(0, BM)
        cols = j * BN + tl.arange(0, BN)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=mask)


@tilec.jit
def tile_dot(a_desc, b_desc, i, j, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
             B_T: tl.constexpr):  # fmt: skip
    """Tile (i, j) of a @ b (f32), the K loop reading a's and b's blocks (b^T's rows with
    `B_T`) through their descriptors (matmul_tiles, tma_made_kernels.matmul_made)."""
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([i * BM, k * BK])
        if B_T:
            b = b_desc.load([j * BN, k * BK]).T
        else:
            b = b_desc.load([k * BK, j * BN])
        acc = tl.dot(a, b, acc)
    return acc
