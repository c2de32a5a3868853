"""`triton.runtime.driver` under the alias: `driver.active` (also this module's `active`) is
`tilec.runtime.driver.active`, the driver of the backend launches use now. tilec picks the
backend itself (`tilec.set_backend`, `TILEC_BACKEND`), so `driver.set_active` takes only that
driver back and `driver.reset_active` is the automatic choice again."""

from __future__ import annotations

from typing import Any

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
        if driver is not active:
            raise OptionValueError(
                "triton.runtime.driver.set_active: tilec's only driver is "
                "triton.runtime.driver.active, which follows the selected backend; select one "
                "with tilec.set_backend('nvidia'|'amd'|'interp') or TILEC_BACKEND"
            )

    def reset_active(self) -> None:
        compiler.set_backend(None)


driver = DriverConfig()

__all__ = ["DriverConfig", "GPUTarget", "active", "driver"]
