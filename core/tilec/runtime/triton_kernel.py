"""What Triton's `CompiledKernel` offers beyond tilec's own launch (`compiled[grid](...)`,
`compiled.run(grid, args, stream)`): its launcher call, which torch's Inductor generates code
for, and the attributes that call and Inductor read.

Triton's `compiled.run(gridX, gridY, gridZ, stream, function, packed_metadata,
launch_metadata, launch_enter_hook, launch_exit_hook, *args)` takes every argument of the kernel
in order, constexprs included (their values must be those compiled in, as `compiled[grid]`
checks). `function` and `packed_metadata` are the kernel's own (`compiled.function`,
`compiled.packed_metadata`); the hooks, where given, are called with `launch_metadata` before
and after the launch, as Triton's launcher calls them. `CompiledKernel` (in
`tilec.runtime.compiler`) inherits this class.

Inductor's compile workers send compiled kernels to the parent process pickled its own way:
the instance's `__dict__` (Triton's kernels keep their state there), restored into
`CompiledKernel.__new__(CompiledKernel)`. `keep_for_pickling` puts a kernel's fields there (its
backend by name), and the first read of a field of such a restored kernel restores them all
(`__getattr__`): the tir module of a host backend is parsed again, from the disk cache's entry
(which keeps the kernel's source locations) where it is there.
"""

from __future__ import annotations

from typing import Any

import attrs

from tilec.errors import ArgumentValueError, FreedArrayError
from tilec.runtime.specialization import spec_token

_KEPT = "_tilec_fields"
"""The `__dict__` key of the fields `keep_for_pickling` keeps."""


class TritonKernelAPI:
    """Triton's `CompiledKernel` names (see the module docstring). `src` is the `ASTSource` a
    `triton.compile` made the kernel from (`tilec.as_triton.compiler`), else None."""

    src: Any = None

    def keep_for_pickling(self) -> None:
        """Keep the kernel's fields in its `__dict__`, for Inductor's pickling (see the module
        docstring): all but the driver state and the tir module, the backend by its name."""
        fields = {a.name: getattr(self, a.name) for a in attrs.fields(type(self))}
        fields.pop("runtime")
        fields.pop("module")
        fields["backend"] = fields["backend"].name
        self.__dict__[_KEPT] = fields

    def __getattr__(self, name: str) -> Any:
        """A field of a kernel restored from Inductor's pickle (`keep_for_pickling`): all are
        restored (`CompiledKernel._restore`)."""
        kept = self.__dict__.get(_KEPT) if name != "__dict__" else None
        if kept is None or name not in attrs.fields_dict(type(self)):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._restore(kept)
        return getattr(self, name)

    @property
    def hash(self) -> str:
        """Triton's `hash`: the kernel's compile-cache key."""
        return self.key

    @property
    def function(self) -> Any:
        """The loaded kernel's function handle (`CUfunction`, `hipFunction_t`) on the device it
        was first loaded on; None before a launch or `_init_handles()`, and on a backend that
        loads nothing (interp)."""
        loaded = self.runtime.get("loaded")
        return None if loaded is None else loaded.function

    @property
    def num_warps(self) -> int:
        """The warps a program runs, as Triton's `metadata.num_warps`: the `num_warps` option
        plus a warp-specialized kernel's producer warps (Triton's `ttg.total-num-warps`)."""
        return self.metadata.get("num_warps", self.options.num_warps)

    @property
    def packed_metadata(self) -> tuple[int, int, int]:
        """Triton's `(num_warps, num_ctas, shared)`, what its launcher is handed (the warps a
        program runs, producers included, as Triton's `pack_metadata`)."""
        return (self.num_warps, 1, self.metadata.get("shared", 0))

    def _functions(self) -> list[Any]:
        return [loaded.function for loaded in self.runtime.get("loaded_on", {}).values()]

    def launch_metadata(self, grid: Any, stream: Any, *args: Any) -> dict[str, Any]:
        """What a launch hook is given (Triton's `launch_metadata`): the kernel's name, function
        and the stream."""
        return {"name": self.name, "function": self.function, "stream": stream}

    def run_triton(
        self,
        grid_x: int,
        grid_y: int,
        grid_z: int,
        stream: Any,
        function: Any,
        packed_metadata: Any,
        launch_metadata: Any,
        launch_enter_hook: Any,
        launch_exit_hook: Any,
        *args: Any,
    ) -> None:
        """Triton's launcher call (see the module docstring)."""
        if function is not None and function not in self._functions():
            raise ArgumentValueError(
                f"{self.name}.run: the function handle passed is not this kernel's "
                f"({function!r}); pass compiled.function"
            )
        if launch_enter_hook is not None:
            launch_enter_hook(launch_metadata)
        self.launch_all((grid_x, grid_y, grid_z), args, stream)
        if launch_exit_hook is not None:
            launch_exit_hook(launch_metadata)

    def _launch(self, grid: tuple[int, ...], runtime: list[Any], stream: Any) -> None:
        """Launch with the runtime arguments through the driver's runner for their kinds
        (types, dtypes, devices, alignment: `spec_token`), made once per kind, as a launch of
        the kernel makes it (`driver.make_runner`); an argument with no kind (unhashable, a freed
        array) takes the driver's general path, which reports it."""
        try:
            key = tuple(map(spec_token, runtime))
            runners = self.runtime.setdefault("runners", {})
            runner = runners.get(key)
        except (TypeError, FreedArrayError):
            self.backend.driver.run(self, grid, runtime, stream)
            return
        if runner is None:
            runner = runners[key] = self.backend.driver.make_runner(self, runtime)
        runner(grid, runtime, stream)
