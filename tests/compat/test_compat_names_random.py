"""tl.randint/randint4x/rand/randn and Philox (issue 11): bit-identical to Triton's streams.

The reference is a NumPy reimplementation of Philox-4x32 as Triton's `random.py` runs it (counter
(offset low, offset high, 0, 0), key (seed low, seed high), the key bumped after every round). It
is itself checked against the published Random123 known-answer vectors for philox4x32-10 and
against values derived by hand for one and two rounds.
"""

import numpy as np
import pytest
from compat_helpers import compile_error
from compat_names_helpers import run

import tilec
import tilec.language as tl

MASK32 = np.uint64(0xFFFFFFFF)
ROUND_A, ROUND_B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
KEY_A, KEY_B = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)


def philox_reference(counter, key, rounds=10):
    """Philox-4x32 on uint32 arrays (computed in uint64 so products are exact)."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) for c in counter)
    k0, k1 = (np.asarray(k, np.uint64) for k in key)
    for _ in range(rounds):
        product_b, product_a = ROUND_B * c2, ROUND_A * c0
        c0, c1, c2, c3 = (
            ((product_b >> np.uint64(32)) ^ c1 ^ k0) & MASK32,
            product_b & MASK32,
            ((product_a >> np.uint64(32)) ^ c3 ^ k1) & MASK32,
            product_a & MASK32,
        )
        k0, k1 = (k0 + KEY_A) & MASK32, (k1 + KEY_B) & MASK32
    return [c.astype(np.uint32) for c in (c0, c1, c2, c3)]


def randint4x_reference(seed, offsets, rounds=10):
    offsets = np.asarray(offsets).astype(np.int64)
    seed = np.int64(seed).astype(np.uint64)
    low = (offsets & 0xFFFFFFFF).astype(np.uint64)
    high = ((offsets >> 32) & 0xFFFFFFFF).astype(np.uint64)
    zero = np.zeros_like(low)
    key = (seed & MASK32, (seed >> np.uint64(32)) & MASK32)
    return philox_reference((low, high, zero, zero), key, rounds)


def uniform_reference(x):
    signed = x.view(np.int32).astype(np.int64)
    folded = np.where(signed < 0, -signed - 1, signed).astype(np.float32)
    return folded * np.float32(4.6566127342e-10)


@pytest.mark.parametrize(
    ("counter", "key", "expected"),
    [  # Random123's kat_vectors for philox4x32 with 10 rounds
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
            (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ],
)
def test_the_reference_matches_random123(counter, key, expected):
    assert [int(c) for c in philox_reference(counter, key)] == list(expected)


def test_the_reference_matches_rounds_derived_by_hand():
    # seed 0, offset 1: counter (1, 0, 0, 0), key (0, 0).
    # Round 1: c0 = hi(B*c2) ^ c1 ^ k0 = 0; c2 = hi(A*1) ^ c3 ^ k1 = 0; c1 = B*c2 = 0; c3 = A*1.
    assert [int(c) for c in randint4x_reference(0, 1, rounds=1)] == [0, 0, 0, 0xD2511F53]
    # Round 2, key (KEY_A, KEY_B): c0 = 0 ^ 0 ^ KEY_A; c2 = hi(A*0) ^ 0xD2511F53 ^ KEY_B.
    assert [int(c) for c in randint4x_reference(0, 1, rounds=2)] == [
        0x9E3779B9, 0, 0xD2511F53 ^ 0xBB67AE85, 0,
    ]  # fmt: skip


@tilec.jit
def random_kernel(
    seed, out_ptr, OP: tl.constexpr, ROUNDS: tl.constexpr, WIDE: tl.constexpr,
    BLOCK: tl.constexpr,
):  # fmt: skip
    offs = tl.arange(0, BLOCK) + tl.program_id(0) * BLOCK
    if WIDE:
        offs = offs.to(tl.int64) + 0x100000000 * (offs % 3).to(tl.int64)  # high words too
    if OP == "randint4x":
        a, b, c, d = tl.randint4x(seed, offs, ROUNDS)
        tl.store(out_ptr + tl.arange(0, BLOCK) * 4 + 0, a.to(tl.uint32, bitcast=True))
        tl.store(out_ptr + tl.arange(0, BLOCK) * 4 + 1, b.to(tl.uint32, bitcast=True))
        tl.store(out_ptr + tl.arange(0, BLOCK) * 4 + 2, c.to(tl.uint32, bitcast=True))
        tl.store(out_ptr + tl.arange(0, BLOCK) * 4 + 3, d.to(tl.uint32, bitcast=True))
    elif OP == "randint":
        tl.store(out_ptr + tl.arange(0, BLOCK), tl.randint(seed, offs, ROUNDS))
    elif OP == "philox":
        zero = offs.to(tl.uint32) * 0
        a, b, c, d = tl.philox(seed, offs.to(tl.uint32), zero, zero, zero, ROUNDS)
        tl.store(out_ptr + tl.arange(0, BLOCK), d)


@pytest.mark.parametrize("seed", [0, 1, 12345, -7, 2**40 + 3])
@pytest.mark.parametrize("rounds", [10, 1, 7])
@pytest.mark.parametrize("wide", [False, True])
def test_randint4x_is_bit_identical_to_philox(seed, rounds, wide):
    block = 64
    out = np.zeros(block * 4, np.uint32)
    sig = {"seed": "i64" if abs(seed) >= 2**31 else "i32", "out_ptr": "*u32"}
    run(random_kernel, sig, [seed, out], OP="randint4x", ROUNDS=rounds, WIDE=wide, BLOCK=block)
    offsets = np.arange(block, dtype=np.int64)
    if wide:
        offsets = offsets + 0x100000000 * (offsets % 3)
    want = np.stack(randint4x_reference(seed, offsets, rounds), axis=1).ravel()
    np.testing.assert_array_equal(out, want)


def test_randint_and_philox_are_the_first_and_last_words():
    out = np.zeros(32, np.uint32)
    sig = {"seed": "i32", "out_ptr": "*u32"}
    run(random_kernel, sig, [42, out], OP="randint", ROUNDS=10, WIDE=False, BLOCK=32)
    np.testing.assert_array_equal(out, randint4x_reference(42, np.arange(32))[0])
    run(random_kernel, sig, [42, out], OP="philox", ROUNDS=10, WIDE=False, BLOCK=32)
    np.testing.assert_array_equal(out, randint4x_reference(42, np.arange(32))[3])


def test_the_first_words_for_seed_0_are_random123s():
    out = np.zeros(4, np.uint32)
    sig = {"seed": "i32", "out_ptr": "*u32"}
    run(random_kernel, sig, [0, out], OP="randint4x", ROUNDS=10, WIDE=False, BLOCK=1)
    assert [int(v) for v in out] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


@tilec.jit
def float_kernel(seed, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if OP == "rand":
        tl.store(out_ptr + offs, tl.rand(seed, offs))
    elif OP == "randn":
        tl.store(out_ptr + offs, tl.randn(seed, offs))
    elif OP == "rand4x":
        a, b, c, d = tl.rand4x(seed, offs)
        tl.store(out_ptr + offs, a + b * 10 + c * 100 + d * 1000)
    elif OP == "randn4x":
        a, b, c, d = tl.randn4x(seed, offs)
        tl.store(out_ptr + offs, d)
    elif OP == "uniform64":
        wide = tl.randint(seed, offs).to(tl.uint64) << 32
        tl.store(out_ptr + offs, tl.uint_to_uniform_float(wide))


def _box_muller(u1, u2):
    u1 = np.maximum(np.float32(1.0e-7), u1)
    theta = np.float32(6.283185307179586) * u2
    radius = np.sqrt(np.float32(-2.0) * np.log(u1))
    return radius * np.cos(theta), radius * np.sin(theta)


def test_rand_and_randn_use_triton_formulas():
    block, seed = 256, 2024
    words = randint4x_reference(seed, np.arange(block))
    uniform = [uniform_reference(w) for w in words]
    expected = {
        "rand": uniform[0],
        "randn": _box_muller(uniform[0], uniform[1])[0],
        "rand4x": uniform[0] + uniform[1] * 10 + uniform[2] * 100 + uniform[3] * 1000,
        "randn4x": _box_muller(uniform[2], uniform[3])[1],
    }
    for op, want in expected.items():
        out = np.zeros(block, np.float32)
        run(float_kernel, {"seed": "i32", "out_ptr": "*fp32"}, [seed, out], OP=op,
                   BLOCK=block)  # fmt: skip
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5, err_msg=op)  # GPU sin/cos
    assert expected["rand"].min() >= 0.0 and expected["rand"].max() < 1.0
    assert abs(float(expected["randn"].mean())) < 0.2


def test_uniform_float_of_64_bit_words():
    out = np.zeros(64, np.float32)
    run(float_kernel, {"seed": "i32", "out_ptr": "*fp32"}, [5, out], OP="uniform64",
               BLOCK=64)  # fmt: skip
    wide = randint4x_reference(5, np.arange(64))[0].astype(np.uint64) << np.uint64(32)
    signed = wide.view(np.int64)
    folded = np.where(signed < 0, -signed - 1, signed).astype(np.float32)
    np.testing.assert_array_equal(out, folded * np.float32(1.0842020432385337e-19))


@tilec.jit
def bad_random_kernel(seed, OP: tl.constexpr):
    offs = tl.arange(0, 8)
    if OP == "float_offset":
        tl.randint(seed, offs.to(tl.float32))
    elif OP == "rounds":
        tl.randint(seed, offs, -1)
    elif OP == "impl_dtype":
        tl.philox_impl(offs, offs, offs, offs, seed, seed)


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ("float_offset", "offset must be an integer"),
        ("rounds", "n_rounds must be a non-negative constant int"),
        ("impl_dtype", "uint32 or uint64 counters"),
    ],
)
def test_random_names_reject_bad_arguments(op, message):
    error = compile_error(bad_random_kernel, {"seed": "i32"}, OP=op)
    assert message in error.message, error.message
