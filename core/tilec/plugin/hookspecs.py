"""The hooks a tilec plugin implements; all prefixed `tilec_`, project name "tilec".

A plugin is a module (or object) registered under the `tilec` entry-point group, for example
`[project.entry-points.tilec] interp = "tilec_interp.plugin"`, whose functions are marked with
`@hookimpl`. Every hook is optional: implement the ones you need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tilec.plugin.markers import PROJECT_NAME, hookimpl, hookspec

if TYPE_CHECKING:
    from tilec.backend import Backend
    from tilec.passes.base import Pass

__all__ = ["PROJECT_NAME", "hookimpl", "hookspec"]


@hookspec
def tilec_backends() -> list[Backend]:
    """Return the backends this plugin provides, as a list of `tilec.backend.Backend` instances.

    Each backend's `name` (e.g. "nvidia") is what `--backend=` selects. Creating the instances
    must not import vendor libraries; those belong inside the driver-side methods.
    """


@hookspec
def tilec_passes() -> list[type[Pass]]:
    """Return the pass classes this plugin contributes, as a list of `tilec.passes.base.Pass`
    subclasses.

    Each class's `name` must be unique across all plugins; its `stage` and relations
    (`requires`, `after`, `before`) place it in the pass pipeline's DAG.
    """


@hookspec
def tilec_ir_modules() -> list[str]:
    """Return the names of the modules that define this plugin's IR: its layouts (`#gpu.mma`),
    their thread mappings and its ops (`gpu.warp_group_dot`), which register themselves with
    the parser and the layout code as they are imported.

    tilec imports them when something needs them, not when the plugin loads: before it builds a
    pass pipeline (every compile) and when the parser meets a name no class has. A launch from
    the disk cache needs none of them, so it does not pay for importing the IR. A module that
    fails to import is a plugin failure, reported like any other.
    """
