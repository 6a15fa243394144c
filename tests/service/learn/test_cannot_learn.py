"""A worker that cannot learn (no vocabulary, a model too large for memory) says why with a
domain exception; ending the process is the ``worker`` command's decision, not the class's."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from service.learn.command import build_worker
from service.learn.session import CannotLearn
from tests.service.learn.helpers import REPO, WORKER_ENV, queue_articles, worker_settings
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow

HUGE = "100000000"  # topics: K x W cannot be allocated


def test_a_model_too_large_raises_cannot_learn_not_systemexit(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    client = redis_server.client()
    queue_articles(client, 0, 40)
    settings = worker_settings(redis_server.url, tmp_path / "data", topics=int(HUGE))
    worker = build_worker(settings, client, threading.Event())
    with pytest.raises(CannotLearn, match="cannot allocate the model"):
        worker.run()


def test_the_worker_command_turns_it_into_an_exit_with_one_line(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    queue_articles(redis_server.client(), 0, 40)
    env = {
        **WORKER_ENV,
        "STREAMLDA_TOPICS": HUGE,
        "STREAMLDA_REDIS_URL": redis_server.url,
        "STREAMLDA_DATA_DIR": str(tmp_path / "data"),
        "PATH": "/usr/bin:/bin",
    }
    result = subprocess.run(
        [sys.executable, "-m", "service.cli", "worker"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("streamlda worker: cannot allocate the model"), result.stderr
