"""Docstrings of the `tl` markers (`tilec.language`), which `_builtin` attaches.

Each starts with the call as Triton 3.6 spells it (its parameter names and defaults), then says
what it does in tilec and where tilec differs from Triton or rejects a value.
"""

from __future__ import annotations

_ATOMIC = """atomic_{op}(pointer, val, mask=None, sem=None, scope=None)

Atomically {what} at `pointer`, where `mask` holds.
Returns the values memory held before. `sem` is one of "acq_rel" (the default), "acquire",
"release", "relaxed"; `scope` one of "gpu" (the default), "cta", "sys"; others are rejected."""

_UNARY = """{name}(x)

{what}, elementwise, in `x`'s float type."""

_RANDOM = "See Triton's `tl.random`; tilec produces the same Philox streams."

DOCS: dict[str, str] = {
    "program_id": """program_id(axis)

The index of this program along grid axis `axis` (0, 1 or 2), as int32. tilec defaults
`axis` to 0.""",
    "num_programs": """num_programs(axis)

The number of programs launched along grid axis `axis` (0, 1 or 2), as int32. tilec defaults
`axis` to 0.""",
    "arange": """arange(start, end)

The int32 block `start, start + 1, ..., end - 1`; `start` and `end` are compile-time constants
and `end - start` must be a power of two.""",
    "zeros": """zeros(shape, dtype)

A block of `shape` (compile-time constants) filled with 0 of `dtype`.""",
    "full": """full(shape, value, dtype)

A block of `shape` filled with `value` converted to `dtype`; `shape=()` gives a scalar.""",
    "load": """load(pointer, mask=None, other=None, boundary_check=(), padding_option="", \
cache_modifier="", eviction_policy="", volatile=False)

Load the values at `pointer` (a pointer or a block of pointers); where `mask` is false the
result is `other` (undefined if `other` is None). A block pointer takes `boundary_check` and
`padding_option` ("", "zero", "nan") instead of `mask`/`other`. `cache_modifier` (".ca", ".cg",
".cv"), `eviction_policy` ("evict_first", "evict_last") and `volatile` are emitted.""",
    "store": """store(pointer, value, mask=None, boundary_check=(), cache_modifier="", \
eviction_policy="")

Store `value` (converted to the pointee type and broadcast) at `pointer` where `mask` holds; a
block pointer takes `boundary_check` instead of `mask`. `cache_modifier` ("", ".wb", ".cg",
".cs", ".wt") and `eviction_policy` ("", "evict_first", "evict_last") are emitted as the target
has them.""",
    "where": """where(condition, x, y)

Elementwise `x` where `condition` is true, else `y`, broadcast to one shape. Both `x` and `y`
are computed.""",
    "minimum": """minimum(x, y, propagate_nan=PropagateNan.NONE)

The elementwise minimum. For floats, `PropagateNan.NONE` ignores a NaN operand and
`PropagateNan.ALL` returns NaN, as in Triton.""",
    "maximum": """maximum(x, y, propagate_nan=PropagateNan.NONE)

The elementwise maximum. For floats, `PropagateNan.NONE` ignores a NaN operand and
`PropagateNan.ALL` returns NaN, as in Triton.""",
    "clamp": """clamp(x, min, max, propagate_nan=PropagateNan.NONE)

`minimum(maximum(x, min), max)`, elementwise. With `PropagateNan.NONE` a NaN `x` gives `min`
(Triton's rule), with `ALL` it gives NaN. tilec accepts integers too.""",
    "exp": _UNARY.format(name="exp", what="e to the power `x`"),
    "exp2": _UNARY.format(name="exp2", what="2 to the power `x`"),
    "log": _UNARY.format(name="log", what="The natural logarithm"),
    "log2": _UNARY.format(name="log2", what="The base-2 logarithm"),
    "sqrt": _UNARY.format(name="sqrt", what="The square root (IEEE, correctly rounded)"),
    "rsqrt": _UNARY.format(name="rsqrt", what="The reciprocal square root `1 / sqrt(x)`"),
    "sin": _UNARY.format(name="sin", what="The sine"),
    "cos": _UNARY.format(name="cos", what="The cosine"),
    "erf": _UNARY.format(name="erf", what="The error function"),
    "floor": _UNARY.format(name="floor", what="The largest integer value not above `x`"),
    "ceil": _UNARY.format(name="ceil", what="The smallest integer value not below `x`"),
    "tanh": """tanh(x)

The hyperbolic tangent, elementwise (Triton has it as `tl.extra.libdevice.tanh`).""",
    "abs": """abs(x)

The absolute value, elementwise; unsigned and bool values are returned as they are.""",
    "sigmoid": """sigmoid(x)

`1 / (1 + exp(-x))`, elementwise, in `x`'s float type.""",
    "fma": """fma(x, y, z)

`x * y + z` rounded once, elementwise; operands of different float types meet in the type `+`
gives them.""",
    "umulhi": """umulhi(x, y)

The high half of the 2N-bit product of two N-bit integers (N = 32 or 64), treating both as
unsigned, in the operands' common type.""",
    "fdiv": """fdiv(x, y, ieee_rounding=False)

Float division. tilec always divides with IEEE rounding, which `ieee_rounding=True` asks for
and is a valid result of the default (fast) division.""",
    "div_rn": """div_rn(x, y)

Float division rounded to nearest even (tilec's `/`).""",
    "sqrt_rn": """sqrt_rn(x)

The square root rounded to nearest even (the same as tilec's `tl.sqrt`).""",
    "add": """add(x, y, sanitize_overflow=True)

`x + y`. `sanitize_overflow` asks for overflow checks in Triton's debug mode; tilec has no such
mode and integers wrap, for either value.""",
    "sub": """sub(x, y, sanitize_overflow=True)

`x - y`; `sanitize_overflow` as in `tl.add` (integers wrap).""",
    "mul": """mul(x, y, sanitize_overflow=True)

`x * y`; `sanitize_overflow` as in `tl.add` (integers wrap).""",
    "sum": """sum(input, axis=None, keep_dims=False, dtype=None)

The sum along `axis` (all axes if None). Integers narrower than 32 bits are summed in 32 bits,
as in Triton; with `dtype`, the input is cast to it and summed in it (no widening).""",
    "xor_sum": """xor_sum(input, axis=None, keep_dims=False)

The bitwise xor of the elements along `axis` (all axes if None); integers only.""",
    "max": """max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, \
keep_dims=False)

The maximum along `axis` (all axes if None); with `return_indices=True`, the pair
(maximum, index), ties going to the lowest index if `return_indices_tie_break_left`.""",
    "min": """min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, \
keep_dims=False)

The minimum along `axis` (all axes if None); with `return_indices=True`, the pair
(minimum, index), ties going to the lowest index if `return_indices_tie_break_left`.""",
    "argmax": """argmax(input, axis, tie_break_left=True, keep_dims=False)

The index of the maximum along `axis` (the lowest index among ties if `tie_break_left`).""",
    "argmin": """argmin(input, axis, tie_break_left=True, keep_dims=False)

The index of the minimum along `axis` (the lowest index among ties if `tie_break_left`).""",
    "reduce": """reduce(input, axis, combine_fn, keep_dims=False)

Reduce `input` (a tensor or a tuple of tensors) along `axis` with `combine_fn`, a `@tilec.jit`
function combining two (tuples of) values.""",
    "associative_scan": """associative_scan(input, axis, combine_fn, reverse=False)

The inclusive scan of `input` (a tensor or a tuple of tensors) along `axis` with the
associative `combine_fn`, a `@tilec.jit` function; `reverse` scans from the end.""",
    "cumsum": """cumsum(input, axis=0, reverse=False, dtype=None)

The inclusive prefix sum along `axis` (from the end if `reverse`); `dtype` as in `tl.sum`.""",
    "cumprod": """cumprod(input, axis=0, reverse=False)

The inclusive prefix product along `axis` (from the end if `reverse`). tilec also takes
`dtype=`, as `tl.cumsum`.""",
    "reduce_or": """reduce_or(input, axis, keep_dims=False)

The bitwise or of the elements along `axis`; integers only.""",
    "dot": """dot(input, other, acc=None, input_precision=None, allow_tf32=None, \
max_num_imprecise_acc=None, out_dtype=float32)

The matrix product of [M, K] and [K, N] blocks ([B, M, K] and [B, K, N]: B dots), plus `acc`.
float8: exact (as f16) in f32, or on float8 tensor cores that sum `max_num_imprecise_acc` products
(default all, as Triton) in reduced precision. f32 takes `input_precision` "tf32" (10 mantissa
bits, as tensor cores read f32), "tf32x3", "ieee", "bf16x3" or "bf16x6"; Triton's result dtype.""",
    "dot_scaled": """dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, \
fast_math=False, lhs_k_pack=True, rhs_k_pack=True, out_dtype=float32)

Microscaled `lhs @ rhs + acc`: "e2m1" (two fp4 a uint8, low first), "e4m3", "e5m2", "bf16",
"fp16" operands; uint8 e8m0 scales ([M, K // 32], [N, K // 32]) or None. As Triton without
scaled MMA: decoded to bf16 (f16 with "fp16"), scaled (0xFF: NaN unless `fast_math`), then
`tl.dot` into f32.""",
    "inline_asm_elementwise": """inline_asm_elementwise(asm, constraints, args, dtype, is_pure, \
pack)

Target assembly (PTX on nvidia, AMDGCN on amd; LLVM constraint syntax, `$N` operands) run on
the elements of the broadcast `args`, `pack` elements a call, giving a tensor of `dtype` (a tuple
for several dtypes). Elements narrower than 32 bits travel packed in 32-bit registers. The interp
backend cannot run assembly.""",
    "trans": """trans(input, *dims)

`input` with its dimensions permuted by `dims` (reversed if none are given).""",
    "permute": """permute(input, *dims)

`input` with its dimensions permuted: dimension i of the result is `input`'s `dims[i]`.""",
    "reshape": """reshape(input, *shape, can_reorder=False)

`input`'s elements in a block of `shape`. tilec keeps the element order, which is valid for
either value of `can_reorder`.""",
    "view": """view(input, *shape)

Triton's deprecated reshape that may reorder elements; tilec keeps their order.""",
    "ravel": """ravel(x, can_reorder=False)

`x`'s elements in one dimension, in order (also a valid order for `can_reorder=True`).""",
    "broadcast_to": """broadcast_to(input, *shape)

`input` broadcast to `shape`.""",
    "broadcast": """broadcast(input, other)

`input` and `other` broadcast to their common shape, as a pair.""",
    "expand_dims": """expand_dims(input, axis)

`input` with a new dimension of size 1 at `axis` (an int or a sequence of ints).""",
    "cat": """cat(input, other, can_reorder=False)

`input` then `other` along dimension 0 (same shapes). Triton requires `can_reorder=True`;
tilec keeps the order, which is valid for either value.""",
    "join": """join(a, b)

A new minor dimension of size 2: `[..., 0]` is `a` and `[..., 1]` is `b`.""",
    "split": """split(a)

The two halves of `a`'s minor dimension, which must have size 2 (`tl.join`'s inverse).""",
    "interleave": """interleave(a, b)

The elements of `a` and `b` alternating along their last dimension.""",
    "flip": """flip(x, dim=None)

`x` reversed along `dim` (the last dimension if None).""",
    "zeros_like": """zeros_like(input)

A block of zeros with `input`'s shape and dtype.""",
    "cast": """cast(input, dtype, fp_downcast_rounding=None, bitcast=False)

`input` converted to `dtype` (also `x.to(...)`); `bitcast=True` reinterprets the bits.
`dtype` may be a `tl.pointer_type`. tilec accepts `fp_downcast_rounding` only as None or
"rtne", and only for narrowing float conversions.""",
    "multiple_of": """multiple_of(input, values)

A promise that `input`'s values are multiples of `values` (per dimension), which tilec's
analysis uses to vectorize memory accesses; `input` is returned.""",
    "max_contiguous": """max_contiguous(input, values)

A promise that `input` holds runs of `values` consecutive values (per dimension), which tilec's
analysis uses to vectorize memory accesses; `input` is returned.""",
    "max_constancy": """max_constancy(input, values)

A promise that runs of `values` elements of `input` are equal. tilec derives constancy itself:
the promise is checked for form and `input` returned.""",
    "assume": """assume(cond)

A promise that `cond` holds. tilec keeps no such facts: nothing is emitted or checked.""",
    "static_range": """static_range(arg1, arg2=None, step=None)

A `for` loop over compile-time constant bounds that the frontend unrolls; it takes no loop
hints.""",
    "range": """range(arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None, \
disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False, disable_licm=False)

A `for` loop iterator, like Python's `range`. `num_stages` pipelines the loop on GPU backends
(overriding the launch's), `loop_unroll_factor=k` unrolls it k times, `disable_licm` keeps licm
out, `flatten` fuses it with its inner loop where Triton does; `warp_specialize` gives it producer
warps where the backend can (same results; docs/triton-names.md says where and how to turn it off).""",
    "static_assert": """static_assert(cond, msg="")

Fail compilation with `msg` unless the compile-time constant `cond` is true.""",
    "static_print": """static_print(*values, sep=" ", end="\\n", file=None, flush=False)

Print at compile time (once per compilation): constants as their values, runtime values as
their types. tilec does not take `file`.""",
    "device_print": """device_print(prefix, *args, hex=False)

Print `prefix` and the runtime values of `args` from the device. tilec rejects `hex=True`.""",
    "device_assert": """device_assert(cond, msg="", mask=None)

Fail the launch with `msg` where `cond` is false (and `mask`, if given, true). Triton checks
only when compiled with debug=True; tilec checks always.""",
    "debug_barrier": """debug_barrier()

A barrier that synchronizes all threads of the program.""",
    "softmax": """softmax(x, dim=None, keep_dims=False, ieee_rounding=False)

`exp(x - max(x, dim)) / sum(...)` along `dim` (0 if None).""",
    "swizzle2d": """swizzle2d(i, j, size_i, size_j, size_g)

Map row-major (i, j) of a `size_i x size_j` matrix to column-major order within groups of
`size_g` rows; returns the new pair.""",
    "gather": """gather(src, index, axis)

`out[..., j, ...] = src[..., index[..., j, ...], ...]` along `axis`. An index outside the axis
gives 0 in tilec (Triton leaves it undefined).""",
    "sort": """sort(x, dim=None, descending=False)

`x` sorted along its last dimension (the only one supported, as in Triton) with Triton's
bitonic network, so NaN and -0.0 land where Triton puts them.""",
    "topk": """topk(x, k, dim=None)

The `k` largest elements along the last dimension, largest first (Triton's bitonic top-k).""",
    "make_tensor_descriptor": """make_tensor_descriptor(base, shape, strides, block_shape, \
padding_option="zero")

A descriptor of the tensor at pointer `base` for block accesses (`desc.load(offsets)`,
`desc.store(offsets, value)`): masked loads and stores of the block's pointers, elements outside
`shape` read as the padding and never written. The last stride must be 1.""",
    "load_tensor_descriptor": """load_tensor_descriptor(desc, offsets)

`desc.load(offsets)`: the block of `desc.block_shape` at `offsets`, elements outside the
descriptor's shape read as its padding (0 or NaN).""",
    "store_tensor_descriptor": """store_tensor_descriptor(desc, offsets, value)

`desc.store(offsets, value)`: writes the block `value` at `offsets`, except its elements outside
the descriptor's shape.""",
    "make_block_ptr": """make_block_ptr(base, shape, strides, offsets, block_shape, order)

A pointer to the block of `block_shape` at `offsets` of the tensor at `base` (`shape`,
`strides`) for `tl.load`/`tl.store` with `boundary_check`; `order` (a permutation, fastest
dimension first) describes the memory layout. Loops and ifs carry it.""",
    "advance": """advance(base, offsets)

The block pointer `base` moved by `offsets` (one per dimension, added to its offsets); also
`base.advance(offsets)`.""",
    "map_elementwise": """map_elementwise(scalar_fn, *args, pack=1)

`scalar_fn` (a @jit function of scalars) applied to each element of the broadcast `args`; one
result or a tuple. tilec inlines it on the tensors: an `if` on an element runs both branches and
selects, loops run per element (no loads, stores or prints in them). `pack=k`: k consecutive.""",
    "slice": """slice(start, stop, step)

Triton's slice value: `t[tl.slice(1, 3, None)]` is `t[1:3]` on tuples; on tensors only
`tl.slice(None, None, None)` (`:`), as in Triton.""",
    "tuple": """tuple(args, type=None)

The tuple of `args` (`tl.tuple([a, b])` is `(a, b)`); `isinstance(t, tl.tuple)` holds for tuples
in kernels.""",
    "condition": """condition(arg1, disable_licm=False)

`while tl.condition(c, disable_licm=True):` loops while `c` holds; `disable_licm` keeps tilec's
loop-invariant code motion out of that loop.""",
    "bitonic_merge": """bitonic_merge(x, dim=None, descending=False)

Triton's bitonic merge along the last dimension: sorts a bitonic sequence (any other input gets
the network's result, as in Triton).""",
    "histogram": """histogram(input, num_bins, mask=None)

int32 counts of the values 0 .. num_bins - 1 of a 1-D integer tensor; values outside are not
counted, and with `mask` only elements where it holds.""",
    "philox": """philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS_DEFAULT)

Philox of the counter (c0, c1, c2, c3) keyed by the 64-bit `seed` (N_ROUNDS_DEFAULT is 10).
"""
    + _RANDOM,
    "philox_impl": """philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=N_ROUNDS_DEFAULT)

`n_rounds` Philox rounds on the counter (c0, c1, c2, c3) with key (k0, k1), all uint32 or all
uint64.""",
    "randint": """randint(seed, offset, n_rounds=N_ROUNDS_DEFAULT)

A block of random uint32 for `offset` (the first of `tl.randint4x`'s blocks).
"""
    + _RANDOM,
    "randint4x": """randint4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT)

Four blocks of random uint32 for `offset`.
"""
    + _RANDOM,
    "rand": """rand(seed, offset, n_rounds=N_ROUNDS_DEFAULT)

A block of float32 uniform in [0, 1) for `offset`.
"""
    + _RANDOM,
    "rand4x": """rand4x(seed, offsets, n_rounds=N_ROUNDS_DEFAULT)

Four blocks of float32 uniform in [0, 1) for `offsets`.
"""
    + _RANDOM,
    "randn": """randn(seed, offset, n_rounds=N_ROUNDS_DEFAULT)

A block of float32 from the standard normal distribution for `offset`.
"""
    + _RANDOM,
    "randn4x": """randn4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT)

Four blocks of float32 from the standard normal distribution for `offset`.
"""
    + _RANDOM,
    "uint_to_uniform_float": """uint_to_uniform_float(x)

A random (u)int32 or (u)int64 block to float32 uniform in [0, 1).""",
    "pair_uniform_to_normal": """pair_uniform_to_normal(u1, u2)

Box-Muller: two uniform blocks to two standard normal blocks.""",
    "pointer_type": """pointer_type(element_ty, address_space=1, const=False)

The dtype of a pointer to `element_ty`; tilec supports global pointers only.""",
}

for _op, _what in {
    "add": "add `val`",
    "max": "store the maximum of `val` and the value",
    "min": "store the minimum of `val` and the value",
    "xchg": "store `val`",
    "and": "and `val` (integers only)",
    "or": "or `val` (integers only)",
    "xor": "xor `val` (integers only)",
}.items():
    DOCS[f"atomic_{_op}"] = _ATOMIC.format(op=_op, what=_what)

DOCS["atomic_cas"] = """atomic_cas(pointer, cmp, val, sem=None, scope=None)

Atomically, where the value at `pointer` equals `cmp`, store `val`; return the values memory
held before. `sem` and `scope` as in `tl.atomic_add`."""
