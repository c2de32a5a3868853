"""The ptxas the search found is remembered in the cache folder (issue 24: cuda.pathfinder's
import and its runtime canary cost about 110 ms of CPU in every process's first compile), keyed
on what the search reads and used only while the file found is still the same executable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tilec import cache_files, settings
from tilec_nvidia import codegen, ptxas_memo


@pytest.fixture
def search(tmp_path, monkeypatch):
    """A private cache folder and a counted search that finds a fake ptxas."""
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEC_PTXAS", raising=False)
    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    calls: list[str] = []

    def counted() -> str | None:
        calls.append("search")
        return str(fake) if fake.exists() else None

    monkeypatch.setattr(codegen, "_search_ptxas", counted)
    codegen.find_ptxas.cache_clear()
    yield fake, calls
    codegen.find_ptxas.cache_clear()


def new_process() -> None:
    """What a new process starts from: no answer in memory."""
    codegen.find_ptxas.cache_clear()


def test_a_later_process_does_not_search(search):
    fake, calls = search
    assert codegen.find_ptxas() == str(fake)
    new_process()
    assert codegen.find_ptxas() == str(fake)
    assert calls == ["search"]
    assert list((settings.cache_dir() / "tools").iterdir()) == [
        settings.cache_dir() / "tools" / f"{ptxas_memo.entry_name()}.json"
    ]


@pytest.mark.parametrize("change", ["rewritten", "touched", "not executable", "removed"])
def test_a_changed_ptxas_is_searched_again(search, change):
    fake, calls = search
    codegen.find_ptxas()
    if change == "rewritten":  # same modification time, another size
        stat = fake.stat()
        fake.write_text("#!/bin/sh\nexit 0\n# another build\n")
        os.utime(fake, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    elif change == "touched":
        stat = fake.stat()
        os.utime(fake, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    elif change == "not executable":
        fake.chmod(0o644)
    else:
        fake.unlink()
    new_process()
    found = codegen.find_ptxas()
    assert calls == ["search", "search"]
    if change in ("rewritten", "touched"):  # found again, and remembered anew
        assert found == str(fake)
        new_process()
        assert codegen.find_ptxas() == str(fake) and len(calls) == 2


@pytest.mark.parametrize("variable", ["PATH", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX"])
def test_what_the_search_reads_is_the_key(search, monkeypatch, variable):
    _, calls = search
    codegen.find_ptxas()
    monkeypatch.setenv(variable, os.environ.get(variable, "") + os.pathsep + "/elsewhere")
    new_process()
    codegen.find_ptxas()
    assert calls == ["search", "search"]


def test_an_entry_not_written_with_the_key_is_not_used(search, tmp_path):
    fake, calls = search
    other = tmp_path / "other-ptxas"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    info = other.stat()
    body = json.dumps({"format": 1, "path": str(other), "size": info.st_size,
                       "mtime_ns": info.st_mtime_ns})  # fmt: skip
    folder = ptxas_memo.memo_dir()
    folder.mkdir(parents=True, mode=0o700)
    entry = folder / f"{ptxas_memo.entry_name()}.json"
    entry.write_text(f"{cache_files.HEADER}{'0' * 64}\n{body}")
    assert codegen.find_ptxas() == str(fake) and calls == ["search"]
    assert cache_files.read_entry(settings.cache_dir(), folder, entry.stem, ".json") is not None


def test_tilec_ptxas_and_no_ptxas_are_not_remembered(search, monkeypatch):
    fake, calls = search
    monkeypatch.setenv("TILEC_PTXAS", str(fake))
    assert codegen.find_ptxas() == str(fake) and calls == []
    monkeypatch.delenv("TILEC_PTXAS")
    fake.unlink()
    new_process()
    assert codegen.find_ptxas() is None
    assert not ptxas_memo.memo_dir().exists()


def test_a_new_interpreter_skips_cuda_pathfinder(tmp_path):
    """End to end: the second process finds the same ptxas without importing cuda.pathfinder."""
    source = textwrap.dedent(
        """
        import sys
        from tilec_nvidia import codegen
        print(codegen.find_ptxas(), "cuda.pathfinder" in sys.modules)
        """
    )
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TILEC_PTXAS", None)

    def run() -> list[str]:
        done = subprocess.run([sys.executable, "-c", source], env=env, capture_output=True,
                              text=True, timeout=120, check=True)  # fmt: skip
        return done.stdout.split()

    first = run()
    if first[0] == "None":
        pytest.skip("no ptxas here")
    second = run()
    assert second == [first[0], "False"]
