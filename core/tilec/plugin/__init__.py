"""Plugins: the hook specifications and the plugin manager.

A plugin marks its hook implementations with `tilec.plugin.hookimpl`::

    from tilec.plugin import hookimpl

    @hookimpl
    def tilec_backends():
        return [MyBackend()]
"""

from tilec.plugin.hookspecs import hookimpl, hookspec

__all__ = ["hookimpl", "hookspec"]
