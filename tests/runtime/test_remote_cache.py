"""The remote cache tier (`tilec.remote_cache`, `tilec.remote_claims`) against a real redis-server
(`redis_server.RedisServer`, started per test in a temporary folder; the tests skip, with the
reason, where it cannot run): a second "machine" (a process with an empty disk cache) launches from
it without compiling; 16 processes started at once compile each kernel once; a crashed holder's
claim expires; a server killed mid-run and restarted, filled to its memory limit, paused (slow) or
serving a tampered entry never fails a launch; `tilec cache info/clear --remote`."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import remote_cache_job as job
from redis_server import RedisServer

from tilec import cache_files, cli, remote_cache, remote_claims, settings
from tilec.errors import OptionValueError
from tilec.runtime import cache
from tilec.version import __version__

JOB = str(Path(job.__file__))
COMPILED = "compiling for"
"""The log line of a compile (`TILEC_LOG=info`)."""
_machine_ids = itertools.count()
ENTRIES = f"*:v{remote_cache.FORMAT}:compile:*"
"""The compiled kernels' keys on the server (not the claims, `...:claim:compile:...`)."""


@pytest.fixture
def server(tmp_path):
    started = RedisServer(tmp_path / "redis")
    reason = started.start()
    if reason is not None:
        pytest.skip(f"needs a redis-server: {reason}")
    yield started
    started.stop()


@pytest.fixture
def remote(server, monkeypatch):
    """This process uses `server` as its remote tier."""
    monkeypatch.setenv("TILEC_REMOTE_CACHE", server.url)
    remote_cache.forget()
    yield server
    remote_cache.forget()


def machines(server, tmp_path, count, *args, env=None):
    """Start `count` processes at once, each a machine with an empty disk cache of its own;
    their (stdout, stderr) once all are done."""
    base = dict(os.environ, TILEC_REMOTE_CACHE=server.url, TILEC_LOG="info", **(env or {}))
    procs = [
        subprocess.Popen(
            [sys.executable, JOB, *args],
            env={**base, "TILEC_CACHE_DIR": str(tmp_path / f"machine-{next(_machine_ids)}")},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    results = [proc.communicate(timeout=120) for proc in procs]
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0 and out.startswith("OK"), err
    return results


def compiles(results) -> int:
    return sum(err.count(COMPILED) for _, err in results)


def test_a_second_machine_launches_from_the_remote_tier(server, tmp_path):
    first = machines(server, tmp_path, 1)
    assert compiles(first) == 3  # the add and the two autotuning configs
    second = machines(server, tmp_path, 1)
    assert compiles(second) == 0, second[0][1]
    assert second[0][0] == first[0][0]  # the tuned choice read, not tuned again
    assert "remote cache hit" in second[0][1]


def test_sixteen_processes_at_once_compile_each_kernel_once(server, tmp_path):
    env = {"TILEC_PRINT_AUTOTUNING": "1"}  # a config's time, "(stored)" where it was read
    results = machines(server, tmp_path, 16, "128", "256", env=env)
    assert compiles(results) == 4, "\n".join(err for _, err in results)
    assert len({out for out, _ in results}) == 1  # every process uses the one tuned choice
    timed = [line for _, err in results for line in err.splitlines() if " ms (p20 " in line]
    assert len([line for line in timed if not line.endswith("(stored)")]) == 2  # tuned once


def test_a_crashed_holders_claim_expires(server, tmp_path):
    """A claim left by a process that died (its lease still running) delays the others only
    until the lease ends; then one of them compiles."""
    machines(server, tmp_path, 1, "64")
    names = [k.decode() for k in server.client.scan_iter(ENTRIES)]
    assert len(names) == 3 and not list(server.client.scan_iter("*:claim:*"))  # given up
    server.client.flushdb()  # (the test's own server)
    for name in names:  # claims of a process that died while compiling
        claim = name.replace(":compile:", ":claim:compile:")
        server.client.set(claim, "a dead process's token", px=1500)
    start = time.monotonic()
    results = machines(server, tmp_path, 2, "64")
    assert 1.0 < time.monotonic() - start < 60
    assert compiles(results) == 3


def launch(block: int) -> None:
    job.add(block)  # raises where the result is wrong


def published(server) -> int:
    return sum(1 for _ in server.client.scan_iter(ENTRIES))


def test_a_server_killed_mid_run_and_restarted(remote, monkeypatch):
    launch(16)
    assert published(remote) == 1
    remote.kill()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        launch(32)  # compiled here: the server is down
        launch(128)  # the tier is paused: no second warning
    assert len([w for w in caught if issubclass(w.category, remote_cache.RemoteCacheWarning)]) == 1
    assert "carries on with its local cache" in str(caught[0].message)
    remote.restart()
    time.sleep(1.1)  # the first pause after a fault
    launch(64)
    assert published(remote) == 1  # published to the restarted server
    cache.clear_memory()
    monkeypatch.setenv("TILEC_CACHE_DIR", str(remote.folder.parent / "another-machine"))
    for block in (16, 32, 128, 64):
        launch(block)
    assert published(remote) == 4


def fill(server) -> None:
    """Another program fills the server's memory (it refuses writes), then its limit is lowered
    below what it holds, so that no write of any size fits in what is left."""
    with pytest.raises(Exception, match="maxmemory"):
        for index in range(1000):
            server.client.set(f"otherapp:{index}", b"x" * 20_000)
    server.client.config_set("maxmemory", "1mb")


def test_keys_hold_the_versions_and_entries_are_bounded_in_size_and_time(remote, monkeypatch):
    monkeypatch.setenv("TILEC_REMOTE_CACHE_TTL", "100")
    launch(16)
    (key,) = remote.client.scan_iter(ENTRIES)
    assert key.decode().startswith(f"tilec:{__version__}:v{remote_cache.FORMAT}:compile:")
    assert 0 < remote.client.ttl(key) <= 100
    monkeypatch.setenv("TILEC_REMOTE_CACHE_MAX_MB", "0.001")  # 1 kB: no kernel fits
    launch(32)
    assert published(remote) == 1
    monkeypatch.setenv("TILEC_CACHE_DIR", str(remote.folder.parent / "another-machine"))
    cache.clear_memory()
    launch(16)  # the entry published before is over the bound now: not read either
    assert remote.client.hget(f"{settings.remote_cache_prefix()}stats", "hits") is None


def test_a_dropped_connection_is_opened_again(remote):
    launch(16)
    remote.client.client_kill_filter(_type="normal", skipme=True)  # tilec's connections
    with warnings.catch_warnings():
        warnings.simplefilter("error", remote_cache.RemoteCacheWarning)
        launch(32)
    assert published(remote) == 2


def test_a_claim_outlives_its_lease_while_its_holder_works(remote, monkeypatch):
    monkeypatch.setattr(remote_claims, "LEASE_S", 0.6)
    remote_claims._stop_renewing()  # a renewer started before waits out the lease it read
    with remote_claims.shared("compile", "ab" * 32, lambda text: text) as claim:
        assert claim.value is None  # this process is to make it
        (key,) = remote.client.scan_iter("*:claim:compile:*")
        time.sleep(1.5)  # past the lease: renewed
        assert remote.client.exists(key)
        claim.publish("the entry")
    assert not remote.client.exists(key)  # given up at the end
    with remote_claims.shared("compile", "ab" * 32, lambda text: text) as found:
        assert found.value == "the entry"


def test_a_holder_that_cannot_publish_lets_the_others_work_at_once(remote, monkeypatch):
    """A compile that fails, or an entry over the size bound: the processes waiting for it do
    not claim it one after another (each waiting for the one before)."""
    monkeypatch.setenv("TILEC_REMOTE_CACHE_WAIT", "30")
    with pytest.raises(RuntimeError), remote_claims.shared("compile", "cd" * 32, lambda t: t):
        raise RuntimeError("the compile failed")
    start = time.monotonic()
    with remote_claims.shared("compile", "cd" * 32, lambda t: t) as claim:
        assert claim.value is None and not remote_claims._held  # to work, without the claim
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("expiry", [{"ex": 3600}, {}], ids=["an hour", "no expiry"])
def test_a_claim_with_a_longer_lease_than_tilecs_is_not_waited_for(remote, monkeypatch, expiry):
    monkeypatch.setenv("TILEC_REMOTE_CACHE_WAIT", "30")
    claim = remote_cache.redis_key("claim:compile", "ef" * 32)
    remote.client.set(claim, "set by hand", **expiry)
    start = time.monotonic()
    with remote_claims.shared("compile", "ef" * 32, lambda t: t) as found:
        assert found.value is None and not remote_claims._held  # to work, without the claim
    assert time.monotonic() - start < 5


def test_a_full_server_is_read_and_not_written(tmp_path, monkeypatch, caplog):
    # an empty server with tilec's client uses about 1 MB (its scripts, its counts)
    server = RedisServer(
        tmp_path / "redis", ("--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
    )
    reason = server.start()
    if reason is not None:
        pytest.skip(f"needs a redis-server: {reason}")
    try:
        monkeypatch.setenv("TILEC_REMOTE_CACHE", server.url)
        remote_cache.forget()
        launch(16)
        assert published(server) == 1
        fill(server)
        cache.clear_memory()
        monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "another-machine"))
        with warnings.catch_warnings(record=True) as caught, caplog.at_level("INFO", "tilec"):
            warnings.simplefilter("always")
            launch(16)  # read from the full server
            launch(32)  # compiled, not published
        messages = [str(w.message) for w in caught if w.category is remote_cache.RemoteCacheWarning]
        assert len(messages) == 1 and "is full" in messages[0], messages
        assert published(server) == 1
        assert "add_kernel: remote cache hit" in caplog.text
    finally:
        remote_cache.forget()
        server.stop()


def test_a_slow_server_times_out(remote, monkeypatch):
    monkeypatch.setenv("TILEC_REMOTE_CACHE_TIMEOUT", "0.3")
    remote_cache.forget()
    remote.client.execute_command("CLIENT", "PAUSE", "10000", "ALL")
    start = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        launch(16)
    assert time.monotonic() - start < 8  # not waiting for the paused server
    assert any("TimeoutError" in str(w.message) for w in caught)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda data: data[: len(data) // 2],  # truncated: a write dropped midway
        lambda data: data.replace(b"arith.addf", b"arith.subf"),  # the body changed
        lambda data: cache_files.HEADER.encode() + b"0" * 64 + b"\n" + data.partition(b"\n")[2],
    ],
    ids=["truncated", "changed", "forged"],
)
def test_a_tampered_entry_is_ignored(remote, monkeypatch, tmp_path, tamper):
    launch(16)
    (key,) = remote.client.scan_iter(ENTRIES)
    good = remote.client.get(key)
    remote.client.set(key, tamper(good))
    cache.clear_memory()
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "another-machine"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        launch(16)  # correct: compiled here, not run from the tampered entry
    assert any("not authenticated" in str(w.message) for w in caught)
    assert remote_cache.get("compile", key.decode().rsplit(":", 1)[1]) is not None  # replaced


def test_an_entry_of_another_key_is_ignored(remote, monkeypatch, tmp_path):
    launch(16)
    monkeypatch.setenv("TILEC_CACHE_KEY_FILE", str(tmp_path / "other-host-key"))
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "another-machine"))
    cache.clear_memory()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        launch(16)
    assert any(settings.CACHE_KEY_FILE.name in str(w.message) for w in caught)


def test_without_the_redis_package_the_local_cache_is_used(tmp_path):
    script = (
        "import sys; sys.modules['redis'] = None\n"
        f"sys.path.insert(0, {str(Path(JOB).parent)!r})\n"
        "import remote_cache_job as job; job.add(16); job.add(32)\n"
    )
    env = dict(
        os.environ, TILEC_REMOTE_CACHE="redis://127.0.0.1:1/0", TILEC_CACHE_DIR=str(tmp_path)
    )
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("the redis package is not installed") == 1


def test_import_tilec_does_not_import_redis():
    env = dict(os.environ, TILEC_REMOTE_CACHE="redis://127.0.0.1:1/0")
    script = "import sys, tilec; assert 'redis' not in sys.modules, 'redis imported'"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("url", ["http://cache:6379", "redis://cache:port/0"])
def test_a_url_that_is_no_redis_url_is_an_error(monkeypatch, url):
    pytest.importorskip("redis", reason="the redis package reads the URL")
    monkeypatch.setenv("TILEC_REMOTE_CACHE", url)
    remote_cache.forget()
    with pytest.raises(OptionValueError, match="TILEC_REMOTE_CACHE"):
        launch(16)


def test_cache_info_and_clear_remote(remote, capsys):
    launch(16)
    remote.client.set("tilec:not-ours", "x")
    remote.client.set("otherapp:key", "y")
    assert cli.main(["cache", "info"]) == 0
    shown = capsys.readouterr().out
    assert f"remote cache: {remote.url}" in shown
    assert "compile: 1 entries" in shown and "published" in shown
    compiled = [
        k for kind in ("compile", "pipelines") for k in remote.client.scan_iter(f"*:{kind}:*")
    ]
    assert cli.main(["cache", "clear", "compile", "--remote"]) == 0
    assert f"removed {len(compiled)} entries" in capsys.readouterr().out  # kernels, pass orders
    assert cli.main(["cache", "clear", "--remote"]) == 0
    left = sorted(k.decode() for k in remote.client.scan_iter("*"))
    assert left == ["otherapp:key", "tilec:not-ours"]
    assert cache.entries()  # the local cache stays


def test_clear_remote_without_a_tier_is_an_error(monkeypatch, capsys):
    monkeypatch.delenv("TILEC_REMOTE_CACHE", raising=False)
    assert cli.main(["cache", "clear", "--remote"]) == 1
    assert "TILEC_REMOTE_CACHE is unset" in capsys.readouterr().err
    assert cli.main(["cache", "info", "--remote"]) == 1  # --remote clears; info shows the tier
