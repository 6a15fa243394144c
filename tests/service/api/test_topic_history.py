"""``GET /topics/{id}/history``: one topic's column of the worker's history points, parsed
once per change of the set (a new point parses only itself), with ETags."""

from __future__ import annotations

import json

import pytest
import redis
from fastapi.testclient import TestClient

from service.api.reads.bodies import iso
from service.api.schemas import TopicHistoryOut
from service.store.topic_history import (
    HistoryPoint,
    append_topic_history,
    truncate_topic_history,
)
from tests.service.conftest import Published

pytestmark = pytest.mark.slow


def point(docs: int, k: int = 3) -> HistoryPoint:
    return HistoryPoint(
        docs_seen=docs,
        at=1_700_000_000.0 + docs,
        size=[1 / k] * k,
        coherence=[0.1 * (i + 1) if i != 1 else None for i in range(k)],
        drift=[None if docs == 1000 else 0.01 * i for i in range(k)],
        changed=[i == 2 for i in range(k)],
        words=[[f"w{i}", f"x{i}", str(docs)] for i in range(k)],
    )


def test_one_topics_points_oldest_first(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    assert api.get("/topics/2/history").json() == {"id": 2, "points": []}
    for docs in (2000, 1000):
        append_topic_history(redis_client, point(docs), keep=200)
    body = api.get("/topics/2/history").json()
    TopicHistoryOut.model_validate(body)
    assert body["id"] == 2 and [p["docs_seen"] for p in body["points"]] == [1000, 2000]
    first = body["points"][0]
    assert first == {
        "docs_seen": 1000,
        "at": iso(1_700_001_000.0),
        "size": pytest.approx(1 / 3),
        "coherence": pytest.approx(0.3),
        "drift": None,
        "changed": True,
        "words": ["w2", "x2", "1000"],
    }
    assert api.get("/topics/1/history").json()["points"][1]["coherence"] is None


def test_a_poll_parses_only_what_is_new_and_gets_a_304_meanwhile(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    history = api.app.state.topic_history  # type: ignore[attr-defined]
    for docs in (1000, 2000, 3000):
        append_topic_history(redis_client, point(docs), keep=200)
    first = api.get("/topics/0/history")
    assert history.parsed == 3
    again = api.get("/topics/0/history", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and history.parsed == 3
    append_topic_history(redis_client, point(4000), keep=200)
    newer = api.get("/topics/0/history", headers={"If-None-Match": first.headers["etag"]})
    assert newer.status_code == 200 and len(newer.json()["points"]) == 4 and history.parsed == 4
    truncate_topic_history(redis_client, 2000)  # resumed from an older checkpoint
    assert [p["docs_seen"] for p in api.get("/topics/0/history").json()["points"]] == [1000, 2000]
    assert history.parsed == 4


def test_unknown_topics_are_404_and_bad_ids_422(api: TestClient, published: Published) -> None:
    response = api.get("/topics/3/history")
    assert response.status_code == 404 and response.json()["detail"].startswith("no topic 3")
    assert api.get("/topics/x/history").status_code == 422
    assert api.get("/topics/-1/history").status_code == 422


def test_no_snapshot_is_a_503(api: TestClient, redis_client: redis.Redis) -> None:
    assert api.get("/topics/0/history").status_code == 503


def test_a_topics_history_follows_it_through_a_label_move(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    """At 2000 the drift matching found topic 0 where topic 2 was (and 2 where 0 was): topic
    0's history reads topic 2's column before the move."""
    append_topic_history(redis_client, point(1000), keep=200)
    moved = point(2000)
    append_topic_history(
        redis_client, HistoryPoint(**{**moved.__dict__, "matched": [2, 1, 0]}), keep=200
    )
    words = [p["words"][0] for p in api.get("/topics/0/history").json()["points"]]
    assert words == ["w2", "w0"]


def test_unreadable_points_and_a_newer_workers_fields_do_not_stop_the_view(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    append_topic_history(redis_client, point(1000), keep=200)
    redis_client.zadd("streamlda:topic:history", {"not json": 1500})
    newer = json.dumps({**point(2000).__dict__, "from_the_future": 1})
    redis_client.zadd("streamlda:topic:history", {newer: 2000})
    body = api.get("/topics/1/history").json()
    assert [p["docs_seen"] for p in body["points"]] == [1000, 2000]
    assert api.get("/topics").status_code == 200


def test_without_the_workers_sizes_a_point_says_null(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    unsized = HistoryPoint(**{**point(1000).__dict__, "size": [None, None, None]})
    append_topic_history(redis_client, unsized, keep=200)
    body = api.get("/topics/2/history").json()
    TopicHistoryOut.model_validate(body)
    assert body["points"][0]["size"] is None
