"""A real redis-server for the remote-cache tests and `benchmarks/cluster_cache.py`: started on a
free port in a temporary folder (no persistence: `--save ''`, `--appendonly no`), stopped,
killed and restarted on the same port. `start` says why a server cannot run (no redis-server, no
`redis` package, a server that does not answer), for a test to skip with that reason."""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    """One redis-server process (`extra` arguments, e.g. `--maxmemory 1mb`) in `folder`."""

    def __init__(self, folder: Path, extra: tuple[str, ...] = ()):
        self.folder, self.extra, self.port = folder, extra, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None
        self.client: Any = None

    def start(self) -> str | None:
        """Start it and wait until it answers; None, or why it cannot run."""
        executable = shutil.which("redis-server")
        if executable is None:
            return "no redis-server on PATH (Debian package redis-server; .ci/setup installs it)"
        try:
            import redis
        except ImportError:
            return "the redis package is not installed (pip install 'tilec[redis]')"
        self.folder.mkdir(parents=True, exist_ok=True)
        command = [executable, "--port", str(self.port), "--bind", "127.0.0.1",
                   "--dir", str(self.folder), "--save", "", "--appendonly", "no", *self.extra]  # fmt: skip
        log = open(self.folder / "redis.log", "ab")  # noqa: SIM115 (the server's, closed by it)
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return f"redis-server exited at start: {self._log_tail()}"
            with contextlib.suppress(redis.ConnectionError):
                if self.client.ping():
                    return None
            time.sleep(0.05)
        self.stop()
        return f"redis-server did not answer within 10 s: {self._log_tail()}"

    def _log_tail(self) -> str:
        return (self.folder / "redis.log").read_text(errors="replace")[-500:]

    def kill(self) -> None:
        """Kill it at once (SIGKILL), as a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None

    def restart(self) -> None:
        """Start it again on the same port (empty: nothing was persisted)."""
        self.stop()
        reason = self.start()
        assert reason is None, reason
