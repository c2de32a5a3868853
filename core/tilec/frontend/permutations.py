"""Triton's shape and permutation functions, composed from existing ops: `join`, `split`,
`interleave`, `cat`, `permute`, `broadcast`, `ravel`, `view`, `flip`, `gather`, `sort`, `topk`,
`bitonic_merge` and `histogram`.

Moving elements between positions is exact for every dtype: the values are taken as their bits
(an unsigned integer of the same width, pointers as int64 addresses) and picked with `where` and
an xor reduction, which adds nothing but the one picked value; over a pair, `y ^ xor_sum(y)`
swaps the two. `sort`, `topk` and `bitonic_merge` run Triton's bitonic network with such swaps,
so they give Triton's results bit for bit. `gather` builds a selection tensor of `n x m`
elements per row (`n` inputs, `m` outputs along the axis), which must stay within Triton's
block limit of 2**20 elements.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilec.dialects import arith, tile
from tilec.frontend.compat_builtins import constant_arg as const
from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.frontend.semantics import MAX_TENSOR_ELEMENTS
from tilec.ir.attributes import IntegerAttr
from tilec.ir.types import (
    Float8Type,
    FloatType,
    IntegerType,
    PointerType,
    TensorType,
    i1,
    i32,
    i64,
    is_power_of_two,
    like,
)

Restore = Callable[[TensorValue], TensorValue]

SELECTION_CHUNK = 1 << 16
"""The most elements one selection of `select_along` (tl.gather) goes through before it takes
the source in chunks: 512 a thread at 4 warps, within every GPU backend's per-thread bound."""


def _dims(dims: tuple, what: str) -> tuple[int, ...]:
    values = tuple(const(d, what) for d in dims)
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        values = tuple(const(d, what) for d in values[0])
    return values


class PermutationsMixin:
    """Mixed into `Builtins` (which provides `sem`, `value` and `tl_xor_sum`/`tl_sum`)."""

    sem: Any

    # Bits -------------------------------------------------------------------------------------

    def as_bits(self, x: TensorValue) -> tuple[TensorValue, Restore]:
        """`x` as an integer of its width (int1 as uint8, pointers as int64), and the function
        that turns such bits back into `x`'s dtype."""
        source = x.dtype
        if isinstance(source, PointerType):
            bits = self.sem.create(tile.PtrToIntOp, [x], like(x.type, i64))
            return bits, lambda b: self.sem.create(tile.IntToPtrOp, [b], like(b.type, source))
        if source == i1:
            return self.sem.cast(x, IntegerType(8, unsigned=True)), lambda b: self.sem.cast(b, i1)
        if isinstance(source, FloatType | Float8Type):
            unsigned = IntegerType(source.width, unsigned=True)
            return self.sem.bitcast(x, unsigned), lambda b: self.sem.bitcast(b, source)
        return x, lambda b: b

    def iota(self, size: int, axis: int, shape: tuple[int, ...]) -> TensorValue:
        """0 .. size-1 along `axis`, broadcast to `shape`."""
        index = self.sem.create(
            tile.MakeRangeOp,
            [],
            TensorType((size,), i32),
            start=IntegerAttr(0, i32),
            end=IntegerAttr(size, i32),
        )
        placed = tuple(size if d == axis else 1 for d in range(len(shape)))
        return self.sem.broadcast_to(self.sem.reshape(index, placed), shape)

    def pick(self, bits: TensorValue, mask: TensorValue, axis: int) -> TensorValue:
        """The xor along `axis` of the bits where `mask` holds: the one selected value."""
        zero = self.sem.broadcast_to(self.sem.constant(0, bits.dtype), bits.shape)
        chosen = self.sem.create(arith.SelectOp, [mask, bits, zero], bits.type)
        return self.tl_xor_sum(chosen, axis)  # type: ignore[attr-defined]

    def _check_selection(self, shape: tuple[int, ...], what: str) -> None:
        numel = 1
        for d in shape:
            numel *= d
        if numel > MAX_TENSOR_ELEMENTS:
            raise UserError(
                f"{what} selects through a tensor of shape {list(shape)} ({numel} elements), more "
                f"than tilec's block limit of {MAX_TENSOR_ELEMENTS}",
                "use smaller blocks along the axis (its size squared times the other dims)",
            )

    # join / split / interleave / cat ---------------------------------------------------------------

    def tl_join(self, a: Any, b: Any) -> TensorValue:
        """A new minor dimension of size 2: `[..., 0]` is `a`, `[..., 1]` is `b`."""
        x, y = self.sem.broadcast_all(self.value(a), self.value(b))  # type: ignore[attr-defined]
        if x.dtype != y.dtype:
            raise UserError(
                f"tl.join needs operands of one dtype, got {x.dtype} and {y.dtype}",
                "cast one with .to()",
            )
        shape = (*x.shape, 2)
        x = self.sem.broadcast_to(self.sem.expand_dims(x, len(x.shape)), shape)
        y = self.sem.broadcast_to(self.sem.expand_dims(y, len(y.shape)), shape)
        first = self.sem.binary("==", self.iota(2, len(shape) - 1, shape), 0)
        return self.sem.create(arith.SelectOp, [first, x, y], x.type)

    def tl_split(self, a: Any) -> tuple[TensorValue, TensorValue]:
        """The two halves of a minor dimension of size 2 (`tl.join`'s inverse)."""
        x = self.value(a)  # type: ignore[attr-defined]
        if not x.is_tensor or x.shape[-1] != 2:
            raise UserError(f"tl.split needs a last dimension of size 2, got shape {list(x.shape)}")
        bits, restore = self.as_bits(x)
        axis = len(x.shape) - 1
        index = self.iota(2, axis, x.shape)
        halves = [self.pick(bits, self.sem.binary("==", index, k), axis) for k in (0, 1)]
        return restore(halves[0]), restore(halves[1])

    def tl_interleave(self, a: Any, b: Any) -> TensorValue:
        """Alternate the elements of `a` and `b` along their last dimension."""
        joined = self.tl_join(a, b)
        shape = (*joined.shape[:-2], 2 * joined.shape[-2]) if len(joined.shape) > 1 else (2,)
        return self.sem.reshape(joined, shape)

    def tl_cat(self, input: Any, other: Any, can_reorder: Any = False) -> TensorValue:
        """`input` then `other` along dimension 0 (same shapes). Triton requires
        `can_reorder=True`, since its order is unspecified; tilec keeps the order, which is valid
        for either value."""
        if not isinstance(const(can_reorder, "can_reorder"), bool):
            raise UserError("tl.cat's can_reorder must be True or False")
        x, y = self.value(input), self.value(other)  # type: ignore[attr-defined]
        if not x.is_tensor or x.shape != y.shape:
            raise UserError(
                f"tl.cat needs two tensors of one shape, got {list(x.shape)} and {list(y.shape)}"
            )
        joined = self.tl_join(x, y)  # [..., 2]
        rank = len(x.shape)
        front = self.sem.trans(joined, (rank, *range(rank)))  # [2, ...]
        return self.sem.reshape(front, (2 * x.shape[0], *x.shape[1:]))

    # permute / broadcast / ravel / view --------------------------------------------------------

    def tl_permute(self, input: Any, *dims: Any) -> TensorValue:
        x = self.value(input)  # type: ignore[attr-defined]
        order = _dims(dims, "tl.permute's dims")
        if sorted(order) != list(range(len(x.shape))):
            raise UserError(
                f"tl.permute's dims {list(order)} are not a permutation of the {len(x.shape)} "
                f"dimensions of shape {list(x.shape)}"
            )
        return self.sem.trans(x, order)

    def tl_broadcast(self, input: Any, other: Any) -> tuple[TensorValue, TensorValue]:
        x, y = self.sem.broadcast_all(self.value(input), self.value(other))  # type: ignore[attr-defined]
        return x, y

    def tl_ravel(self, x: Any, can_reorder: Any = False) -> TensorValue:
        """The elements in one dimension, in order (a valid order also for `can_reorder`)."""
        const(can_reorder, "can_reorder")
        v = self.value(x)  # type: ignore[attr-defined]
        return self.sem.reshape(v, (v.type.numel,)) if v.is_tensor else v

    def tl_view(self, input: Any, *shape: Any) -> TensorValue:
        """Triton's deprecated `view`: a reshape that may reorder; tilec keeps the order."""
        return self.sem.reshape(self.value(input), _dims(shape, "tl.view's shape"))  # type: ignore[attr-defined]

    # flip / gather --------------------------------------------------------------------------------

    def _axis_of(self, x: TensorValue, dim: Any, what: str, default_last: bool = True) -> int:
        rank = len(x.shape)
        if not x.is_tensor:
            raise UserError(f"{what} needs a tensor, got a scalar")
        axis = const(dim, "dim")
        if axis is None and default_last:
            axis = rank - 1
        if not isinstance(axis, int) or not -rank <= axis < rank:
            raise UserError(f"{what}: dim {axis!r} is out of range for shape {list(x.shape)}")
        return axis + rank if axis < 0 else axis

    def tl_flip(self, x: Any, dim: Any = None) -> TensorValue:
        """Reverse `x` along `dim` (default: the last): for each bit of the index, swap the
        neighbouring blocks of that size (`y ^ xor_sum(y)` over a pair swaps it, exactly)."""
        v = self.value(x)  # type: ignore[attr-defined]
        axis = self._axis_of(v, dim, "tl.flip")
        size = v.shape[axis]
        bits, restore = self.as_bits(v)
        block = 1
        while block < size:
            split = (*v.shape[:axis], size // (2 * block), 2, block, *v.shape[axis + 1 :])
            pairs = self.sem.reshape(bits, split)
            both = self.tl_xor_sum(pairs, axis + 1, keep_dims=True)  # type: ignore[attr-defined]
            bits = self.sem.reshape(self.sem.binary("^", pairs, both), v.shape)
            block *= 2
        return restore(bits)

    def select_along(
        self, bits: TensorValue, axis: int, chosen: TensorValue, what: str
    ) -> TensorValue:
        """out[..., j, ...] = bits[..., chosen[..., j, ...], ...] along `axis`; `chosen` has
        `bits`' shape except along `axis`. The selection goes through a tensor of the source's
        axis times `chosen`'s shape: where that is over `SELECTION_CHUNK` elements, the source
        axis is taken in chunks (each chunk's selection, 0 where the index falls outside it,
        xored together), so large gathers stay within the block limits."""
        n, m = bits.shape[axis], chosen.shape[axis]
        per_source = m * _count(bits.shape) // n
        chunk = n
        while chunk > 1 and chunk * per_source > SELECTION_CHUNK:
            chunk //= 2
        self._check_selection((*bits.shape[:axis], chunk, m, *bits.shape[axis + 1 :]), what)
        if chunk == n:
            return self._select_chunk(bits, axis, chosen)
        count = n // chunk
        pre, post = bits.shape[:axis], bits.shape[axis + 1 :]
        split = self.sem.reshape(bits, (*pre, count, chunk, *post))
        result = None
        for c in range(count):
            part = self.pick(
                split, self.sem.binary("==", self.iota(count, axis, split.shape), c), axis
            )
            local = self.sem.binary("-", chosen, c * chunk)
            partial = self._select_chunk(part, axis, local)
            result = partial if result is None else self.sem.binary("^", result, partial)
        return result

    def _select_chunk(self, bits: TensorValue, axis: int, chosen: TensorValue) -> TensorValue:
        """`select_along` in one selection: 0 where `chosen` is outside `bits`' axis."""
        n, m = bits.shape[axis], chosen.shape[axis]
        wide = (*bits.shape[:axis], n, m, *bits.shape[axis + 1 :])
        source = self.sem.broadcast_to(self.sem.expand_dims(bits, axis + 1), wide)
        wanted = self.sem.broadcast_to(self.sem.expand_dims(chosen, axis), wide)
        mask = self.sem.binary("==", wanted, self.iota(n, axis, wide))
        return self.pick(source, mask, axis)

    def tl_gather(self, src: Any, index: Any, axis: Any) -> TensorValue:
        """out[..., j, ...] = src[..., index[..., j, ...], ...] along `axis`; an index outside
        the axis gives 0 (Triton leaves it undefined)."""
        source, idx = self.value(src), self.value(index)  # type: ignore[attr-defined]
        if not isinstance(idx.dtype, IntegerType) or idx.dtype == i1:
            raise UserError(f"tl.gather's index must be an integer tensor, got {idx.type}")
        a = self._axis_of(source, axis, "tl.gather", default_last=False)
        if len(idx.shape) != len(source.shape) or any(
            s != t for d, (s, t) in enumerate(zip(source.shape, idx.shape, strict=True)) if d != a
        ):
            raise UserError(
                f"tl.gather's index shape {list(idx.shape)} must equal the source shape "
                f"{list(source.shape)} except along axis {a}"
            )
        bits, restore = self.as_bits(source)
        return restore(self.select_along(bits, a, self.sem.cast(idx, i32), "tl.gather"))

    # sort / topk / histogram ------------------------------------------------------------------------

    def swap_partners(self, x: TensorValue, bit: int) -> TensorValue:
        """Each element of `x` replaced by its partner along the last axis: the element whose
        index differs in `bit` (the pair's xor, xored with itself, is the other one)."""
        bits, restore = self.as_bits(x)
        shape, n = x.shape, x.shape[-1]
        block = 1 << bit
        pairs = self.sem.reshape(bits, (*shape[:-1], n // (2 * block), 2, block))
        both = self.tl_xor_sum(pairs, len(shape), keep_dims=True)  # type: ignore[attr-defined]
        return restore(self.sem.reshape(self.sem.binary("^", pairs, both), shape))

    def index_bit(self, shape: tuple[int, ...], bit: int) -> TensorValue:
        """Bit `bit` of the index along the last axis, as int32 0/1, broadcast to `shape`."""
        index = self.iota(shape[-1], len(shape) - 1, shape)
        return self.sem.binary("&", self.sem.binary(">>", index, bit), 1)

    def compare_and_swap(self, x: TensorValue, flip: Any, bit: int) -> TensorValue:
        """One step of Triton's bitonic network: partners `bit` apart keep (min, max), or
        (max, min) where `flip` is 1: `where((x > y) != (flip ^ is_right), y, x)` as Triton."""
        y = self.swap_partners(x, bit)
        right = self.sem.binary("^", self.index_bit(x.shape, bit), flip)
        swap = self.sem.binary("!=", self.sem.cast(self.sem.binary(">", x, y), i32), right)
        return self.sem.create(arith.SelectOp, [swap, y, x], x.type)

    def bitonic_merge_steps(self, x: TensorValue, stage: int, order: int) -> TensorValue:
        """`stage` compare-and-swap rounds (bits stage-1 .. 0); order 0 ascending, 1 descending,
        2 alternating by bit `stage` of the index (Triton's `_bitonic_merge_hypercube`)."""
        flip: Any = self.index_bit(x.shape, stage) if order == 2 else order
        for step in range(stage):
            x = self.compare_and_swap(x, flip, stage - 1 - step)
        return x

    def _sort_input(self, x: Any, dim: Any, what: str) -> tuple[TensorValue, int]:
        v = self.value(x)  # type: ignore[attr-defined]
        self._last_axis(v, dim, what)
        if v.is_pointer:
            raise UserError(f"{what} sorts numbers, not pointers")
        return v, v.shape[-1].bit_length() - 1

    def _last_axis(self, v: TensorValue, dim: Any, what: str) -> None:
        axis = self._axis_of(v, dim, what)
        if axis != len(v.shape) - 1:
            raise UserError(
                f"{what} sorts along the last dimension only (as Triton), got dim {axis}",
                "tl.permute the dimension to sort to the end first",
            )

    def tl_sort(self, x: Any, dim: Any = None, descending: Any = False) -> TensorValue:
        """Sort along the last dimension (the only one Triton supports) with Triton's bitonic
        network, so every input (NaN, -0.0 included) gives Triton's result."""
        v, log_n = self._sort_input(x, dim, "tl.sort")
        order = _order(descending) if log_n else 0  # Triton reads it only where it sorts
        for stage in range(1, log_n + 1):
            v = self.bitonic_merge_steps(v, stage, 2 if stage < log_n else order)
        return v

    def tl_topk(self, x: Any, k: Any, dim: Any = None) -> TensorValue:
        """The `k` largest elements along the last dimension, largest first (Triton's bitonic
        top-k: sort blocks of `k`, then keep the larger of block pairs and merge again)."""
        v, log_n = self._sort_input(x, dim, "tl.topk")
        count = const(k, "k")
        if not isinstance(count, int) or not is_power_of_two(count) or count > v.shape[-1]:
            raise UserError(
                f"tl.topk's k must be a power of two at most {v.shape[-1]}, got {count!r}"
            )
        log_k = count.bit_length() - 1
        for stage in range(1, log_k + 1):
            v = self.bitonic_merge_steps(v, stage, 2 if stage < log_n else 1)
        for stage in range(log_k + 1, log_n + 1):
            n = v.shape[-1]
            halves = self.sem.reshape(v, (*v.shape[:-1], n // (2 * count), 2, count))
            larger = self.tl_max(halves, len(v.shape))  # type: ignore[attr-defined]
            v = self.sem.reshape(larger, (*v.shape[:-1], n // 2))
            v = self.bitonic_merge_steps(v, log_k, 2 if stage < log_n else 1)
        return v

    def tl_bitonic_merge(self, x: Any, dim: Any = None, descending: Any = False) -> TensorValue:
        """Triton's bitonic merge along the last dimension: sorts a bitonic sequence; any other
        input gets exactly the network's result, as in Triton."""
        v, log_n = self._sort_input(x, dim, "tl.bitonic_merge")
        return self.bitonic_merge_steps(v, log_n, _order(descending) if log_n else 0)

    def tl_histogram(self, input: Any, num_bins: Any, mask: Any = None) -> TensorValue:
        """int32 counts of the values 0 .. num_bins-1 of a 1-D integer tensor (values outside
        are not counted; with `mask`, only where it holds)."""
        x = self.value(input)  # type: ignore[attr-defined]
        bins = const(num_bins, "num_bins")
        if len(x.shape) != 1 or not isinstance(x.dtype, IntegerType) or x.dtype == i1:
            raise UserError(f"tl.histogram needs a 1-D integer tensor, got {x.type}")
        if not isinstance(bins, int) or not is_power_of_two(bins):
            raise UserError(f"tl.histogram's num_bins must be a power of two, got {bins!r}")
        wide = (x.shape[0], bins)
        self._check_selection(wide, "tl.histogram")
        values = self.sem.broadcast_to(self.sem.expand_dims(self.sem.cast(x, i64), 1), wide)
        hits = self.sem.binary("==", values, self.sem.cast(self.iota(bins, 1, wide), i64))
        if mask is not None:
            m = self.sem.broadcast_to(self.sem.cast(self.value(mask), i1), x.shape)  # type: ignore[attr-defined]
            hits = self.sem.binary(
                "&", hits, self.sem.broadcast_to(self.sem.expand_dims(m, 1), wide)
            )
        return self.tl_sum(self.sem.cast(hits, i32), 0)  # type: ignore[attr-defined]


def _order(descending: Any) -> int:
    value = const(descending, "descending")
    if value not in (0, 1):  # False/True too
        raise UserError(f"descending must be True or False, got {value!r}")
    return int(value)


def _count(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count
