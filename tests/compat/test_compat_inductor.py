"""torch.compile under `tilec.as_triton`: Inductor's generated Triton kernels compile and run on
tilec (`tilec.as_triton.inductor`), and the Triton APIs Inductor calls behave as Triton's:
`triton.compile(ASTSource, target=GPUTarget, options)`, `CompiledKernel.run`'s launcher call,
`make_backend`, `triton.backends.backends`, `driver.set_active`, `JITFunction.params`.

On the CPU, Inductor generates Triton for CPU graphs with `cpu_backend = "triton"`, which runs
on the interp backend (Triton's "cpu" target): the same code generation, compile and launch path
as for CUDA tensors (tests/nvidia/test_nvidia_as_triton.py runs that one). The alias runs in
subprocesses, so that it never reaches the other tests."""

from __future__ import annotations

import importlib.util
import pickle
import sys

import numpy as np
import pytest
from test_compat_as_triton import run_code

import tilec
import tilec.language as tl
from tilec.runtime.compiler import CompiledKernel


@tilec.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


def test_compiled_kernel_run_takes_tritons_launcher_call():
    """Triton's `run(gridX, gridY, gridZ, stream, function, packed_metadata, launch_metadata,
    enter_hook, exit_hook, *every argument)`, hooks called around the launch."""
    compiled = tilec.compile(
        scale_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "factor": "fp32"},
        {"BLOCK": 64}, backend="interp",
    )  # fmt: skip
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    calls = []
    metadata = compiled.launch_metadata((2, 1, 1), 0, x, out, 100, 3.0, 64)
    compiled.run(2, 1, 1, 0, compiled.function, compiled.packed_metadata, metadata,
                 lambda m: calls.append(("enter", m["name"])),
                 lambda m: calls.append(("exit", m["name"])), x, out, 100, 3.0, 64)  # fmt: skip
    np.testing.assert_array_equal(out, x * 3)
    assert calls == [("enter", "scale_kernel"), ("exit", "scale_kernel")]
    assert compiled.hash == compiled.key and compiled.packed_metadata == (4, 1, 0)
    with pytest.raises(tilec.ArgumentValueError, match="compiled with BLOCK=64, got 32"):
        compiled.run(1, 1, 1, 0, None, None, None, None, None, x, out, 100, 3.0, 32)
    with pytest.raises(tilec.ArgumentValueError, match="function handle passed is not"):
        compiled.run(1, 1, 1, 0, 1234, None, None, None, None, x, out, 100, 3.0, 64)
    with pytest.raises(tilec.LaunchArgumentError, match="takes the grid, the runtime arguments"):
        compiled.run((1,), [x, out, 100, 3.0], None, "extra")


def test_a_compiled_kernel_survives_inductors_pickling():
    """What Inductor's compile worker sends its parent: the kernel's `__dict__` (Triton's
    kernels keep their state there) with `module`, `function` and `run` cleared, restored into
    `CompiledKernel.__new__`; the kernel's function (`JITFunction`) without its Python function."""
    compiled = tilec.compile(
        scale_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "factor": "fp32"},
        {"BLOCK": 64}, backend="interp",
    )  # fmt: skip
    compiled.keep_for_pickling()
    state = {**compiled.__dict__, "metadata": dict(compiled.metadata), "packed_metadata": None,
             "module": None, "function": None, "run": None}  # fmt: skip
    restored = CompiledKernel.__new__(CompiledKernel)
    restored.__dict__.update(pickle.loads(pickle.dumps(state)))
    assert restored.backend is compiled.backend and restored.key == compiled.key
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    restored.run(2, 1, 1, 0, None, None, None, None, None, x, out, 100, 3.0, 64)
    np.testing.assert_array_equal(out, x * 3)

    kernel = tilec.jit(scale_kernel.fn)
    names = [p.name for p in kernel.params if p.is_constexpr]
    kernel.fn, kernel.__globals__, kernel._hash_lock = None, None, None  # prepare_for_pickle
    again = pickle.loads(pickle.dumps(kernel))
    assert [p.name for p in again.params if p.is_constexpr] == names == ["BLOCK"]
    assert again.repr(again) == "scale_kernel" and again.src == scale_kernel.src


def test_autotuners_have_the_triton_attributes_dynamo_reads():
    """What torch's Dynamo checks and passes (`configs_top_k`, Triton's attribute name, comes
    back as a `prune_configs_by` key: 1.0 is the default, another value is `top_k`)."""
    configs = [tilec.Config({"BLOCK": 32})]
    tuned = tilec.autotune(configs=configs, key=["n"], pre_hook=lambda named: None)(scale_kernel)
    assert (tuned.use_cuda_graph, tuned.user_defined_pre_hook, tuned.user_defined_post_hook) == (
        False, True, False,
    )  # fmt: skip
    assert tuned.configs_top_k == 1.0 and tuned.base_fn is scale_kernel
    prune = {"perf_model": None, "early_config_prune": None, "configs_top_k": 1.0}
    again = tilec.autotune(configs=configs, key=[], prune_configs_by=prune)(scale_kernel)
    assert again.top_k == 1.0
    with pytest.raises(tilec.DecoratorValueError, match="top_k needs a perf_model"):
        tilec.autotune(configs=configs, key=[], prune_configs_by={**prune, "configs_top_k": 2})(
            scale_kernel
        )


def test_jit_function_params_are_tritons():
    params = scale_kernel.params
    assert [(p.num, p.name, p.is_constexpr) for p in params] == [
        (0, "x_ptr", False), (1, "out_ptr", False), (2, "n", False), (3, "factor", False),
        (4, "BLOCK", True),
    ]  # fmt: skip
    assert not params[0].has_default and not params[0].do_not_specialize


def test_the_triton_apis_inductor_calls(tmp_path):
    out = run_code(
        tmp_path,
        """
        import numpy as np
        import tilec.as_triton
        import triton, triton.language as tl
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import ASTSource, make_backend
        import triton.runtime.driver
        from triton.runtime import driver

        @triton.jit
        def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)

        # what Inductor's CachingAutotuner does for a CPU kernel
        from tilec.plugin.manager import load_backends
        installed = load_backends()  # amd's plugin is not installed everywhere
        backends = triton.backends.backends
        print(set(backends) == {*installed, "cpu"}, backends["cpu"] is backends["interp"])
        print(backends["interp"].driver.is_active(),  # a GPU's where the GPU is there
              backends["nvidia"].driver.is_active() == bool(installed["nvidia"].is_available()))
        triton.runtime.driver.set_active(backends["cpu"].driver())  # the module answers too
        signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
        source = ASTSource(add_one, signature, {"BLOCK": 32}, {(0,): [["tt.divisibility", 16]]})
        options = {"num_warps": 4, "num_stages": 1, "debug": True, "sanitize_overflow": False}
        compiled = triton.compile(source, target=GPUTarget("cpu", "", 1), options=options)
        print(compiled.backend.name, compiled.src is source, compiled.num_warps)
        x = np.arange(50, dtype=np.float32)
        out = np.zeros_like(x)
        compiled._init_handles()
        compiled.run(2, 1, 1, 0, compiled.function, compiled.packed_metadata, None, None, None,
                     x, out, 50, 32)
        print(bool((out == x + 1).all()))
        for bad in ({"sanitize_overflow": True}, {"no_such_option": 1}):
            try:
                triton.compile(source, target=GPUTarget("cpu", "", 1), options=bad)
            except (TypeError, ValueError) as error:
                print(type(error).__name__, error)
        backend = make_backend(GPUTarget("cpu", "", 1))
        parsed = backend.parse_options({})
        print(backend.name, parsed.num_warps, parsed.debug, isinstance(backend.hash(), str))
        """,
        TILEC_BACKEND="interp",
    )
    lines = out.splitlines()
    assert lines[:4] == ["True True", "False True", "interp True 4", "True"]
    assert lines[4].startswith(
        "OptionTypeError add_one: launch option sanitize_overflow=True is not supported by "
        "backend 'interp': tilec adds no integer-overflow checks"
    )
    assert lines[5].startswith(
        "OptionTypeError add_one: triton.compile option no_such_option=1 is no option of any "
        "tilec backend (backend 'interp' takes debug, enable_fp_fusion"
    )
    assert lines[6:] == ["interp 4 False True"]


INDUCTOR_ON_CPU = """
    import gc
    import tilec.as_triton
    import torch
    import torch._inductor.config as config
    from torch._inductor.async_compile import AsyncCompile
    from tilec.runtime import cache
    from tilec.runtime.compiler import CompiledKernel

    config.cpu_backend = "triton"  # Inductor's Triton code generation for CPU graphs
    print(config.use_static_cuda_launcher)
    torch.manual_seed(0)

    def check(name, f, *args):
        expected = f(*args)
        result = torch.compile(f)(*args)
        print(name, torch.allclose(result, expected, atol=1e-5, rtol=1e-5))

    config.compile_threads = 1  # compiled in this process
    check("pointwise", lambda x, y: torch.relu(x + y) * 2, torch.randn(1000), torch.randn(1000))
    config.compile_threads = 2  # compiled in Inductor's compile workers, sent back pickled
    AsyncCompile.warm_pool()
    AsyncCompile.wait_pool_ready()
    check("reduction", lambda x: x.sum(dim=1) + x.amax(dim=1), torch.randn(64, 300))
    check("softmax", lambda x: torch.softmax(x, dim=-1), torch.randn(32, 500))
    check("matmul epilogue", lambda a, b, c: torch.relu(a @ b + c), torch.randn(64, 32),
          torch.randn(32, 48), torch.randn(48))
    here = [k for k in cache.memory.values() if k.name.startswith("triton_")]
    print(sorted({k.name for k in here}), {k.backend.name for k in here}, all(k.src for k in here))
    kernels = [k for k in gc.get_objects() if type(k) is CompiledKernel]  # workers' too
    print(len({k.name for k in kernels}), {k.backend.name for k in kernels})
"""


def test_inductors_triton_kernels_run_on_tilec(tmp_path):
    """Inductor's pointwise, reduction, softmax and matmul-epilogue kernels, generated as
    Triton, compiled by tilec (interp, Triton's "cpu" target) in the process or in Inductor's
    compile workers (whose `import triton` is tilec too), and launched through
    `CompiledKernel.run`, without the static launcher."""
    pytest.importorskip("torch")
    out = run_code(tmp_path, INDUCTOR_ON_CPU, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
    assert out.splitlines() == [
        "False",
        "pointwise True",
        "reduction True",
        "softmax True",
        "matmul epilogue True",
        "['triton_poi_fused_add_mul_relu_0'] {'interp'} True",
        "4 {'interp'}",
    ]


INDUCTOR_SPECIAL_FUNCTIONS = """
    import mpmath
    import tilec.as_triton
    import torch
    import torch._inductor.config as config
    from tilec.runtime import cache

    config.cpu_backend = "triton"
    config.compile_threads = 1

    def exact(function):  # torch's own CPU Bessel functions are off by up to 4e-7
        return lambda x: torch.tensor([float(function(float(v))) for v in x], dtype=x.dtype)

    torch.manual_seed(0)
    x = torch.randn(500, dtype=torch.float64) * 3
    y = torch.randn(500, dtype=torch.float64)
    u = torch.rand(500, dtype=torch.float64)
    for name, f, args, reference in [
        ("erfinv", torch.erfinv, (u * 2 - 1,), torch.erfinv),
        ("erfc", torch.erfc, (x,), torch.erfc),
        ("erfcx", torch.special.erfcx, (x,), torch.special.erfcx),
        ("lgamma", torch.lgamma, (x,), torch.lgamma),
        ("ndtr", torch.special.ndtr, (x,), torch.special.ndtr),
        ("ndtri", torch.special.ndtri, (u,), torch.special.ndtri),
        ("nextafter", torch.nextafter, (x, y), torch.nextafter),
        ("bessel_j0", torch.special.bessel_j0, (x,), exact(lambda v: mpmath.besselj(0, v))),
        ("bessel_y1", torch.special.bessel_y1, (x.abs(),), exact(lambda v: mpmath.bessely(1, v))),
        ("i0", torch.i0, (x,), torch.i0),
        ("modified_bessel_i1", torch.special.modified_bessel_i1, (x,), torch.special.modified_bessel_i1),
    ]:
        expected = reference(*args)
        result = torch.compile(f)(*args)
        torch._dynamo.reset()
        print(name, torch.allclose(result, expected, rtol=1e-12, atol=1e-12, equal_nan=True))
    print(sorted({k.backend.name for k in cache.memory.values() if k.name.startswith("triton_")}))
"""


def test_inductors_special_functions_run_on_tilec(tmp_path):
    """torch's special functions, which Inductor's Triton code calls from
    `tl.extra.libdevice` (`erfinv`, `erfc`, `erfcx`, `lgamma`, `nextafter`, `j0`, `y1`,
    `cyl_bessel_i0`, ...), match torch's own (float64, to 1e-12)."""
    pytest.importorskip("torch")
    out = run_code(tmp_path, INDUCTOR_SPECIAL_FUNCTIONS,
                   TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))  # fmt: skip
    names = ["erfinv", "erfc", "erfcx", "lgamma", "ndtr", "ndtri", "nextafter", "bessel_j0",
             "bessel_y1", "i0", "modified_bessel_i1"]  # fmt: skip
    assert out.splitlines() == [f"{name} True" for name in names] + ["['interp']"]


ALIAS_STEPS_ASIDE = """
    import importlib, os, sys
    first, second = ("torch._inductor.config", "tilec.as_triton")[::ORDER]
    importlib.import_module(first)
    import torch._inductor.config as config
    threads = config.compile_threads
    importlib.import_module(second)
    import tilec.as_triton
    from torch.utils._triton import has_triton
    print(has_triton(), config.triton_disable_device_detection, config.compile_threads == threads,
          tilec.as_triton.inductor.WORKER_PATH in sys.path)
    tilec.as_triton.deactivate()
    print(config.triton_disable_device_detection,
          "TORCHINDUCTOR_TRITON_DISABLE_DEVICE_DETECTION" in os.environ)
"""


@pytest.mark.parametrize("order", [1, -1], ids=["inductor_first", "alias_first"])
def test_the_alias_steps_aside_for_inductor_when_told(tmp_path, order):
    """`TILEC_AS_TRITON_INDUCTOR=0`: Inductor is told there is no Triton, whether its config
    was imported before the alias (its attribute set) or after (the variable read); deactivating
    the alias gives Inductor its defaults back."""
    pytest.importorskip("torch")
    if order == 1 and importlib.util.find_spec("triton") is not None:  # the alias is off here
        pytest.skip(
            "a real Triton is installed: torch._inductor.config imports it (through "
            "torch._dynamo), and the alias refuses to follow it (test_compat_as_triton)"
        )
    code = ALIAS_STEPS_ASIDE.replace("ORDER", str(order))
    out = run_code(tmp_path, code, TILEC_AS_TRITON_INDUCTOR="0")
    assert out.splitlines() == ["False True True False", "False False"]


USER_KERNELS = """
    import tilec.as_triton
    import torch, triton, triton.language as tl
    import torch._inductor.config as config
    from torch._dynamo import trace_rules

    config.cpu_backend = "triton"  # no C++ compiler run (the user kernels are the same)

    @triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})],
                     key=["n"])
    @triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
                 mask=m)

    @triton.heuristics({"EVEN": lambda args: args["n"] % 16 == 0})
    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)

    def added(x, y):
        out = torch.empty_like(x)
        add_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, out, x.numel())
        return out * y + 1

    def scaled(x):
        out = torch.empty_like(x)
        scale_kernel[(triton.cdiv(x.numel(), 16),)](x, out, x.numel(), BLOCK=16)
        return out + 1

    def scaled_even(x):  # EVEN passed too: tilec's launch (its warning), a graph break
        out = torch.empty_like(x)
        scale_kernel[(triton.cdiv(x.numel(), 16),)](x, out, x.numel(), BLOCK=16, EVEN=True)
        return out + 1

    x, y = torch.randn(100), torch.randn(100)
    print("autotuned", torch.equal(torch.compile(added, fullgraph=True)(x, y), added(x, y)))
    print("heuristics", torch.equal(torch.compile(scaled, fullgraph=True)(x), scaled(x)))
    print("passed", torch.equal(torch.compile(scaled_even)(x), scaled_even(x)))
    import tilec.as_triton.heuristics
    print(trace_rules.check_file(triton.runtime.jit.__file__).skipped,
          trace_rules.check_file(tl.__file__).skipped,
          trace_rules.check_file(tilec.as_triton.heuristics.__file__).skipped,
          trace_rules.check_file(tilec.as_triton.__file__).skipped)
"""


def test_user_kernels_in_compiled_functions(tmp_path):
    """An autotuned kernel (tilec's autotuner is Triton's `Autotuner` to Dynamo) and a
    heuristics kernel with no autotuner (Dynamo traces the alias's heuristics launch, as it
    traces Triton's `Heuristics.run`) go into the graph, under `fullgraph=True`; a launch that
    tilec's launcher must see (a computed parameter passed too, which tilec warns about) breaks
    the graph and runs as without torch.compile, Dynamo skipping tilec's frames but the
    language's (`triton.cdiv` in grids) and the heuristics launch."""
    pytest.importorskip("torch")
    out = run_code(
        tmp_path,
        USER_KERNELS,
        TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
        TILEC_BACKEND="interp",
    )  # CPU tensors: not the GPU's backend, where there is one
    assert out.splitlines() == [
        "autotuned True", "heuristics True", "passed True", "True False False True",
    ]  # fmt: skip


def test_a_drivers_is_active_is_tritons_where_torch_is_loaded(monkeypatch):
    """Triton's drivers answer `is_active()` with torch's check; so does the alias (for the
    backends Triton has), also where this process cannot call the driver itself: the compile
    workers Inductor forks from a process that initialised the GPU, whose generated modules ask
    `set_driver_to_gpu()` before they compile."""
    import types

    from tilec.as_triton import backends as alias_backends
    from tilec.driver import Availability
    from tilec.runtime import compiler as tilec_compiler

    def fake_torch(cuda: bool, hip: str | None):
        return types.SimpleNamespace(
            cuda=types.SimpleNamespace(is_available=lambda: cuda),
            version=types.SimpleNamespace(hip=hip),
        )

    installed = tilec_compiler._backends()
    unavailable = Availability(False, "no driver in this process")
    monkeypatch.setitem(tilec_compiler._availability, "nvidia", unavailable)
    nvidia = alias_backends._entry("nvidia").driver
    monkeypatch.setitem(sys.modules, "torch", fake_torch(True, None))
    assert nvidia.is_active()  # torch sees a CUDA device: Triton's answer, not this process's
    monkeypatch.setitem(sys.modules, "torch", fake_torch(True, "6.2"))
    assert not nvidia.is_active()  # a ROCm torch: the hip backend's device, not nvidia's
    if "amd" in installed:
        assert alias_backends._entry("amd").driver.is_active()
    monkeypatch.setitem(sys.modules, "torch", fake_torch(False, None))
    assert not nvidia.is_active()
    monkeypatch.delitem(sys.modules, "torch")
    assert not nvidia.is_active()  # without torch: the backend's own availability
    assert not alias_backends._entry("interp").driver.is_active()  # a host backend never is
