"""Global atomics as Triton 3.6 emits them on NVIDIA GPUs: one PTX `atom` per element, with the
memory order and scope in the instruction (inline PTX; LLVM's NVPTX backend drops the ordering of
`atomicrmw`, which the core then brackets with fences).

- read-modify-write: `atom.global.<scope>.<sem>.<op>.<type>` (Triton's qualifier order), e.g.
  `atom.global.gpu.acq_rel.add.f32`: `add.u32/u64` on integers, `add.f32/f64`, `add.noftz.f16`,
  `add.noftz.bf16` (sm_90 on), `max/min.s32/s64`, `max/min.u32/u64` (`umax`/`umin`),
  `and/or/xor/exch.b32/b64`. A bf16 add before sm_90 is, as Triton's, LLVM's `atomicrmw` with
  the order and scope, which LLVM expands into a loop of `atom.<sem>.<scope>.global.cas.b32`
  keeping both (what Triton's test_atomic_rmw reads there);
- compare-and-swap: `atom.global.<sem>.<scope>.cas.b16/b32/b64`, e.g. `atom.global.acq_rel.gpu.cas.b32`.

`<scope>` is `cta`, `gpu` or `sys`; `<sem>` `relaxed`, `acquire`, `release` or `acq_rel`: the
PTX memory model's, the same words as Triton's `sem` and `scope`. Values travel as integer
registers of their width (`h`, `r`, `l`), floats as their bits. The qualifiers `.sem` and
`.scope` need sm_70 (tilec's oldest target); `.noftz.f16` and `.b16` need PTX ISA 6.3 (not the
6.0 of sm_70), `.noftz.bf16` PTX 7.8 and sm_90: where the target lacks another form, None (the
core's LLVM `atomicrmw` / `cmpxchg`).
"""

from __future__ import annotations

from llvmlite import ir

from tilec.lowering.target import TargetInfo
from tilec_nvidia.arch import ARCHS

_TYPE_PREFIXES = {"add": "u", "max": "s", "min": "s", "umax": "u", "umin": "u",
                  "and": "b", "or": "b", "xor": "b", "xchg": "b"}  # fmt: skip
_OPS = {"umax": "max", "umin": "min", "xchg": "exch"}
_REGISTERS = {16: "h", 32: "r", 64: "l"}
_FLOAT_BITS = {"half": 16, "bfloat": 16, "float": 32, "double": 64}
_ORDERINGS = {"relaxed": "monotonic", "acquire": "acquire", "release": "release",
              "acq_rel": "acq_rel"}  # fmt: skip


def _float_bits(t: ir.Type) -> int | None:
    return _FLOAT_BITS.get(str(t))


def _asm(builder: ir.IRBuilder, text: str, operands: list[ir.Value], result: ir.Type) -> ir.Value:
    registers = [_REGISTERS[result.width]]
    constraints = ["=" + registers[0], "l"] + [_REGISTERS[v.type.width] for v in operands[1:]]
    fn_type = ir.FunctionType(result, [v.type for v in operands])
    asm = ir.InlineAsm(fn_type, text, ",".join(constraints), side_effect=True)
    return builder.call(asm, operands)


def atomic_rmw(
    target: TargetInfo,
    builder: ir.IRBuilder,
    kind: str,
    ptr: ir.Value,
    value: ir.Value,
    sem: str,
    scope: str,
) -> ir.Value | None:
    """`TargetInfo.atomic_rmw` of NVIDIA's targets: Triton's `atom` (see the module doc), or None
    where the target has no such instruction."""
    info = ARCHS.check(target.arch)
    major, _ = info.capability
    t = value.type
    float_bits = _float_bits(t)
    if float_bits is None:
        if not isinstance(t, ir.IntType) or t.width not in (32, 64) or kind not in _TYPE_PREFIXES:
            return None
        op, type_name, bits = _OPS.get(kind, kind), f"{_TYPE_PREFIXES[kind]}{t.width}", t.width
    elif kind == "add":
        if float_bits == 16:
            if str(t) == "bfloat" and (major < 9 or info.ptx_version < 78):
                return _llvm_add(builder, target, ptr, value, sem, scope)
            if info.ptx_version < 63:
                return None
            op = "add.noftz"
        else:
            op = "add"
        type_name, bits = f"{'bf' if str(t) == 'bfloat' else 'f'}{float_bits}", float_bits
    elif kind == "xchg" and float_bits in (32, 64):
        op, type_name, bits = "exch", f"b{float_bits}", float_bits
    else:
        return None
    integer = ir.IntType(bits)
    operand = value if isinstance(t, ir.IntType) else builder.bitcast(value, integer)
    text = f"atom.global.{scope}.{sem}.{op}.{type_name} $0, [$1], $2;"
    old = _asm(builder, text, [ptr, operand], integer)
    return old if isinstance(t, ir.IntType) else builder.bitcast(old, t)


def _llvm_add(
    builder: ir.IRBuilder, target: TargetInfo, ptr: ir.Value, value: ir.Value, sem: str, scope: str
) -> ir.Value:
    """LLVM's `atomicrmw fadd` carrying `sem` and `scope`, for what LLVM expands into a CAS loop
    (its `cmpxchg`s keep the order; a native `atom` would print without it)."""
    sync_scope = target.sync_scopes[scope]
    ordering = _ORDERINGS[sem]
    if sync_scope is not None:
        ordering = f'syncscope("{sync_scope}") {ordering}'
    return builder.atomic_rmw("fadd", ptr, value, ordering)


def atomic_cas(
    target: TargetInfo,
    builder: ir.IRBuilder,
    ptr: ir.Value,
    compare: ir.Value,
    value: ir.Value,
    sem: str,
    scope: str,
) -> ir.Value | None:
    """`TargetInfo.atomic_cas` of NVIDIA's targets: Triton's `atom...cas` of two integers of 16,
    32 or 64 bits, or None where the target has no such instruction."""
    bits = value.type.width
    if bits not in _REGISTERS or (bits == 16 and ARCHS.check(target.arch).ptx_version < 63):
        return None
    text = f"atom.global.{sem}.{scope}.cas.b{bits} $0, [$1], $2, $3;"
    return _asm(builder, text, [ptr, compare, value], value.type)


__all__ = ["atomic_cas", "atomic_rmw"]
