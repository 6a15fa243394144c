"""Several API processes on one port: ``streamlda api --api-workers 2`` and ``up --api-workers 2``
serve, from two processes, and stop cleanly."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.service.conftest import Published
from tests.service.learn.helpers import DEADLINE_S, REPO, WORKER_ENV, wait_until
from tests.support.corpora import SHARDS
from tests.support.redis_server import free_port

pytestmark = pytest.mark.slow

STARTED = re.compile(rb"Started server process \[(\d+)\]")


def answers(port: int, path: str) -> int:
    try:
        return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5).status_code
    except httpx.TransportError:
        return 0


def servers(log: Path) -> set[int]:
    """The pids of the uvicorn server processes that said they started."""
    return {int(pid) for pid in STARTED.findall(log.read_bytes())}


def stop(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise


def test_api_workers_serve_one_port(
    redis_server: Any, published: Published, tmp_path: Path
) -> None:
    port, log = free_port(), tmp_path / "api.log"
    command = [sys.executable, "-m", "service", "api", "--redis", redis_server.url]
    command += ["--port", str(port), "--api-workers", "2"]
    with log.open("wb") as out:
        api = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: len(servers(log)) == 2 and answers(port, "/topics") == 200, "2 servers")
        assert [answers(port, "/topics?top=3") for _ in range(20)] == [200] * 20
        reply = httpx.post(f"http://127.0.0.1:{port}/infer", json={"text": "apple"}, timeout=10)
        assert reply.status_code == 200 and reply.json()["tokens"] == 1
    finally:
        code = stop(api)
    assert code in (0, -signal.SIGTERM), log.read_text()
    for pid in servers(log):  # the workers went with it
        assert not Path(f"/proc/{pid}").exists(), pid


def test_api_workers_go_with_a_killed_parent(
    redis_server: Any, published: Published, tmp_path: Path
) -> None:
    """Orphans would keep the port, and the API that up restarts could not bind it."""
    port, log = free_port(), tmp_path / "api.log"
    command = [sys.executable, "-m", "service", "api", "--redis", redis_server.url]
    command += ["--port", str(port), "--api-workers", "2"]
    with log.open("wb") as out:
        api = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: len(servers(log)) == 2 and answers(port, "/healthz") == 200, "2 servers")
    finally:
        api.kill()
        api.wait()
    wait_until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in servers(log)), "orphans")
    wait_until(lambda: answers(port, "/healthz") == 0, "the port freed")


def test_up_with_two_api_workers_serves(tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "up.log"
    env = {**os.environ, **WORKER_ENV, "STREAMLDA_STOP_TIMEOUT_S": "30"}
    env.pop("STREAMLDA_REDIS_URL", None)
    command = [sys.executable, "-m", "service", "up", "--source", f"jsonl:{SHARDS[0]}"]
    command += ["--port", str(port), "--data-dir", str(tmp_path / "data"), "--api-workers", "2"]
    with log.open("wb") as out:
        up = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(
            lambda: up.poll() is not None or answers(port, "/topics") == 200, "topics served"
        )
        assert up.poll() is None, log.read_text()
        wait_until(lambda: len(servers(log)) == 2, "two API processes")

        # Each process sees Redis every api_refresh_s: one that started before the first
        # snapshot answers 503 until its next refresh has parsed it. Once both have, every
        # answer must be 200, from either process.
        def ten() -> list[int]:
            return [answers(port, "/topics?top=2") for _ in range(10)]

        wait_until(lambda: ten() == [200] * 10, "both processes serving the topics", timeout=10)
        assert ten() == [200] * 10
    finally:
        code = stop(up)
    assert code == 0, log.read_text()
