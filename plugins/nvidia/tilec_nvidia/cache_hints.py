"""Loads and stores with Triton's cache modifiers and eviction policies, as PTX (inline asm).

LLVM's NVPTX has no intrinsic for `ld.global.cg` or `L1::evict_first`, so, as Triton's
`LoadStoreOpToLLVM.cpp`, each access is one inline-asm instruction:

    ld.global{.ca|.cg|.cv}{.L1::evict_first|.L1::evict_last}{.L2::cache_hint}{.vN}.bW
    st.global{.wb|.cg|.cs|.wt}{.L1::evict_first|.L1::evict_last}{.L2::cache_hint}{.vN}.bW

A volatile load (`tl.load(..., volatile=True)`) is `ld.volatile.global`, which takes neither
(ptxas refuses them beside `.volatile`), as a volatile load is never cached. An eviction policy
is also an L2 policy on sm_80 and later: one
`createpolicy.fractional.L2::evict_first.b64 %p, 1.0` an op (before its accesses), handed to
each as the `L2::cache_hint` operand. ptxas rejects an L1 eviction priority beside a cache
operator (`ld.global.cg.L1::evict_first`: "Modifier '.evict_first' cannot be combined with
modifier '.cg'"), so with both only the L2 policy carries the eviction policy. The L1 priorities
and `createpolicy` need PTX ISA 7.4: a module that uses them asks `llir_to_ptx` for it through
its `tilec.ptx_version` metadata (sm_80 and sm_86 otherwise get 7.0 and 7.1).

The words of an access are Triton's: `W = min(vector bits, max(32, element bits))`, `N` words;
8-bit words go through 16-bit registers (`h`), which `ld.b8`/`st.b8` take.
"""

from __future__ import annotations

from llvmlite import ir

from tilec.lowering.memory_hints import MemoryHints

L1_EVICTION_SINCE = 70
L2_POLICY_SINCE = 80
HINT_PTX_VERSION = 74
"""The compute capabilities (x10) and PTX ISA (x10) of `L1::evict_*` and `L2::cache_hint`."""
PTX_VERSION_METADATA = "tilec.ptx_version"

_CONSTRAINT = {8: "h", 16: "h", 32: "r", 64: "l"}
_I64 = ir.IntType(64)


def prepare(builder: ir.IRBuilder, capability: int, hints: MemoryHints) -> MemoryHints:
    """The L2 policy register of an op with an eviction policy on sm_80 and later."""
    if not hints.eviction or hints.volatile or capability < L2_POLICY_SINCE:
        return hints
    require_ptx_version(builder.module, HINT_PTX_VERSION)
    fn_type = ir.FunctionType(_I64, [])
    text = f"createpolicy.fractional.L2::{hints.eviction}.b64 $0, 1.0;"
    policy = builder.call(ir.InlineAsm(fn_type, text, "=l", side_effect=False), [])
    return MemoryHints(hints.cache, hints.eviction, hints.store, policy)


def load(
    builder: ir.IRBuilder,
    capability: int,
    address: ir.Value,
    typ: ir.Type,
    hints: MemoryHints,
    predicate: ir.Value | None = None,
    other: ir.Value | None = None,
) -> ir.Value:
    """`ld.global` of `typ` from `address` with `hints` (module doc); with an i1 `predicate`,
    `@p ld.global`, the words first set to `other`'s (a value of `typ`), as Triton's loads."""
    width, count, as_int = _words(typ)
    word = ir.IntType(16 if width == 8 else width)
    opcode = _opcode(builder.module, "ld", capability, hints, width, count)
    outputs = ", ".join(f"${i}" for i in range(count))
    operands = [address] + ([hints.prepared] if hints.prepared is not None else [])
    text = f"{opcode} {_braced(outputs, count)}, [${count}]{_policy(hints, count + 1)};"
    constraints = ",".join(["=" + _CONSTRAINT[width]] * count + ["l"] * len(operands))
    if predicate is not None:
        first = count + len(operands)
        words = _to_words(builder, other, width, count, as_int)
        if width == 8:
            words = [builder.zext(w, ir.IntType(16)) for w in words]
        moves = " ".join(f"mov.b{max(16, width)} ${i}, ${first + 1 + i};" for i in range(count))
        text = f"{moves} @${first} {text}"
        operands += [predicate, *words]
        constraints += ",b" + f",{_CONSTRAINT[width]}" * count
    ret = word if count == 1 else ir.LiteralStructType([word] * count)
    fn_type = ir.FunctionType(ret, [o.type for o in operands])
    result = builder.call(ir.InlineAsm(fn_type, text, constraints, side_effect=True), operands)
    words = [result] if count == 1 else [builder.extract_value(result, i) for i in range(count)]
    if width == 8:
        words = [builder.trunc(w, ir.IntType(8)) for w in words]
    return _from_words(builder, words, typ, as_int)


def store(
    builder: ir.IRBuilder,
    capability: int,
    value: ir.Value,
    address: ir.Value,
    hints: MemoryHints,
    predicate: ir.Value | None = None,
) -> None:
    """`st.global` of `value` to `address` with `hints` (module doc); with an i1 `predicate`,
    `@p st.global`."""
    width, count, as_int = _words(value.type)
    opcode = _opcode(builder.module, "st", capability, hints, width, count)
    words = _to_words(builder, value, width, count, as_int)
    if width == 8:
        words = [builder.zext(w, ir.IntType(16)) for w in words]
    inputs = ", ".join(f"${i + 1}" for i in range(count))
    operands = [address, *words] + ([hints.prepared] if hints.prepared is not None else [])
    text = f"{opcode} [$0], {_braced(inputs, count)}{_policy(hints, count + 1)};"
    constraints = ",".join(
        ["l"] + [_CONSTRAINT[width]] * count + ["l"] * (hints.prepared is not None)
    )
    if predicate is not None:
        text = f"@${len(operands)} {text}"
        operands.append(predicate)
        constraints += ",b"
    fn_type = ir.FunctionType(ir.VoidType(), [o.type for o in operands])
    builder.call(ir.InlineAsm(fn_type, text, constraints, side_effect=True), operands)


def require_ptx_version(module: ir.Module, version: int) -> None:
    """Record that `module` needs PTX ISA `version` (x10) at least (`llir_to_ptx` reads it): the
    highest version asked for."""
    node = module.add_metadata([ir.Constant(ir.IntType(32), version)])
    named = module.namedmetadata.get(PTX_VERSION_METADATA)
    if named is None:
        module.add_named_metadata(PTX_VERSION_METADATA).add(node)
    elif named.operands[0].operands[0].constant < version:
        named.operands[0] = node


def _opcode(
    module: ir.Module, kind: str, capability: int, hints: MemoryHints, width: int, count: int
) -> str:
    parts = [kind, "global"]
    if hints.volatile:  # ld.volatile takes no cache operator or eviction priority
        parts.insert(1, "volatile")
    elif hints.cache:
        parts.append(hints.cache.removeprefix("."))
    elif hints.eviction and capability >= L1_EVICTION_SINCE:
        require_ptx_version(module, HINT_PTX_VERSION)
        parts.append(f"L1::{hints.eviction}")
    if hints.prepared is not None:
        parts.append("L2::cache_hint")
    if count > 1:
        parts.append(f"v{count}")
    parts.append(f"b{width}")
    return ".".join(parts)


def _policy(hints: MemoryHints, index: int) -> str:
    return "" if hints.prepared is None else f", ${index}"


def _braced(names: str, count: int) -> str:
    return names if count == 1 else "{" + names + "}"


def _words(typ: ir.Type) -> tuple[int, int, bool]:
    """The word width, the word count, and whether the elements are pointers (moved as i64)."""
    element = typ.element if isinstance(typ, ir.VectorType) else typ
    lanes = typ.count if isinstance(typ, ir.VectorType) else 1
    as_int = isinstance(element, ir.PointerType)
    bits = 64 if as_int else _bits(element)
    total = bits * lanes
    width = min(total, max(32, bits))
    return width, max(1, total // width), as_int


def _bits(t: ir.Type) -> int:
    if isinstance(t, ir.IntType):
        return t.width
    return {"half": 16, "bfloat": 16, "float": 32, "double": 64}[str(t)]


def _from_words(
    builder: ir.IRBuilder, words: list[ir.Value], typ: ir.Type, as_int: bool
) -> ir.Value:
    """The loaded words as `typ`."""
    if len(words) == 1:
        packed = words[0]
    else:
        vector = ir.Constant(ir.VectorType(words[0].type, len(words)), None)
        for i, w in enumerate(words):
            vector = builder.insert_element(vector, w, ir.Constant(ir.IntType(32), i))
        packed = vector
    if as_int:
        lanes = typ.count if isinstance(typ, ir.VectorType) else 1
        ints = builder.bitcast(packed, ir.VectorType(_I64, lanes) if lanes > 1 else _I64)
        return builder.inttoptr(ints, typ)
    return builder.bitcast(packed, typ) if packed.type != typ else packed


def _to_words(
    builder: ir.IRBuilder, value: ir.Value, width: int, count: int, as_int: bool
) -> list[ir.Value]:
    """`value` as `count` integers of `width` bits."""
    if as_int:
        lanes = value.type.count if isinstance(value.type, ir.VectorType) else 1
        value = builder.ptrtoint(value, ir.VectorType(_I64, lanes) if lanes > 1 else _I64)
    word = ir.IntType(width)
    if count == 1:
        return [builder.bitcast(value, word) if value.type != word else value]
    vector = builder.bitcast(value, ir.VectorType(word, count))
    return [builder.extract_element(vector, ir.Constant(ir.IntType(32), i)) for i in range(count)]


__all__ = [
    "HINT_PTX_VERSION",
    "PTX_VERSION_METADATA",
    "load",
    "prepare",
    "require_ptx_version",
    "store",
]
