"""Triton's random numbers: the Philox 4x32 (4x64) counter-based generator with 10 rounds by
default, and the conversions to uniform and normal floats built on it.

The integer streams are bit-identical to Triton's for the same seed, offsets and `n_rounds`
(`tl.randint`, `tl.randint4x`, `tl.philox`, `tl.philox_impl`); the floats use the same formulas
(`uint_to_uniform_float`, Box-Muller in `pair_uniform_to_normal`), so they agree up to the
rounding of the backend's `log`, `sqrt`, `sin` and `cos`.

Constants (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11, as in Triton):
the Weyl key increments are the golden ratio and sqrt(3) - 1 in fixed point, the round
multipliers are the paper's.
"""

from __future__ import annotations

from typing import Any

from tilec.dialects import math
from tilec.frontend.compat_builtins import constant_arg
from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.ir.types import FloatType, IntegerType, TensorType, i32, i64

u32, u64 = IntegerType(32, unsigned=True), IntegerType(64, unsigned=True)

PHILOX_CONSTANTS: dict[int, tuple[int, int, int, int]] = {
    32: (0x9E3779B9, 0xBB67AE85, 0xD2511F53, 0xCD9E8D57),
    64: (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B, 0xD2E7470EE14C6C93, 0xCA5A826395121157),
}
"""Per counter width: (key increment A, key increment B, round multiplier A, round multiplier B)."""

N_ROUNDS_DEFAULT = 10

UNIFORM_SCALE: dict[int, float] = {32: 4.6566127342e-10, 64: 1.0842020432385337e-19}
"""The largest scale with `(2**(N-1) - 1) * scale < 1.0` after float32 rounding, per width."""


def _rounds(n_rounds: Any) -> int:
    value = constant_arg(n_rounds, "n_rounds")
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UserError(f"n_rounds must be a non-negative constant int, got {value!r}")
    return value


class RandomMixin:
    """Mixed into `Builtins` (which provides `sem`, `value`, `unary_math`, `tl_maximum` and
    `tl_umulhi`)."""

    sem: Any

    def _integer(self, x: Any, what: str) -> TensorValue:
        v = self.value(x)  # type: ignore[attr-defined]
        if not isinstance(v.dtype, IntegerType) or v.dtype.width == 1:
            raise UserError(f"{what} must be an integer, got {v.type}")
        return v

    def tl_philox_impl(
        self, c0: Any, c1: Any, c2: Any, c3: Any, k0: Any, k1: Any, n_rounds: Any = N_ROUNDS_DEFAULT
    ) -> tuple[TensorValue, ...]:
        """`n_rounds` Philox rounds on the counter (c0, c1, c2, c3) with key (k0, k1), all
        uint32 or all uint64."""
        counter = [self._integer(c, "tl.philox_impl's counter") for c in (c0, c1, c2, c3)]
        kind = counter[0].dtype
        if kind not in (u32, u64) or any(c.dtype != kind for c in counter):
            raise UserError(
                f"tl.philox_impl needs uint32 or uint64 counters of one dtype, got "
                f"{', '.join(str(c.dtype) for c in counter)}"
            )
        key = [self.sem.cast(self._integer(k, "tl.philox_impl's key"), kind) for k in (k0, k1)]
        key_a, key_b, round_a, round_b = (
            self.sem.constant(c, kind)
            for c in PHILOX_CONSTANTS[kind.width]  # type: ignore[attr-defined]
        )
        a0, a1, a2, a3 = counter
        k_0, k_1 = key
        binary = self.sem.binary
        for _ in range(_rounds(n_rounds)):
            hi_b = self.tl_umulhi(round_b, a2)  # type: ignore[attr-defined]
            hi_a = self.tl_umulhi(round_a, a0)  # type: ignore[attr-defined]
            a0, a1, a2, a3 = (
                binary("^", binary("^", hi_b, a1), k_0),
                binary("*", round_b, a2),
                binary("^", binary("^", hi_a, a3), k_1),
                binary("*", round_a, a0),
            )
            k_0, k_1 = binary("+", k_0, key_a), binary("+", k_1, key_b)
        return a0, a1, a2, a3

    def tl_philox(
        self, seed: Any, c0: Any, c1: Any, c2: Any, c3: Any, n_rounds: Any = N_ROUNDS_DEFAULT
    ) -> tuple[TensorValue, ...]:
        """Philox of the counter (c0..c3) keyed by the 64-bit `seed`: 32-bit counters split the
        seed into (low, high) words, 64-bit counters take it whole with a zero high key."""
        key = self.sem.cast(self._integer(seed, "tl.philox's seed"), u64)
        counter = [self._integer(c, "tl.philox's counter") for c in (c0, c1, c2, c3)]
        width = counter[0].dtype.width  # type: ignore[attr-defined]
        if width not in (32, 64):
            raise UserError(f"tl.philox takes 32- or 64-bit counters, got {counter[0].dtype}")
        kind = u32 if width == 32 else u64
        if width == 32:
            low = self.sem.cast(self.sem.binary("&", key, 0xFFFFFFFF), u32)
            high = self.sem.cast(
                self.sem.binary("&", self.sem.binary(">>", key, 32), 0xFFFFFFFF), u32
            )
        else:
            low, high = key, self.sem.constant(0, TensorType((1,), u64))
        counter = [self.sem.bitcast(c, kind) for c in counter]
        return self.tl_philox_impl(*counter, low, high, n_rounds)

    def tl_randint4x(self, seed: Any, offset: Any, n_rounds: Any = N_ROUNDS_DEFAULT) -> tuple:
        """Four blocks of random uint32 for `offset` (Triton's streams: counter (offset low
        word, offset high word, 0, 0))."""
        offsets = self._integer(offset, "tl.randint4x's offset")
        low = self.sem.cast(offsets, u32)
        zero = self.sem.binary("*", low, 0)
        high = zero
        if offsets.dtype.width > 32:  # type: ignore[attr-defined]
            high = self.sem.cast(self.sem.binary(">>", offsets, 32), u32)
        return self.tl_philox(seed, low, high, zero, zero, n_rounds)

    def tl_randint(self, seed: Any, offset: Any, n_rounds: Any = N_ROUNDS_DEFAULT) -> TensorValue:
        """The first of `tl.randint4x`'s four blocks."""
        return self.tl_randint4x(seed, offset, n_rounds)[0]

    def tl_uint_to_uniform_float(self, x: Any) -> TensorValue:
        """A random (u)int32 or (u)int64 to a float32 in [0, 1)."""
        v = self._integer(x, "tl.uint_to_uniform_float's input")
        width = v.dtype.width  # type: ignore[attr-defined]
        if width not in (32, 64):
            raise UserError(f"tl.uint_to_uniform_float takes 32- or 64-bit integers, got {v.dtype}")
        signed = self.sem.bitcast(v, i32 if width == 32 else i64)
        negative = self.sem.binary("<", signed, 0)
        folded = self.tl_where(negative, self.sem.binary("-", self.sem.negate(signed), 1), signed)  # type: ignore[attr-defined]
        return self.sem.binary("*", folded, UNIFORM_SCALE[width])

    def tl_rand(self, seed: Any, offset: Any, n_rounds: Any = N_ROUNDS_DEFAULT) -> TensorValue:
        """A block of float32 uniform in [0, 1)."""
        return self.tl_uint_to_uniform_float(self.tl_randint(seed, offset, n_rounds))

    def tl_rand4x(self, seed: Any, offsets: Any, n_rounds: Any = N_ROUNDS_DEFAULT) -> tuple:
        """Four blocks of float32 uniform in [0, 1)."""
        return tuple(
            self.tl_uint_to_uniform_float(i) for i in self.tl_randint4x(seed, offsets, n_rounds)
        )

    def tl_pair_uniform_to_normal(self, u1: Any, u2: Any) -> tuple[TensorValue, TensorValue]:
        """Box-Muller: two uniform blocks to two standard normal blocks."""
        first = self.tl_maximum(1.0e-7, u1)  # type: ignore[attr-defined]
        second = self.value(u2)  # type: ignore[attr-defined]
        if not isinstance(first.dtype, FloatType) or not isinstance(second.dtype, FloatType):
            raise UserError("tl.pair_uniform_to_normal takes float blocks")
        theta = self.sem.binary("*", 6.283185307179586, second)
        log = self.unary_math(math.LogOp, first)  # type: ignore[attr-defined]
        radius = self.unary_math(math.SqrtOp, self.sem.binary("*", -2.0, log))  # type: ignore[attr-defined]
        cos = self.unary_math(math.CosOp, theta)  # type: ignore[attr-defined]
        sin = self.unary_math(math.SinOp, theta)  # type: ignore[attr-defined]
        return self.sem.binary("*", radius, cos), self.sem.binary("*", radius, sin)

    def tl_randn(self, seed: Any, offset: Any, n_rounds: Any = N_ROUNDS_DEFAULT) -> TensorValue:
        """A block of float32 from the standard normal distribution."""
        i1, i2, _, _ = self.tl_randint4x(seed, offset, n_rounds)
        u1, u2 = self.tl_uint_to_uniform_float(i1), self.tl_uint_to_uniform_float(i2)
        return self.tl_pair_uniform_to_normal(u1, u2)[0]

    def tl_randn4x(self, seed: Any, offset: Any, n_rounds: Any = N_ROUNDS_DEFAULT) -> tuple:
        """Four blocks of float32 from the standard normal distribution."""
        u1, u2, u3, u4 = self.tl_rand4x(seed, offset, n_rounds)
        return (*self.tl_pair_uniform_to_normal(u1, u2), *self.tl_pair_uniform_to_normal(u3, u4))
