"""``PUT`` and ``DELETE /admin/topics/{id}/name``: behind the admin token, any text of 1 to
topic_name_max characters, 404 for an unknown topic, the app's JSON errors."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from service.api.routes.topic_names import valid_name
from service.store.topic_names import read_topic_names
from tests.service.conftest import ADMIN_TOKEN, Published

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def test_a_name_is_stripped_and_bounded() -> None:
    assert valid_name("  Ωμέγα · 音楽 \n", 14) == "Ωμέγα · 音楽"
    assert valid_name("x" * 10, 10) == "x" * 10
    for bad in ("", " \t\n", "x" * 11, "\ud800"):
        with pytest.raises(Exception, match="name"):
            valid_name(bad, 10)


@pytest.mark.slow
def test_names_are_written_to_redis_and_removed(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    assert api.put("/admin/topics/0/name", json={"name": "Fruit"}, headers=AUTH).status_code == 200
    assert read_topic_names(redis_client) == {0: "Fruit"}
    assert api.delete("/admin/topics/0/name", headers=AUTH).json() == {"id": 0, "name": None}
    assert read_topic_names(redis_client) == {}
    assert api.delete("/admin/topics/0/name", headers=AUTH).status_code == 200  # none: fine


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"name": "   "}, "name"),
        ({"name": "\x1c"}, "other than whitespace"),
        ({"name": "y" * 101}, "at most 100 characters"),
        ({"name": 7}, "valid string"),
        ({"name": None}, "valid string"),
        ({}, "name"),
        (["Fruit"], "name"),
    ],
)
def test_an_invalid_name_is_a_422(
    api: TestClient, published: Published, redis_client: redis.Redis, body: Any, says: str
) -> None:
    response = api.put("/admin/topics/0/name", json=body, headers=AUTH)
    assert response.status_code == 422, response.text
    assert says in response.json()["detail"] and response.json()["errors"]
    assert read_topic_names(redis_client) == {}


@pytest.mark.slow
def test_unknown_topics_and_wrong_tokens(api: TestClient, published: Published) -> None:
    calls: list[tuple[Any, dict[str, Any]]] = [(api.put, {"json": {"name": "x"}}), (api.delete, {})]
    for call, kwargs in calls:
        missing = call("/admin/topics/3/name", headers=AUTH, **kwargs)
        assert missing.status_code == 404 and missing.json()["detail"].startswith("no topic 3")
        assert call("/admin/topics/0/name", **kwargs).status_code == 401
        assert call("/admin/topics/x/name", headers=AUTH, **kwargs).status_code == 422


@pytest.mark.slow
def test_before_any_snapshot_naming_is_a_503(api: TestClient, redis_client: redis.Redis) -> None:
    response = api.put("/admin/topics/0/name", json={"name": "Fruit"}, headers=AUTH)
    assert response.status_code == 503 and "no topics yet" in response.json()["detail"]
