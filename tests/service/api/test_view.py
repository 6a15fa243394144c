"""The in-memory view: reads answer without Redis, bodies carry ETags, changes show up, Redis
outages give 503 and readiness follows /topics."""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.api.reads.refresher import PerplexityView, TopicsView
from service.api.schemas import OneTopicOut, PerplexityOut, StatsOut, TopicsOut
from service.settings import Settings
from service.store.perplexity import PerplexityPoint, append_perplexity
from service.store.snapshot import publish_snapshot
from tests.service.conftest import Published

pytestmark = pytest.mark.slow

READS = (
    "/topics",
    "/topics/1?top=3",
    "/topics?estimate=sample",
    "/topics/1?estimate=sample",
    "/perplexity",
    "/perplexity?since=1000",
    "/stats",
)
CHANGE_TIMEOUT_S = 10.0


@pytest.fixture
def idle_api(settings: Settings, published: Published) -> Iterator[TestClient]:
    """An app that read Redis at start-up and will not refresh again during the test."""
    with TestClient(create_app(settings.updated(api_refresh_s=3600.0))) as client:
        yield client


def commands(client: redis.Redis) -> int:
    return int(client.info("stats")["total_commands_processed"])


def test_reads_do_not_touch_redis(idle_api: TestClient, redis_client: redis.Redis) -> None:
    before = commands(redis_client)
    for _ in range(20):
        for path in (*READS, "/metrics", "/readyz", "/healthz"):
            assert idle_api.get(path).status_code == 200, path
    assert commands(redis_client) - before == 1  # the INFO of `before` itself


def test_bodies_follow_the_schema(api: TestClient, published: Published) -> None:
    TopicsOut.model_validate_json(api.get("/topics?top=100").content)
    OneTopicOut.model_validate_json(api.get("/topics/2").content)
    TopicsOut.model_validate_json(api.get("/topics?estimate=sample").content)
    OneTopicOut.model_validate_json(api.get("/topics/2?estimate=sample&top=5").content)
    PerplexityOut.model_validate_json(api.get("/perplexity").content)
    StatsOut.model_validate_json(api.get("/stats").content)


@pytest.mark.parametrize("path", READS[:-1])
def test_etag_gives_304_until_the_content_changes(
    api: TestClient, published: Published, redis_client: redis.Redis, path: str
) -> None:
    first = api.get(path)
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "no-cache" and etag.startswith('"')
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        again = api.get(path, headers={"If-None-Match": header})
        assert again.status_code == 304 and again.content == b"", header
        assert again.headers["etag"] == etag
    assert api.get(path, headers={"If-None-Match": '"other"'}).content == first.content
    later = replace(published.snapshot, docs_seen=4000, updated_at=time.time() + 1)
    publish_snapshot(redis_client, later)
    append_perplexity(redis_client, PerplexityPoint(4000, 2.0, 2.0, 1.0), keep=100)
    changed = api.get(path, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag


def test_stats_etag_between_refreshes(idle_api: TestClient) -> None:
    """/stats changes at every refresh while the worker beats (its heartbeat age grows)."""
    etag = idle_api.get("/stats").headers["etag"]
    assert idle_api.get("/stats", headers={"If-None-Match": etag}).status_code == 304


def test_the_refresher_picks_up_a_new_snapshot(
    settings: Settings, published: Published, redis_client: redis.Redis
) -> None:
    """Nobody asks for a refresh: the background thread notices the new version by itself."""
    fast = settings.updated(api_refresh_s=0.05)
    with TestClient(create_app(fast)) as client:
        assert client.get("/topics").json()["docs_seen"] == 3000
        publish_snapshot(redis_client, replace(published.snapshot, docs_seen=5000))
        deadline = time.monotonic() + CHANGE_TIMEOUT_S
        while client.get("/topics").json()["docs_seen"] != 5000:
            assert time.monotonic() < deadline, "the new snapshot never showed up"
            time.sleep(0.02)


def test_redis_outage_is_503_and_not_ready_then_recovers(
    api: TestClient, published: Published, redis_server: Any
) -> None:
    assert api.get("/readyz").status_code == 200
    redis_server.stop()
    for path in ("/topics", "/topics/0", "/perplexity", "/stats", "/readyz"):
        response = api.get(path)
        assert response.status_code == 503 and "Redis is unreachable" in response.json()["detail"]
    assert "streamlda_redis_up 0" in api.get("/metrics").text
    assert api.get("/healthz").status_code == 200
    redis_server.start()
    assert api.get("/topics").status_code == 200 and api.get("/readyz").status_code == 200


def test_a_replaced_view_is_freed_without_the_cycle_collector(published: Published) -> None:
    """A served view (its snapshot and rendered bodies) goes as soon as nothing refers to it:
    were its caches to hold the view, each replaced snapshot would wait for a full collection,
    which paused every request for 150-270 ms under load."""
    topics = TopicsView(published.version, published.snapshot, cache_size=8)
    topics.all(10, "mean", False, "id", None), topics.one(1, 5, "sample", True, None)
    history = PerplexityView(("signature",), published.points, cache_size=8)
    history.since(None), history.since(1000)
    gone = [weakref.ref(topics), weakref.ref(history)]
    gc.disable()
    try:
        del topics, history
        assert [ref() for ref in gone] == [None, None]
    finally:
        gc.enable()
