"""Search end to end: a worker with revisits keeps every trained article's shares, refolds them
under its published model, publishes them with it, serves them through the API, and keeps them
across a restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.learn.search.part import Search
from service.learn.worker import Worker
from service.store.redis_client import connect
from tests.service.learn.guards import kept_rows
from tests.service.learn.helpers import (
    drained,
    queue_articles,
    started,
    stopped,
    wait_until,
    worker_settings,
)
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow  # a real Redis, a worker in this process, the API

COUNT = 120


def refolded(worker: Worker) -> bool:
    """Every kept row refolded under a published model (the thread has caught up)."""
    search = worker.parts.of(Search)
    index = None if search is None else search.now
    return index is not None and bool(index.held.any()) and bool(index.folded[index.held].all())


def test_kept_articles_are_indexed_refolded_published_served_and_kept(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    settings = worker_settings(
        redis_server.url, tmp_path / "data", revisit=True, reservoir_size=500
    )
    client = connect(settings.store)
    queue_articles(client, 0, COUNT)
    worker, stop, thread = started(settings)
    wait_until(lambda: drained(client) and refolded(worker), "the stream learned and refolded")
    stopped(stop, thread)

    _, stream, kept = kept_rows(client, settings, COUNT)

    with TestClient(create_app(settings)) as api:
        some = next(iter(kept))
        similar = api.post("/similar", json={"text": stream[some].text, "limit": 5})
        assert similar.status_code == 200, similar.text
        assert {a["id"] for a in similar.json()["articles"]} <= kept
        assert api.get(f"/articles/{some}/similar").status_code == 200
        listed = [api.get(f"/topics/{k}/articles").json()["total"] for k in range(5)]
        assert sum(listed) >= len(kept)  # each article under at least one topic

    # A restart goes on with the checkpoint's rows.
    search = worker.parts.of(Search)
    before = None if search is None else search.now
    assert before is not None
    again, stop, thread = started(settings)
    resumed = again.parts.of(Search)
    assert resumed is not None
    wait_until(lambda: resumed.now is not None, "the worker to resume")
    stopped(stop, thread)
    after = resumed.now
    assert after is not None and after.refs == before.refs
