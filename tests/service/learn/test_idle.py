"""An idle worker (the stream empty) says so: its published rate falls to 0 and /stats reads
"idle, queue empty"; a new article makes it learn, and report its rate, again."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.learn.command import build_worker
from service.store.redis_client import connect
from service.store.snapshot import read_snapshot
from tests.service.learn.helpers import drained, queue_articles, wait_until, worker_settings
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow


def test_an_idle_worker_reports_rate_0_and_idle(redis_server: RedisServer, tmp_path: Path) -> None:
    settings = worker_settings(redis_server.url, tmp_path / "data", checkpoint_idle_s=1.0)
    client = connect(settings.store)
    queue_articles(client, 0, 90)
    stop = threading.Event()
    worker = build_worker(settings, connect(settings.store), stop)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:

        def idle() -> bool:
            snap = read_snapshot(client)
            return drained(client) and snap is not None and snap.idle_since is not None

        wait_until(idle, "the worker to drain the stream and go idle")
        snap = read_snapshot(client)
        assert snap is not None and snap.docs_per_s == 0 and snap.tokens_per_s == 0
        with TestClient(create_app(settings)) as api:
            assert api.app.state.view.wait_fresh(10)  # type: ignore[attr-defined]
            stats = api.get("/stats").json()
            assert stats["docs_per_s"] == 0 and stats["rank_docs_per_s"] == [0]
            assert stats["worker_state"].startswith("idle, queue empty since ")
            metrics = api.get("/metrics").text
            assert "streamlda_docs_per_second 0.0" in metrics

        before = snap.docs_seen
        queue_articles(client, 90, 30)

        def learning_again() -> bool:
            snap = read_snapshot(client)
            return snap is not None and snap.docs_seen > before and snap.idle_since is None

        wait_until(learning_again, "the worker to learn again")
        snap = read_snapshot(client)
        assert snap is not None and snap.docs_per_s > 0
    finally:
        stop.set()
        thread.join(60)
    assert not thread.is_alive()
