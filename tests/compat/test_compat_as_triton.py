"""`tilec.as_triton`: unchanged Triton programs (`import triton`) run on tilec. Every check runs
in a subprocess of its own, so that the alias never reaches the other tests."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tilec
import tilec.language as tl
from tilec.runtime import launcher

PROGRAMS = Path(__file__).parent / "triton_programs"


def run_python(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "cache"), **env}
    for name in ("TRITON_INTERPRET", "TILEC_AS_TRITON", "TILEC_BACKEND"):
        if name not in env:
            environment.pop(name, None)
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=environment, cwd=tmp_path,
        timeout=600,
    )  # fmt: skip


def run_code(tmp_path: Path, code: str, **env: str) -> str:
    """Run `code` from a file (tilec reads a kernel's source from its file)."""
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(code))
    result = run_python(tmp_path, str(script), **env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_triton_modules_are_tilecs(tmp_path):
    out = run_code(
        tmp_path,
        """
        import sys
        import tilec.as_triton
        import triton, triton.language as tl
        import tilec, tilec.language, tilec.runtime.driver, tilec.runtime.compiler, tilec.testing
        from triton.language.extra import libdevice
        from triton.language.extra.cuda import libdevice as cuda_libdevice
        import tilec.language.extra.libdevice as tilec_libdevice
        assert sys.modules["triton.language"] is tilec.language is tl
        assert libdevice is tilec_libdevice and cuda_libdevice.fma is tilec_libdevice.fma
        assert triton.language.core.view is tl.view
        from triton.runtime.driver import driver
        assert triton.runtime.driver.active is driver.active is tilec.runtime.driver.active
        from triton.compiler import CompiledKernel, ASTSource, compile
        assert CompiledKernel is tilec.runtime.compiler.CompiledKernel
        from triton.runtime.jit import JITFunction, jit
        assert JITFunction is sys.modules["tilec.runtime.jit"].JITFunction and jit is tilec.jit
        assert triton.testing is tilec.testing and triton.testing.do_bench is tilec.testing.do_bench
        assert triton.TritonError is tilec.TilecError
        assert triton.CompilationError is tilec.CompilationError
        from triton.runtime.errors import InterpreterError, OutOfResources
        assert OutOfResources is tilec.DeviceLimitError and issubclass(InterpreterError, tilec.TilecError)
        from triton.runtime.cache import FileCacheManager, get_cache_manager
        from triton.tools.tensor_descriptor import TensorDescriptor
        import triton.backends
        assert "interp" in triton.backends.backends
        from triton.runtime._allocation import NullAllocator
        triton.set_allocator(NullAllocator())
        assert isinstance(triton.jit(tilec.testing.do_bench), triton.runtime.KernelInterface)
        try:
            import triton.profiler
        except ImportError as error:
            print("refused:", error)
        print("version", triton.__version__)
    """,
    )
    assert "refused: tilec.as_triton: Triton's module 'triton.profiler' has no tilec" in out
    assert "version 3.6.0" in out


def test_a_triton_program_runs_unchanged(tmp_path):
    pytest.importorskip("torch")
    result = run_python(tmp_path, "-m", "tilec.as_triton", str(PROGRAMS / "vector_ops.py"),
                        TRITON_INTERPRET="1")  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("\n")[1:4] == ["add ok", "scale ok", "reinterpret ok"]
    assert result.stdout.startswith("interpret True device cpu")


def test_driver_answers_on_interp(tmp_path):
    pytest.importorskip("torch")
    out = run_code(
        tmp_path,
        """
        import tilec.as_triton, triton, torch
        active = triton.runtime.driver.active
        print(active.get_current_target(), active.get_current_device(), active.get_current_stream())
        assert active.get_device_interface() is torch.cpu
        assert active.get_active_torch_device() == torch.device("cpu")
        assert active.get_benchmarker() is triton.testing.do_bench
        cache = active.get_empty_cache_for_benchmark()
        cache.fill_(1); active.clear_cache(cache); assert int(cache.sum()) == 0
        try:
            active.utils.get_device_properties()
        except tilec.BackendUnavailableError as error:
            print("no properties:", error)
    """.replace("import tilec.as_triton,", "import tilec, tilec.as_triton,"),
        TILEC_BACKEND="interp",
    )
    assert out.startswith("GPUTarget(backend='interp', arch='interp', warp_size=1) 0 0")
    assert "no properties: backend 'interp' runs on the host" in out


def test_triton_interpret_selects_interp_and_the_knob_turns_it_off(tmp_path):
    out = run_code(tmp_path, """
        import tilec.as_triton
        from triton import knobs
        from tilec.runtime import compiler
        print(knobs.runtime.interpret, compiler._chosen)
        knobs.runtime.interpret = False
        print(knobs.runtime.interpret, compiler._chosen)
        with knobs.runtime.scope():
            knobs.runtime.interpret = True
            print(knobs.runtime.interpret, compiler._chosen)
        print(knobs.runtime.interpret, compiler._chosen)
    """, TRITON_INTERPRET="1")  # fmt: skip
    assert out.split("\n")[:4] == ["True interp", "False None", "True interp", "False None"]


def test_knobs_tied_refused_and_unknown(tmp_path):
    out = run_code(
        tmp_path,
        f"""
        import os
        import tilec, tilec.as_triton
        from triton import knobs
        from tilec import settings
        assert knobs.cache.dir == str(settings.cache_dir())
        with knobs.cache.scope():
            knobs.cache.dir = {str(tmp_path / "other")!r}
            assert settings.cache_dir() == __import__("pathlib").Path({str(tmp_path / "other")!r})
        assert knobs.cache.dir == {str(tmp_path / "cache")!r}
        knobs.language.fp32_default = "ieee"
        assert settings.f32_default() == "ieee"
        knobs.compilation.always_compile = False  # Triton's default: accepted
        for attempt in ("knobs.compilation.dump_ir = True", "knobs.runtime.launch_enter_hook = print"):
            try:
                exec(attempt)
            except tilec.OptionValueError as error:
                print("refused:", error)
        for attempt in ("knobs.nvidia.libdevice_path", "knobs.runtime.no_such_knob"):
            try:
                eval(attempt)
            except AttributeError as error:
                print("absent:", error)
    """,
    )
    assert "refused: triton.knobs.compilation.dump_ir = True: tilec does not honour it" in out
    assert "refused: triton.knobs.runtime.launch_enter_hook = <built-in function print>" in out
    assert (
        "absent: triton.knobs.nvidia.libdevice_path: tilec's nvidia backend reads TILEC_PTXAS"
        in out
    )
    assert "absent: triton.knobs.runtime.no_such_knob: tilec has no such knob (it has" in out


def test_file_cache_manager_keeps_files_under_the_cache_dir(tmp_path):
    out = run_code(
        tmp_path,
        """
        import os
        import tilec.as_triton
        from triton.runtime.cache import get_cache_manager
        manager = get_cache_manager("ab" * 32)
        path = manager.put(b"binary", "kernel.bin")
        manager.put("text", "kernel.txt")
        manager.put_group("kernel.json", {"kernel.bin": path})
        assert open(manager.get_file("kernel.txt")).read() == "text"
        assert manager.get_group("kernel.json") == {"kernel.bin": path}
        assert manager.get_file("missing") is None
        print(os.path.relpath(path, os.environ["TILEC_CACHE_DIR"]))
    """,
    )
    assert out.strip().endswith("/kernel.bin") and not out.startswith("..")


def test_triton_compile_of_an_ast_source(tmp_path):
    out = run_code(
        tmp_path,
        """
        import tilec.as_triton
        import triton, triton.language as tl
        from triton.compiler import ASTSource
        from triton.backends.compiler import GPUTarget

        @triton.jit
        def kernel(x_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            tl.store(x_ptr + offsets, offsets, mask=offsets < n)

        source = ASTSource(kernel, {"x_ptr": "*i32", "n": "i32", "BLOCK": "constexpr"},
                           constexprs={"BLOCK": 16}, attrs={(0,): [["tt.divisibility", 16]]})
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32))
        assert isinstance(compiled, triton.compiler.CompiledKernel)
        print(".target sm_90" in compiled.asm["ptx"], compiled.constexprs)
    """,
    )
    assert out.strip() == "True {'BLOCK': 16}"


def test_a_real_triton_imported_first_is_an_error(tmp_path):
    result = run_python(tmp_path, "-c", (
        "import sys, types; sys.modules['triton'] = types.ModuleType('triton'); "
        "import tilec.as_triton"
    ))  # fmt: skip
    assert result.returncode != 0
    assert "a real Triton was imported before the alias" in result.stderr
    assert "torch._dynamo" not in result.stderr
    # torch._dynamo imports a real Triton where one is installed (torch._inductor loads it)
    result = run_python(tmp_path, "-c", (
        "import sys, types; sys.modules['triton'] = types.ModuleType('triton'); "
        "sys.modules['torch._dynamo'] = types.ModuleType('torch._dynamo'); import tilec.as_triton"
    ))  # fmt: skip
    assert "before anything imports triton (torch._dynamo, imported already, imports it" in (
        result.stderr
    )


def test_the_startup_hook_follows_tilec_as_triton(tmp_path):
    real = tmp_path / "site" / "triton"  # stands for an installed Triton
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("__version__ = 'the real one'\n")
    line = startup_line()
    code = line + "import triton; print(triton.__version__)\n"
    path = str(tmp_path / "site")
    on = run_python(tmp_path, "-c", code, TILEC_AS_TRITON="1", PYTHONPATH=path)
    assert on.returncode == 0 and on.stdout.strip() == "3.6.0", on.stderr
    off = run_python(tmp_path, "-c", code, PYTHONPATH=path)
    assert off.returncode == 0 and off.stdout.strip() == "the real one", off.stderr


def startup_line() -> str:
    """The `.pth` line `--install-hook` writes, built in a subprocess (importing
    `tilec.as_triton` here would activate the alias in this process)."""
    result = subprocess.run(
        [sys.executable, "-c", "from tilec.as_triton import startup; "
         "print(startup.pth_line(startup.__file__), end='')"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return result.stdout


@pytest.mark.slow
def test_torch_compile_works_beside_the_alias(tmp_path):
    pytest.importorskip("torch")
    out = run_code(
        tmp_path,
        """
        import logging
        import tilec.as_triton
        import triton, torch
        import torch.utils._triton as probes

        def f(x, y):
            return torch.sin(x) * y + 1

        compiled = torch.compile(f, fullgraph=True)
        x, y = torch.randn(16), torch.randn(16)
        assert torch.allclose(compiled(x, y), f(x, y))
        print(probes.has_triton(), sys.modules["triton"] is triton)
    """.replace("import logging", "import logging, sys"),
        TILEC_LOG="info",
    )
    assert out.strip() == "True True"  # Inductor finds Triton; CPU graphs stay C++ by default


def test_jit_keywords_are_honoured():
    @tilec.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=[0], debug=True)
    def kernel(x_ptr, n, m, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), n + m)

    backend = tilec.get_backend("interp")
    import numpy as np

    x = np.zeros(16, np.int32)
    spec = launcher.bind_launch(kernel, kernel.arg_names, kernel.constexpr_flags, kernel.defaults,
                                (x, 1, 1), {"BLOCK": 16}, backend)  # fmt: skip
    _, signature, _, divisible, _, options, equal_to_1 = spec
    assert equal_to_1 == ("m",) and divisible == () and options.debug is True
    assert signature == {"x_ptr": "*i32", "n": "i32", "m": "i32"}
    kernel[(1,)](x, 3, 4, BLOCK=16)
    assert (x == 7).all()


def test_jit_keywords_refused_and_named():
    with pytest.raises(tilec.DecoratorValueError, match="tilec has no profiler hooks"):
        tilec.jit(launch_metadata=lambda *_: {})  # repr= names the kernel (test_compat_jit_repr)
    with pytest.raises(tilec.DecoratorValueError, match="'k' is not one of its parameters"):

        @tilec.jit(do_not_specialize=["k"])
        def kernel(x_ptr, n):
            pass


def test_dtype_by_triton_name():
    assert tl.dtype("fp16") == tl.float16 and tl.dtype("int1") == tl.int1
    assert tl.str_to_ty("fp32", None) == tl.float32 and tl.str_to_ty("u8") == tl.uint8
    assert tl.str_to_ty("*fp16") == tl.pointer_type(tl.float16)
    with pytest.raises(ValueError, match="not a signature type"):
        tl.str_to_ty("f33")
    assert [tl.dtype(n) for n in tl.dtype.STANDARD_FP_TYPES][1] is not None
    with pytest.raises(ValueError, match="not a type name"):
        tl.dtype("float128")


def test_install_hook_writes_the_startup_line_and_uninstall_removes_it(tmp_path):
    target = tmp_path / "site-packages" / "tilec_as_triton.pth"
    target.parent.mkdir()
    out = run_code(
        tmp_path,
        f"""
        from pathlib import Path
        from tilec.as_triton import __main__ as command, startup
        command._hook_path = lambda: Path({str(target)!r})
        command.main(["--install-hook"])
        assert Path({str(target)!r}).read_text() == startup.pth_line(startup.__file__)
        command.main(["--uninstall-hook"])
        print(Path({str(target)!r}).exists())
    """,
    )
    assert out.strip().endswith("False")


def test_reinterpreted_tensors_of_float_types(tmp_path):
    pytest.importorskip("torch")
    out = run_code(tmp_path, """
        import tilec.as_triton
        import torch, triton, triton.language as tl

        @triton.jit
        def widen(x_ptr, out_ptr, BLOCK: tl.constexpr):
            offsets = tl.arange(0, BLOCK)
            tl.store(out_ptr + offsets, tl.load(x_ptr + offsets).to(tl.float32))

        bits = torch.arange(0, 64, dtype=torch.uint8)  # e5m2 codes of finite positive values
        out = torch.empty(64)
        widen[(1,)](triton.reinterpret(bits, tl.float8e5), out, BLOCK=64)
        assert torch.equal(out, bits.view(torch.float8_e5m2).float())
        halves = torch.linspace(-2, 2, 64).half()
        widen[(1,)](triton.reinterpret(halves.view(torch.int16), tl.float16), out, BLOCK=64)
        assert torch.equal(out, halves.float())
        print("ok")
    """, TILEC_BACKEND="interp")  # fmt: skip
    assert out.strip() == "ok"


def test_knobs_nvidia_ptxas_is_the_nvidia_backends_ptxas(tmp_path):
    """Triton's own test helpers read `knobs.nvidia.ptxas.version` (`supports_tma`); it is the
    ptxas tilec's nvidia backend runs, with its release, or None where there is none."""
    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.8, V12.8.93'\n")
    fake.chmod(0o755)
    out = run_code(tmp_path, """
        import tilec.as_triton
        from triton import knobs
        tool = knobs.nvidia.ptxas
        print(tool.path.endswith("/ptxas"), tool.version)
        try:
            knobs.nvidia.libdevice_path
        except AttributeError as error:
            print(error)
    """, TILEC_PTXAS=str(fake))  # fmt: skip
    assert out.splitlines()[:2] == [
        "True 12.8",
        "triton.knobs.nvidia.libdevice_path: tilec's nvidia backend reads TILEC_PTXAS, no other "
        "nvidia knob",
    ]


def test_deactivate_gives_triton_and_inductor_back(monkeypatch):
    """In a process that turned the alias on and off again (a test module importing a submodule
    of tilec.as_triton), `import triton` is no longer tilec and Inductor looks for Triton."""
    import importlib

    monkeypatch.setenv("TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER", "1")
    import tilec.as_triton as alias
    from tilec.as_triton import inductor

    alias.activate()
    assert importlib.import_module("triton").__name__ == "tilec.as_triton.top"
    assert os.environ["TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER"] == "0"
    assert sys.path[1] == inductor.WORKER_PATH  # Inductor's compile workers import tilec
    alias.deactivate()
    assert not alias.active()
    assert "triton" not in sys.modules and inductor.WORKER_PATH not in sys.path
    assert inductor.dynamo._finder not in sys.meta_path and not inductor.dynamo._added
    assert os.environ["TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER"] == "1"
