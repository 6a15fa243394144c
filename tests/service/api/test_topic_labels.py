"""What the topic reads say about each topic beside its words: size, names, articles, and
``?sort=size``; they come through the pre-rendered path and change when names change."""

from __future__ import annotations

from dataclasses import replace

import pytest
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.api.schemas import OneTopicOut, TopicsOut
from service.settings import Settings
from service.store.snapshot import publish_snapshot
from service.store.topic_names import set_topic_name
from tests.service.conftest import ADMIN_TOKEN, Published

pytestmark = pytest.mark.slow

ARTICLES = [
    [["Orchard", "123", "wikipedia", 0.8, 2900], ["Fruit", "f-7", "jsonl", 0.5, 2500]],
    [],
    [["Opera", "99", "wikipedia", 0.9, 1000]],
]
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture
def sized(published: Published, redis_client: redis.Redis) -> Published:
    """The published snapshot with the worker's sizes and articles."""
    snapshot = replace(published.snapshot, topic_size=[0.2, 0.5, 0.3], topic_articles=ARTICLES)
    publish_snapshot(redis_client, snapshot)
    return replace(published, snapshot=snapshot)


def test_topics_carry_size_and_names_and_sort_by_size(api: TestClient, sized: Published) -> None:
    body = api.get("/topics").json()
    TopicsOut.model_validate(body)
    first = body["topics"][0]
    assert first["size"] == 0.2 and first["name"] is None
    assert first["suggested_name"].split(" · ")[0] == "apple"
    by_size = api.get("/topics?sort=size").json()["topics"]
    assert [t["id"] for t in by_size] == [1, 2, 0]


def test_the_workers_suggested_names_are_served(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    """The worker names each topic by its first words by relevance; without its suggestions
    (an older worker) the most probable words stand in."""
    suggested = ["fruit · pie", "cars · roads", "music · song"]
    publish_snapshot(redis_client, replace(published.snapshot, topic_suggested=suggested))
    api.app.state.view.refresh()
    assert [t["suggested_name"] for t in api.get("/topics").json()["topics"]] == suggested


def test_without_sizes_they_are_null_and_sort_last_in_id_order(
    api: TestClient, published: Published
) -> None:
    topics = api.get("/topics?sort=size").json()["topics"]
    assert [t["id"] for t in topics] == [0, 1, 2] and {t["size"] for t in topics} == {None}
    assert api.get("/topics/1").json()["articles"] == []


def test_one_topic_lists_its_articles_with_links(api: TestClient, sized: Published) -> None:
    body = api.get("/topics/0").json()
    OneTopicOut.model_validate(body)
    assert body["articles"] == [
        {
            "title": "Orchard",
            "id": "123",
            "source": "wikipedia",
            "share": 0.8,
            "share_bound": None,
            "tokens": None,
            "docs_seen": 2900,
            "url": "https://en.wikipedia.org/?curid=123",
        },
        {"title": "Fruit", "id": "f-7", "source": "jsonl", "share": 0.5, "share_bound": None,
         "tokens": None, "docs_seen": 2500, "url": None},
    ]  # fmt: skip


def test_a_name_shows_up_in_the_next_read_and_changes_the_etag(
    api: TestClient, sized: Published, redis_client: redis.Redis
) -> None:
    before = api.get("/topics/2")
    etag = before.headers["etag"]
    set_topic_name(redis_client, 2, "Music 🎻")
    after = api.get("/topics/2", headers={"If-None-Match": etag})
    assert after.status_code == 200 and after.json()["name"] == "Music 🎻"
    assert api.get("/topics").json()["topics"][2]["name"] == "Music 🎻"


def test_names_are_served_from_memory(
    settings: Settings, sized: Published, redis_client: redis.Redis
) -> None:
    """A read answers from the view's bytes without Redis, names included."""
    set_topic_name(redis_client, 0, "Fruit")
    idle = settings.updated(api_refresh_s=3600.0)
    with TestClient(create_app(idle)) as client:
        before = int(redis_client.info("stats")["total_commands_processed"])
        for _ in range(5):
            assert client.get("/topics/0").json()["name"] == "Fruit"
        assert int(redis_client.info("stats")["total_commands_processed"]) - before == 1


def test_a_name_set_through_one_app_is_read_by_a_fresh_one(
    settings: Settings, sized: Published
) -> None:
    with TestClient(create_app(settings)) as first:
        put = first.put("/admin/topics/1/name", json={"name": "  Engines  "}, headers=AUTH)
        assert put.status_code == 200 and put.json() == {"id": 1, "name": "Engines"}
        assert first.get("/topics/1").json()["name"] == "Engines"  # no wait: the PUT waited
    with TestClient(create_app(settings)) as fresh:
        assert fresh.get("/topics/1").json()["name"] == "Engines"
        gone = fresh.delete("/admin/topics/1/name", headers=AUTH)
        assert gone.status_code == 200 and gone.json() == {"id": 1, "name": None}
        assert fresh.get("/topics/1").json()["name"] is None
