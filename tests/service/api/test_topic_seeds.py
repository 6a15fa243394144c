"""``PUT`` and ``DELETE /admin/topics/{id}/seeds``: behind the admin token, words tokenised as the
learner's, 422s that say what is wrong, each write bumping the control hash's sequence; the
seeds in effect shown by ``/topics`` from the snapshot."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from service.api.routes.topic_seeds import valid_seeds
from service.store.control import read_control
from service.store.snapshot import publish_snapshot
from service.store.topic_seeds import TopicSeeds, read_topic_seeds
from tests.service.conftest import ADMIN_TOKEN, Published

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def test_seed_words_are_the_learners_tokens_each_once() -> None:
    seeds = valid_seeds(["Film", "rock-and-roll", "FILM", "children's"], None, **BOUNDS)
    assert seeds == TopicSeeds(("film", "rock", "and", "roll", "children"), 5.0)
    assert valid_seeds(["a"], 100.0, **BOUNDS).strength == 100.0


BOUNDS: dict[str, Any] = {"most": 5, "default": 5.0, "strongest": 1000.0}


@pytest.mark.parametrize(
    ("words", "strength", "says"),
    [
        ([], None, "no word"),
        (["--", " "], None, "no word"),
        (["a b c", "d e f"], None, "6 words: the most is 5"),
        (["film"], 0.0, "at least 0.001"),
        (["film"], 1e-320, "at least 0.001"),
        (["film"], 1001.0, "at most 1000"),
        (["film"], float("nan"), "must be a finite number"),
        (["\u3316" * 100], None, "characters once tokenised: the most is 100"),
    ],
)
def test_invalid_seeds_say_why(words: list[str], strength: float | None, says: str) -> None:
    with pytest.raises(Exception) as refused:
        valid_seeds(words, strength, **BOUNDS)
    assert says in str(refused.value.errors())  # type: ignore[attr-defined]


@pytest.mark.slow
def test_seeds_are_written_to_redis_bumping_the_sequence_and_removed(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    body = {"words": ["Apple", "banana"], "strength": 50.0}
    answer = api.put("/admin/topics/1/seeds", json=body, headers=AUTH)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"id": 1, "words": ["apple", "banana"], "strength": 50.0}
    seq, seeds = read_topic_seeds(redis_client)
    assert seeds == {1: TopicSeeds(("apple", "banana"), 50.0)}
    assert seq == read_control(redis_client).seeds_seq == 1
    answer = api.delete("/admin/topics/1/seeds", headers=AUTH)
    assert answer.json() == {"id": 1, "words": [], "strength": None}
    assert read_topic_seeds(redis_client) == (2, {})


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        ("/admin/topics/0/seeds", {"words": []}, "at least 1 item"),
        ("/admin/topics/0/seeds", {"words": ["..."]}, "no word"),
        ("/admin/topics/0/seeds", {"words": ["w"] * 21}, "at most 20"),
        ("/admin/topics/0/seeds", {"words": [f"w{i}" for i in range(20)] + ["a b"]}, "at most"),
        ("/admin/topics/0/seeds", {"words": ["apple"], "strength": 0}, "greater than or equal"),
        ("/admin/topics/0/seeds", {"words": ["apple"], "strength": 1e12}, "less than or equal"),
        ("/admin/topics/0/seeds", {"strength": 3}, "words"),
        ("/admin/topics/0/seeds", {"words": ["apple"], "strength": "5"}, "a valid number"),
        ("/admin/topics/0/seeds", {"words": ["apple"], "strength": True}, "a valid number"),
        ("/admin/topics/0/seeds", {"words": ["apple"], "strength": 1e-320}, "0.001"),
        ("/admin/topics/0/seeds", {"words": ["apple"], "weight": 5}, "Extra inputs"),
        ("/admin/topics/0/seeds", {"words": [5]}, "a valid string"),
        ("/admin/topics/0/seeds", {"words": ["\u3316" * 100]}, "the most is 100"),
        ("/admin/topics/0/seeds", {"words": ["a" * 101]}, "at most 100 characters"),
    ],
)
def test_invalid_seeds_are_a_422(
    api: TestClient,
    published: Published,
    redis_client: redis.Redis,
    path: str,
    body: Any,
    says: str,
) -> None:
    response = api.put(path, json=body, headers=AUTH)
    assert response.status_code == 422, response.text
    assert says in response.text
    assert read_topic_seeds(redis_client) == (0, {})


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"words": ["apple"], "strength": NaN}', "finite"),
        (b'{"words": ["apple"], "strength": Infinity}', "finite"),
        (b'{"words": ["apple"], "words": ["pear"]}', "'words' is given twice"),
    ],
)
def test_what_json_parsers_let_through_is_a_422(
    api: TestClient, published: Published, redis_client: redis.Redis, body: bytes, says: str
) -> None:
    headers = {**AUTH, "Content-Type": "application/json"}
    response = api.put("/admin/topics/0/seeds", content=body, headers=headers)
    assert response.status_code == 422, response.text
    assert says in response.text
    assert read_topic_seeds(redis_client) == (0, {})


@pytest.mark.slow
def test_seeds_need_the_admin_token(api: TestClient, published: Published) -> None:
    assert api.put("/admin/topics/0/seeds", json={"words": ["apple"]}).status_code == 401
    assert api.delete("/admin/topics/0/seeds").status_code == 401


@pytest.mark.slow
def test_topics_show_the_seeds_in_effect_and_those_in_top(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    seeds = [["apple", "durian"], [], []]
    publish_snapshot(redis_client, dataclasses.replace(published.snapshot, topic_seeds=seeds))
    api.app.state.view.wait_fresh(2.0)  # type: ignore[attr-defined]
    topic = api.get("/topics/0").json()
    assert topic["seeds"] == ["apple", "durian"] and topic["seeds_in_top"] == ["apple"]
    listed = api.get("/topics").json()["topics"]
    assert [t["seeds"] for t in listed] == seeds


@pytest.mark.slow
@pytest.mark.parametrize("method", ["PUT", "DELETE"])
def test_an_unknown_topic_is_a_404_as_for_its_name(
    api: TestClient, published: Published, redis_client: redis.Redis, method: str
) -> None:
    body = {"words": ["apple"]} if method == "PUT" else None
    response = api.request(method, "/admin/topics/3/seeds", json=body, headers=AUTH)
    assert response.status_code == 404, response.text
    assert "no topic 3: topic ids are 0 to 2" in response.text
    assert read_topic_seeds(redis_client) == (0, {})
