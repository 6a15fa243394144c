"""A configuration error (a refused Redis password, a bad setting) is one line naming the cause
and the setting to change, a non-zero exit, and ``up`` stops instead of restarting."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.corpora import SHARDS
from tests.support.redis_server import RedisServer, free_port

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "the-right-one"
WRONG = "not-the-password"
TIMEOUT_S = 60
LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (INFO|DEBUG) ")


def error_lines(stderr: str) -> list[str]:
    """What a command printed beside its INFO log: the error, which must be one line."""
    return [line for line in stderr.strip().splitlines() if not LOG_LINE.match(line)]


@pytest.fixture
def locked_redis(redis_server: RedisServer) -> RedisServer:
    """The test's Redis, now requiring a password."""
    with redis_server.client() as client:
        client.config_set("requirepass", PASSWORD)
    return redis_server


def run(*args: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLDA_")}
    environment.update(STREAMLDA_DATA_DIR=str(tmp_path / "data"), **env)
    return subprocess.run(
        [sys.executable, "-m", "service", *args],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


COMMANDS = {
    "scrape": ["--source", f"jsonl:{SHARDS[0]}", "--limit", "5"],
    "worker": [],
    "api": ["--port", str(free_port())],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_wrong_redis_password_is_one_line_and_exit_2(
    command: str, locked_redis: RedisServer, tmp_path: Path
) -> None:
    url = f"redis://:{WRONG}@127.0.0.1:{locked_redis.port}/0"
    result = run(command, "--redis", url, *COMMANDS[command], tmp_path=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = error_lines(result.stderr)
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"streamlda {command}: error: Redis refused")
    assert "STREAMLDA_REDIS_URL" in lines[0]
    assert WRONG not in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_up_with_a_wrong_redis_password_stops_at_once(
    locked_redis: RedisServer, tmp_path: Path
) -> None:
    url = f"redis://:{WRONG}@127.0.0.1:{locked_redis.port}/0"
    started = time.monotonic()
    result = run(
        "up",
        "--redis",
        url,
        "--source",
        f"jsonl:{SHARDS[0]}",
        "--port",
        str(free_port()),
        tmp_path=tmp_path,
        STREAMLDA_RESTART_DELAY_FIRST_S="0.1",
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert time.monotonic() - started < 60
    assert "restart" not in output, output
    assert "STREAMLDA_REDIS_URL" in result.stderr
    assert WRONG not in output and "Traceback" not in output


def test_a_bad_setting_names_its_variable(tmp_path: Path) -> None:
    result = run(
        "worker", "--redis", "redis://127.0.0.1:1/0", tmp_path=tmp_path, STREAMLDA_TOPICS="0"
    )
    assert result.returncode == 2
    lines = error_lines(result.stderr)
    assert len(lines) == 1 and "STREAMLDA_TOPICS" in lines[0], result.stderr
