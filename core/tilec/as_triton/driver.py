"""`triton.runtime.driver` under the alias: `driver.active` (also this module's `active`) is
`tilec.runtime.driver.active`, the driver of the backend launches use now. tilec picks the
backend itself (`tilec.set_backend`, `TILEC_BACKEND`), so `driver.set_active` takes that
driver back, or a driver of `triton.backends.backends` (selecting its backend), and
`driver.reset_active` is the automatic choice again."""

from __future__ import annotations

from typing import Any

from tilec.as_triton.backends import DriverView
from tilec.errors import OptionValueError
from tilec.runtime import compiler
from tilec.runtime.driver import GPUTarget, active


class DriverConfig:
    """Triton's `driver` object: `.active` and `.default` are tilec's active driver."""

    @property
    def active(self) -> Any:
        return active

    @property
    def default(self) -> Any:
        return active

    def set_active(self, driver: Any) -> None:
        """`driver` is `active` (nothing to do) or a driver class's instance from
        `triton.backends.backends` (`DriverView`): its backend becomes the one launches use
        (`tilec.set_backend`), unless they use it already."""
        if isinstance(driver, DriverView):
            if compiler.get_backend(require_available=False).name != driver.backend_name:
                compiler.set_backend(driver.backend_name)
            return
        if driver is not active:
            raise OptionValueError(
                "triton.runtime.driver.set_active: tilec's only driver is "
                "triton.runtime.driver.active, which follows the selected backend; select one "
                "with tilec.set_backend('nvidia'|'amd'|'interp') or TILEC_BACKEND"
            )

    def reset_active(self) -> None:
        compiler.set_backend(None)


driver = DriverConfig()
default = active
set_active = driver.set_active
reset_active = driver.reset_active
"""The module answers as `driver` does: importing `triton.runtime.driver` makes the module, not
the object, `triton.runtime`'s attribute `driver` (Triton's is the object)."""

__all__ = [
    "DriverConfig", "GPUTarget", "active", "default", "driver", "reset_active", "set_active",
]  # fmt: skip
