"""Modules of Triton's under the alias, as Triton's language tests use them; each check runs in
a subprocess, so that the alias never reaches the other tests.

- `triton.knobs.base_knobs`: every knob group is one, with Triton's `knob_descriptors` (the
  environment variable behind each knob), `knobs`, `copy()` and `reset()`, which Triton's test
  fixture `fresh_knobs` uses to give a test fresh groups and put the old ones back.
- `triton.compiler.errors` and `triton.language.random` after `import triton`.
"""

import os
import subprocess
import sys
import textwrap

PROGRAM = """
import os
import tilec.as_triton  # noqa: F401
from triton import knobs

groups = {n: g for n, g in vars(knobs).items() if isinstance(g, knobs.base_knobs)}
assert {"cache", "compilation", "runtime", "language", "autotuning", "nvidia"} <= set(groups)
assert knobs.propagate_env is True
assert knobs.language.knob_descriptors["fp32_default"].key == "TILEC_F32_DEFAULT"
assert knobs.runtime.knob_descriptors["interpret"].key == "TRITON_INTERPRET"
assert "debug" in knobs.runtime.knobs and knobs.runtime.knobs["debug"] is False

knobs.cache.dump_dir = "somewhere"
fresh = knobs.cache.copy().reset()
assert type(fresh) is type(knobs.cache) and fresh is not knobs.cache
assert fresh.dump_dir is None and knobs.cache.dump_dir == "somewhere"
copied = knobs.cache.copy()
assert copied.dump_dir == "somewhere"

# what Triton's fresh_knobs does: fresh groups in the module, the old ones put back after
saved = dict(groups)
for name, group in groups.items():
    setattr(knobs, name, group.copy().reset())
    for knob in group.knob_descriptors.values():
        os.environ.pop(knob.key, None)
assert knobs.cache.dump_dir is None and knobs.language.fp32_default == "tf32"
for name, group in saved.items():
    setattr(knobs, name, group)
assert knobs.cache.dump_dir == "somewhere"
print("ok")
"""


MODULES = """
import tilec
import tilec.as_triton  # noqa: F401
import triton
import triton.language as tl

assert triton.compiler.errors.CompilationError is tilec.CompilationError
assert tl.random.rand is tl.rand
import triton.language.random
assert triton.language.random is tl.random
print("ok")
"""


def run_program(tmp_path, program: str) -> None:
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(program))
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "cache"), "TILEC_F32_DEFAULT": "ieee"}
    for name in ("TRITON_INTERPRET", "TILEC_AS_TRITON", "TILEC_BACKEND"):
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "ok"


def test_knob_groups_are_tritons_base_knobs(tmp_path):
    run_program(tmp_path, PROGRAM)


def test_modules_triton_imports_with_its_packages(tmp_path):
    run_program(tmp_path, MODULES)
