"""Every `TILEC_*` variable: the core's (`tilec.settings.SETTINGS`) and those the installed
backends define for themselves (`Backend.settings`: the paths of their vendors' tools), which
README.md's table shows (`markdown_table()`)."""

from __future__ import annotations

from tilec import settings
from tilec.plugin.manager import load_backends
from tilec.settings import Setting


def all_settings() -> tuple[Setting, ...]:
    """The core's settings and every installed backend's, by name. A backend's setting named
    like another one is a ValueError naming both owners."""
    owners = {setting.name: "tilec.settings" for setting in settings.SETTINGS}
    found = list(settings.SETTINGS)
    for backend in load_backends().values():
        for setting in backend.settings:
            owner = owners.setdefault(setting.name, f"backend '{backend.name}'")
            if owner != f"backend '{backend.name}'":
                raise ValueError(
                    f"backend '{backend.name}' declares {setting.name}, which {owner} defines "
                    "already: give the backend's setting a name of its own"
                )
            if setting not in found:
                found.append(setting)
    return tuple(sorted(found, key=lambda setting: setting.name))


def markdown_table() -> str:
    """README.md's table of every variable (`all_settings()`)."""
    return settings.markdown_table(all_settings())


__all__ = ["all_settings", "markdown_table"]
