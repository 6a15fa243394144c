"""What happens by design is counted or said at INFO, never warned about: a held-out point
skipped because scoring is behind (the learner must not wait for it)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from service.learn.command import build_worker
from service.store.redis_client import connect
from service.store.snapshot import read_snapshot
from tests.service.learn.helpers import drained, queue_articles, wait_until, worker_settings
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow


def test_a_skipped_scoring_point_is_counted_and_logged_at_info(
    redis_server: RedisServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="service")
    # Scoring far slower than learning (6,000 sweeps a point) with room for one beta only.
    settings = worker_settings(
        redis_server.url, tmp_path / "data", eval_sweeps=6000, eval_backlog=1, eval_every=10
    )
    client = connect(settings.store)
    queue_articles(client, 0, 150)
    stop = threading.Event()
    worker = build_worker(settings, connect(settings.store), stop)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        wait_until(
            lambda: drained(client) and read_snapshot(client) is not None, "a drained stream"
        )
        wait_until(lambda: worker.counters["evals_skipped"] > 0, "a skipped point")
    finally:
        stop.set()
        thread.join(60)
    skipped = [
        r for r in caplog.records if "skipped" in r.getMessage() and "perplexity" in r.getMessage()
    ]
    assert skipped, "no skipped point was logged"
    assert all(r.levelno == logging.INFO for r in skipped), [r.levelname for r in skipped]
    assert "evals_skipped" in skipped[0].getMessage()
