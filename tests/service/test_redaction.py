"""No command prints a Redis URL's password: one redaction, real subprocesses with a bad URL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from service.redact import redact
from service.settings import Settings
from service.store.redis_client import RedisURLError, connect, is_transient

REPO = Path(__file__).resolve().parents[2]
BAD_URL = "redis://admin:pw@host:bad/0"


@pytest.mark.slow
@pytest.mark.parametrize("command", ["scrape", "worker", "api", "up"])
def test_a_bad_url_is_a_one_line_error_without_the_password(command: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLDA_")}
    env["STREAMLDA_DATA_DIR"] = str(tmp_path / "data")
    result = subprocess.run(
        [sys.executable, "-m", "service", command, "--redis", BAD_URL],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "pw" not in output
    assert f"streamlda {command}: error: bad Redis URL redis://admin:***@host:bad/0" in output
    assert len(result.stderr.strip().splitlines()) == 1, output


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("redis://user:hunter2@db:6379/0", "redis://user:***@db:6379/0"),
        ("redis://:hunter2@db:6379/0", "redis://:***@db:6379/0"),
        ("redis://db:6379/0", "redis://db:6379/0"),
        ("redis://user@db/0", "redis://user@db/0"),
        ("rediss://u:p@ss@db:6380/1", "rediss://u:***@db:6380/1"),
        (
            "unix:///run/redis.sock?db=0&password=hunter2",
            "unix:///run/redis.sock?db=0&password=***",
        ),
        (
            "Error at 'redis://a:hunter2@h:1/0'\n  url = 'redis://a:hunter2@h:1/0'",
            "Error at 'redis://a:***@h:1/0'\n  url = 'redis://a:***@h:1/0'",
        ),
        (None, "(unset)"),
    ],
)
def test_redact_hides_every_password_form(text: str | None, shown: str) -> None:
    assert redact(text) == shown


def test_connect_is_bounded_raw_and_redacts_bad_urls() -> None:
    settings = Settings(redis_url="redis://127.0.0.1:1/0", queue_timeout=3.0)
    kwargs = connect(settings.store).connection_pool.connection_kwargs
    assert kwargs["socket_timeout"] == 3.0 and kwargs["socket_connect_timeout"] == 3.0
    assert kwargs.get("decode_responses", False) is False
    assert connect("redis://127.0.0.1:1/0").connection_pool.connection_kwargs["socket_timeout"]
    with pytest.raises(RedisURLError) as caught:
        connect(Settings(redis_url=BAD_URL).store)
    assert "pw" not in str(caught.value) and "admin:***@" in str(caught.value)
    with pytest.raises(RedisURLError, match="no Redis URL"):
        connect(Settings(redis_url=None).store)


def test_transient_errors_are_outages_and_busy_replies_not_refusals() -> None:
    assert is_transient(redis.ConnectionError("refused"))
    assert is_transient(redis.TimeoutError("slow"))
    assert is_transient(ConnectionResetError())
    assert is_transient(redis.BusyLoadingError("LOADING Redis is loading the dataset"))
    assert is_transient(redis.ResponseError("OOM command not allowed"))
    assert not is_transient(redis.AuthenticationError("invalid password"))
    assert not is_transient(redis.ResponseError("WRONGTYPE Operation against a key"))
    assert not is_transient(ValueError("no"))
