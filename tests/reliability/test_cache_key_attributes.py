"""The cache key covers values the frontend folds in through attribute chains of globals (issue
14): a class attribute (`Cfg.S`, inherited or not) or an instance's attribute, changed in this
process or in a new one, recompiles."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

MODULE = """
import os

import numpy as np

import tilec
import tilec.language as tl


class Base:
    S = float(os.environ.get("SCALE", "2.0"))


class Cfg(Base):
    OFFSET = 1.0


class Settings:
    def __init__(self):
        self.block = 16


settings = Settings()


@tilec.jit
def kernel(x_ptr, out_ptr):
    offs = tl.arange(0, settings.block)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * Cfg.S + Cfg.OFFSET)


if __name__ == "__main__":
    x = np.arange(16, dtype=np.float32)
    out = np.empty_like(x)
    kernel[(1,)](x, out, backend="interp")
    print(out[3])
"""


@pytest.fixture
def module(tmp_path):
    path = tmp_path / "cfg_kernel.py"
    path.write_text(textwrap.dedent(MODULE))
    spec = importlib.util.spec_from_file_location("cfg_kernel", path)
    loaded = importlib.util.module_from_spec(spec)
    sys.modules["cfg_kernel"] = loaded
    spec.loader.exec_module(loaded)
    yield loaded
    sys.modules.pop("cfg_kernel", None)


def run(module) -> np.ndarray:
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    module.kernel[(1,)](x, out, backend="interp")
    return out


def test_class_attribute_change_recompiles(module):
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(run(module), x * 2 + 1)
    key = module.kernel.cache_key
    module.Cfg.OFFSET = 5.0
    assert module.kernel.cache_key != key
    np.testing.assert_array_equal(run(module), x * 2 + 5)


def test_inherited_class_attribute_change_recompiles(module):
    x = np.arange(16, dtype=np.float32)
    run(module)
    module.Base.S = 3.0
    np.testing.assert_array_equal(run(module), x * 3 + 1)
    module.Cfg.S = 4.0  # now shadowing the base's
    np.testing.assert_array_equal(run(module), x * 4 + 1)


def test_instance_attribute_change_recompiles(module):
    assert run(module)[8] == 17
    module.settings.block = 8
    out = run(module)
    assert out[8] == 0 and out[7] == 15  # eight elements only


def test_unrelated_attribute_keeps_the_key(module):
    key = module.kernel.cache_key
    module.Cfg.OTHER = 1
    assert module.kernel.cache_key == key


def test_class_attribute_changed_in_a_new_process_recompiles(module, tmp_path):
    """The disk cache of a first process must not serve a second whose `Cfg.S` differs."""
    script = module.__file__
    env = dict(os.environ, TILEC_CACHE_DIR=str(tmp_path / "shared"))
    outputs = []
    for scale in ("2.0", "7.0"):
        result = subprocess.run(
            [sys.executable, script],
            env={**env, "SCALE": scale},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        outputs.append(float(result.stdout.split()[-1]))
    assert outputs == [3 * 2.0 + 1, 3 * 7.0 + 1]
