"""ptxas is looked for beside the compile, not before it (issue 24): cuda.pathfinder's search may
start a Python subprocess (150-200 ms of a first compile on the CPU machine), which the stages
before the cubin now overlap. The cubin stage waits for the answer, and so does a fork."""

from __future__ import annotations

import os
import threading
import time

import pytest

from tilec_nvidia import codegen
from tilec_nvidia.backend import NvidiaBackend


@pytest.fixture
def slow_lookup(tmp_path, monkeypatch):
    """A pathfinder that answers (a fake ptxas) only once the test sets the returned event."""
    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    release = threading.Event()

    def pathfinder() -> str:
        release.wait(10)
        return str(fake)

    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))  # no remembered ptxas
    monkeypatch.delenv("TILEC_PTXAS", raising=False)
    monkeypatch.setattr(codegen, "_pathfinder_ptxas", pathfinder)
    monkeypatch.setattr(codegen, "_lookup", None)
    codegen.find_ptxas.cache_clear()
    yield release, str(fake)
    release.set()
    codegen._wait_for_lookup()
    codegen.find_ptxas.cache_clear()


def test_the_stages_are_built_without_waiting_for_the_lookup(slow_lookup):
    release, fake = slow_lookup
    backend = NvidiaBackend()
    stages: dict = {}
    start = time.perf_counter()
    backend.add_stages(stages, backend.parse_options(target="sm_90a"))
    assert time.perf_counter() - start < 5
    assert list(stages) == ["ptx", "cubin", "cubin_one_wave"]
    assert codegen._lookup is not None and codegen._lookup.is_alive()
    release.set()
    codegen._wait_for_lookup()
    assert codegen.find_ptxas.cache_info().currsize == 1
    assert codegen.find_ptxas() == fake


def test_the_cubin_stage_waits_for_the_lookup(slow_lookup, monkeypatch):
    release, fake = slow_lookup
    ran: list[list[str]] = []
    monkeypatch.setattr(codegen, "run_tool", lambda command, *a, **k: ran.append(command))
    codegen.look_for_ptxas_early()
    threading.Timer(0.2, release.set).start()
    with pytest.raises(AttributeError):  # the stand-in run_tool returns no result to read
        codegen.ptx_to_cubin(".version 7.8\n.target sm_90a\n", "sm_90a")
    assert ran and ran[0][0] == fake


def test_a_fork_waits_for_the_lookup(slow_lookup):
    release, _ = slow_lookup
    codegen.look_for_ptxas_early()
    threading.Timer(0.2, release.set).start()
    pid = os.fork()
    if pid == 0:  # the child: the lookup is done, its answer inherited
        os._exit(0 if codegen.find_ptxas.cache_info().currsize == 1 else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_without_ptxas_the_cubin_stage_gives_nothing(monkeypatch):
    monkeypatch.delenv("TILEC_PTXAS", raising=False)
    monkeypatch.setattr(codegen, "_pathfinder_ptxas", lambda: None)
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(codegen.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(codegen, "_lookup", None)
    codegen.find_ptxas.cache_clear()
    backend = NvidiaBackend()
    stages: dict = {}
    backend.add_stages(stages, backend.parse_options(target="sm_90a"))
    try:
        assert stages["cubin"](".version 7.8\n", {"target": "sm_90a"}) is None
    finally:
        codegen._wait_for_lookup()
        codegen.find_ptxas.cache_clear()
