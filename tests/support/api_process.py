"""A real ``streamlda api`` process on a free port, for the tests that measure or attack one from
outside: started on a Redis, waited for until ``ready`` answers 200, stopped after."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.redis_server import free_port

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 60.0


@contextmanager
def api_process(
    redis_url: str, log: Path, ready: str = "/healthz", env: Mapping[str, str] | None = None
) -> Iterator[tuple[int, int]]:
    """(its pid, its port), once GET ``ready`` answers 200; its output goes to ``log``."""
    from tests.service.learn.helpers import wait_until  # the suite's one bounded wait

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "service", "api", "--redis", redis_url, "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )

    def answers() -> bool:
        try:
            return httpx.get(base + ready, timeout=30).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(answers, f"the API to answer {ready}")
        yield process.pid, port
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def status_kib(pid: int, field: str) -> int:
    """A ``VmRSS``-like field of /proc/PID/status, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")
