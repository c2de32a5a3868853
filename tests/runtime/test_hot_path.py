"""The launch fast path (`tilec.runtime.hot_path`) on the interpreter: launches like earlier
ones skip the general path and still compute the right thing for new arrays, and a change of
dtype, alignment or an int's specialization compiles anew."""

import numpy as np
import pytest
from frontend_kernels import add_kernel

import tilec
from tilec.runtime import cache, launcher


@pytest.fixture
def general(monkeypatch):
    """Counts the launches that took the general path."""
    calls = []
    original = launcher.Launcher._launch

    def counted(self, args, meta):
        calls.append(args)
        return original(self, args, meta)

    monkeypatch.setattr(launcher.Launcher, "_launch", counted)
    return calls


def compiles() -> int:
    return sum(c.name == "add_kernel" for c in cache.memory.values())


def check_add(launch, rng, n, dtype=np.float32, offset=0, **meta):
    x = rng.standard_normal(n + offset).astype(dtype)[offset:]
    y = rng.standard_normal(n + offset).astype(dtype)[offset:]
    out = np.full_like(x, np.nan)
    launch(x, y, out, n, BLOCK_SIZE=64, **meta)
    np.testing.assert_array_equal(out, x + y)


def test_a_launcher_made_before_the_first_launch_takes_the_fast_path(rng, general):
    launch = add_kernel[lambda meta: (tilec.cdiv(meta["n_elements"], meta["BLOCK_SIZE"]),)]
    for _ in range(3):
        check_add(launch, rng, 160)
    assert len(general) == 1 and compiles() == 1


@pytest.mark.parametrize(
    "change",
    [
        {"dtype": np.float64},
        {"offset": 1},  # 4 bytes off 16-byte alignment
        {"n": 100},  # no multiple of 16
        {"n": 1},
        {"num_warps": 2},
    ],
)
def test_a_changed_specialization_compiles_anew_and_is_right(rng, general, change):
    n = change.pop("n", 160)
    launch = add_kernel[(3,)]
    check_add(launch, rng, 160)
    check_add(launch, rng, 160)
    check_add(launch, rng, n, **change)
    assert len(general) == 2 and compiles() == 2
    check_add(launch, rng, n, **change)
    check_add(launch, rng, 160)
    assert len(general) == 2


def test_interleaved_specializations_each_keep_a_fast_launch(rng, general):
    launch = add_kernel[(3,)]
    for _ in range(3):
        check_add(launch, rng, 160)
        check_add(launch, rng, 100)
        check_add(launch, rng, 160, dtype=np.float64)
    assert len(general) == 3


def test_a_bad_argument_after_fast_launches_is_named(rng, general):
    launch = add_kernel[(3,)]
    check_add(launch, rng, 160)
    x = np.zeros(160, np.float32)
    with pytest.raises(TypeError, match="argument 'n_elements' of add_kernel"):
        launch(x, x, x, "160", BLOCK_SIZE=64)
    with pytest.raises(TypeError, match="add_kernel takes 5 arguments"):
        launch(x, x, x, 160, 64, 1)


def test_the_newest_call_shapes_keep_their_fast_launch(rng, general):
    launch = add_kernel[(3,)]
    # 160, 100 and 1 specialize differently (a multiple of 16, neither, == 1): 6 specializations
    shapes = [(n, dtype) for n in (160, 100, 1) for dtype in (np.float32, np.float64)]
    for n, dtype in shapes:
        check_add(launch, rng, n, dtype)
    assert len(general) == 6
    for n, dtype in shapes[-4:]:
        check_add(launch, rng, n, dtype)
    assert len(general) == 6
    check_add(launch, rng, *shapes[0])  # evicted: the general path, then fast again
    check_add(launch, rng, *shapes[0])
    assert len(general) == 7
    assert len(add_kernel._launch_info.fast) == launcher.MAX_FAST
