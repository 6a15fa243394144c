"""``streamlda api``: flags override settings, and the command serves the app."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from service.api.command import register, run
from service.cli import CommandError, settings_from_args
from tests.service.conftest import free_port

START_TIMEOUT_S = 60.0


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_flags_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMLDA_PORT", "9000")
    monkeypatch.setenv("STREAMLDA_REDIS_URL", "redis://env:6379/0")
    args = parse(["api", "--redis", "redis://flag:6379/1", "--host", "0.0.0.0"])
    settings = settings_from_args(args)
    assert args.func is run
    assert settings.store.redis_url == "redis://flag:6379/1"
    assert settings.api.host == "0.0.0.0" and settings.api.port == 9000


def test_without_redis_the_command_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STREAMLDA_REDIS_URL", raising=False)
    args = parse(["api"])
    with pytest.raises(CommandError, match="--redis"):
        run(settings_from_args(args), args)


@pytest.mark.slow
def test_streamlda_api_serves_until_terminated(redis_server: Any) -> None:
    port = free_port()
    command = [sys.executable, "-m", "service.cli", "api", "--redis", redis_server.url]
    process = subprocess.Popen(
        [*command, "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                    assert r.status == 200
                    break
            except (urllib.error.URLError, ConnectionError):
                assert process.poll() is None, process.stdout.read().decode()  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "streamlda api did not answer"
                time.sleep(0.1)
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2)
        assert error.value.code == 503
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=10)
    # uvicorn shuts down cleanly, then re-raises SIGTERM so the exit status tells why.
    assert process.returncode in (0, -signal.SIGTERM)
    assert b"Finished server process" in output
