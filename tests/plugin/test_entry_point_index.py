"""The entry points remembered between processes (`tilec.plugin.entry_point_index`): a second
process reads them without scanning the installed distributions, and whatever changes what a
scan would find (a distribution installed beside the others, an `entry_points.txt` edited in
place, a new `sys.path` entry, a corrupt or forged index) makes it scan again."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tilec.plugin import entry_point_index
from tilec.plugin.manager import load_backends


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The scans made (each a call of the real `_scan`)."""
    made: list[str] = []
    real = entry_point_index._scan

    def counted(group: str):
        made.append(group)
        return real(group)

    monkeypatch.setattr(entry_point_index, "_scan", counted)
    return made


def names(group: str = "tilec") -> list[str]:
    return sorted(e.name for e in entry_point_index.entry_points(group))


def test_a_second_lookup_reads_the_index(scans):
    first = entry_point_index.entry_points("tilec")
    scanned = len(scans)
    second = entry_point_index.entry_points("tilec")
    assert len(scans) == scanned
    assert second == first
    assert {"interp", "nvidia"} <= {e.name for e in first}
    interp = next(e for e in second if e.name == "interp")
    assert (interp.value, interp.distribution) == ("tilec_interp.plugin", "tilec-interp")
    assert interp.load().__name__ == "tilec_interp.plugin"


def test_a_new_distribution_on_the_path_is_found(make_distribution, scans):
    before, scanned = names(), len(scans)
    make_distribution("tilec-extra", {"extra": "extra_plugin"}, {"extra_plugin": ""})
    assert names() == sorted([*before, "extra"])
    assert len(scans) == scanned + 1


def test_a_distribution_installed_beside_another_is_found(make_distribution, scans):
    root = make_distribution("tilec-one", {"one": "one_plugin"}, {"one_plugin": ""})
    assert "one" in names()
    scanned = len(scans)
    time.sleep(0.01)  # a folder's modification time has a resolution
    dist_info = root / "tilec_two-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: tilec-two\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[tilec]\ntwo = two_plugin\n")
    assert {"one", "two"} <= set(names())
    assert len(scans) == scanned + 1


def test_an_entry_point_edited_in_place_is_seen(make_distribution, scans):
    root = make_distribution("tilec-edit", {"edit": "edit_plugin"}, {"edit_plugin": ""})
    [found] = [e for e in entry_point_index.entry_points("tilec") if e.name == "edit"]
    assert found.value == "edit_plugin"
    scanned = len(scans)
    entry_points = root / "tilec_edit-0.1.dist-info" / "entry_points.txt"
    entry_points.write_text("[tilec]\nedit = edit_plugin:renamed\n")
    [found] = [e for e in entry_point_index.entry_points("tilec") if e.name == "edit"]
    assert found.value == "edit_plugin:renamed"
    assert len(scans) == scanned + 1


@pytest.mark.parametrize("damage", ["garbage", "forged"])
def test_a_corrupt_or_forged_index_is_a_scan(damage, scans):
    first = entry_point_index.entry_points("tilec")
    path = entry_point_index.index_dir() / f"{entry_point_index._name('tilec')}.json"
    scanned = len(scans)
    data = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"not an index")
    else:  # the body changed, the header (its HMAC) kept: a module to import smuggled in
        path.write_bytes(data.replace(b"tilec_interp.plugin", b"os.system_plugin"))
    assert entry_point_index.entry_points("tilec") == first
    assert len(scans) == scanned + 1


def test_a_new_process_loads_the_backends_without_importlib_metadata(tmp_path):
    """The second process finds the plugins through the index: `importlib.metadata` (and its
    scan of every distribution) is not imported."""
    code = (
        "import sys; from tilec.plugin.manager import load_backends; "
        "print(sorted(load_backends())); print('importlib.metadata' in sys.modules)"
    )
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "cache")}
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert runs[0].stdout.splitlines()[0] == runs[1].stdout.splitlines()[0]
    assert "'interp'" in runs[1].stdout
    assert runs[1].stdout.splitlines()[1] == "False"


def test_the_plugin_manager_uses_the_index(make_distribution):
    source = """
    from tilec.backend import Backend
    from tilec.plugin import hookimpl

    class Toy(Backend):
        name = "toy"

    @hookimpl
    def tilec_backends():
        return [Toy()]
    """
    make_distribution("tilec-toy", {"toy": "toy_plugin"}, {"toy_plugin": source})
    assert "toy" in load_backends()


LAUNCH = """
import sys
import numpy as np
import tilec
import tilec.language as tl

@tilec.jit
def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, 2 * tl.load(x_ptr + offsets, mask=mask), mask=mask)

x = np.arange(100, dtype=np.float32)
out = np.empty_like(x)
double[(1,)](x, out, 100, BLOCK=128, backend="interp")
assert (out == 2 * x).all()
loaded = [m for m in ("importlib.metadata", "tilec_nvidia.tensor_core_mapping",
                      "tilec_nvidia.wgmma_ops", "tilec_amd.matrix_instructions") if m in sys.modules]
print(loaded)
"""


def test_a_launch_from_the_disk_cache_imports_neither_the_scan_nor_the_backends_ir(tmp_path):
    """A new process launching a kernel that the disk cache holds: the entry points come from
    the index, and no backend's IR modules (`tilec_ir_modules`) are imported, since nothing is
    compiled or parsed with their names."""
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "cache")}
    script = tmp_path / "launch.py"
    script.write_text(LAUNCH)
    runs = [
        subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert runs[1].stdout.strip() == "[]"


def test_the_direct_scan_reads_what_importlib_metadata_reads(make_distribution, tmp_path):
    """`_scan` reads the metadata folders itself (no `importlib.metadata` import): the same entry
    points, names, versions and stamped files as `importlib.metadata`'s scan, for this
    environment's groups and for an `entry_points.txt` with comments, blank lines, other
    sections, spaces around `=` and an egg-info folder's `PKG-INFO`."""
    root = make_distribution("tilec-odd", {"odd": "odd_plugin"}, {"odd_plugin": ""}, "2.5")
    text = "# comment\n\n[console_scripts]\nodd-tool = odd_plugin:main\n\n[tilec]\n  spaced  =  a.b:c.d \n"
    (root / "tilec_odd-2.5.dist-info" / "entry_points.txt").write_text(text)
    egg = root / "tilec_egg-1.0.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text(
        "Metadata-Version: 1.1\nName: tilec-egg\nVersion: 1.0\n\nName: x\n"
    )
    (egg / "entry_points.txt").write_text("[tilec]\negg = egg_plugin\n")
    import importlib.metadata  # noqa: F401  (the reference scan below imports it anyway)

    for group in ("tilec", "console_scripts", "pytest11", "no.such.group"):
        direct, reference = entry_point_index._scan(group), entry_point_index._scan_metadata(group)
        assert sorted(direct[0]) == sorted(reference[0]), group
        assert direct[1] == reference[1], group
    found = {e.name: e for e in entry_point_index._scan("tilec")[0]}
    assert found["spaced"] == ("spaced", "a.b:c.d", "tilec-odd", "2.5")
    assert found["egg"] == ("egg", "egg_plugin", "tilec-egg", "1.0")


def test_a_finder_with_distributions_of_its_own_is_scanned_by_importlib_metadata(monkeypatch):
    """Where a finder other than the path finder provides distributions, the scan is
    `importlib.metadata`'s, which asks it."""

    class Provider:
        @staticmethod
        def find_spec(*args):
            return None

        @staticmethod
        def find_distributions(context=None):
            return iter(())

    asked: list[str] = []
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Provider])
    real = entry_point_index._scan_metadata
    monkeypatch.setattr(entry_point_index, "_scan_metadata", lambda g: asked.append(g) or real(g))
    entry_point_index._scan("tilec")
    assert asked == ["tilec"]


def test_a_first_process_with_a_fresh_cache_folder_does_not_import_importlib_metadata(tmp_path):
    """The scan of a fresh cache folder's first process (a first compile) reads the metadata
    folders itself: `importlib.metadata` and `email` stay unimported (15-20 ms of CPU)."""
    code = (
        "import sys; from tilec.plugin.manager import load_backends; "
        "print(sorted(load_backends())); "
        "print([m for m in ('importlib.metadata', 'email') if m in sys.modules])"
    )
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert "'interp'" in run.stdout.splitlines()[0]
    assert run.stdout.splitlines()[1] == "[]"
