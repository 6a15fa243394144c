"""While topics move, /topics and /topics/{number} are still answered alike both ways: the
pre-rendered layer answers a live number's plain polls, the routes a gone number's 410 and a
never-used one's 404 (tests/service/api/test_topics_paths.py holds the fixed case)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from fastapi import FastAPI

from lda.topic_ids import TopicIds
from service.api.app import create_app
from service.api.reads.bodies import Labels
from service.api.reads.refresher import State, TopicsView, suggested_names
from service.settings import Settings
from tests.service.api.test_topics_paths import UNREACHABLE, WORDS, both, layer, snapshot, status

NUMBERS = [8, 2, 4, 7]  # the snapshot's four topics, in slot order


def numbers() -> TopicIds:
    """Eight slots: numbers 0-7 at first; 0 merged into 2, 1 retired, 3, 5, 6 too; 8 born in
    slot 0: live at the end, 8, 2, 4, 7 as NUMBERS lists them."""
    ids = TopicIds.start(8, 8)
    ids.merged(2, 0, 10, 1_764_000_010.0)
    ids.retired(1, 20, 1_764_000_020.0)
    for slot in (3, 5, 6):
        ids.retired(slot, 30, 1_764_000_030.0)
    assert ids.born(0, 40, 1_764_000_040.0) == 8
    assert ids.live_ids() == NUMBERS
    return ids


@pytest.fixture(scope="module")
def app() -> FastAPI:
    app = create_app(Settings(redis_url=UNREACHABLE, topic_words=WORDS))
    served = dataclasses.replace(snapshot(), topic_ids=NUMBERS)
    labels = Labels({4: "Named"}, suggested_names(served))
    view = TopicsView("v1", served, 64, labels, ("n1", numbers()))
    app.state.view.state = State(error=None, topics=view)
    return app


@pytest.mark.parametrize(
    ("path", "query"),
    [("/topics", ""), ("/topics", "sort=size&top=3"), ("/topics/8", ""), ("/topics/4", "top=2")],
)
def test_the_layer_answers_live_numbers_as_the_routes_do(
    app: FastAPI, path: str, query: str
) -> None:
    fast, routed = both(app, path, query)
    assert layer(app)._memo[(path, query.encode())] is not None
    assert status(fast) == 200 and fast == routed


def test_the_listed_ids_are_the_numbers(app: FastAPI) -> None:
    fast, _ = both(app, "/topics")
    body = json.loads(fast[1]["body"])
    assert [t["id"] for t in body["topics"]] == NUMBERS
    assert [t["name"] for t in body["topics"]] == [None, None, "Named", None]
    one = json.loads(next(both(app, "/topics/4"))[1]["body"])
    assert one["id"] == 4 and one["name"] == "Named" and one["size"] == 0.3  # third listed


@pytest.mark.parametrize(
    ("number", "code"), [(0, 410), (1, 410), (3, 410), (5, 410), (6, 410), (9, 404), (99, 404)]
)
def test_gone_and_unknown_numbers_are_left_to_the_routes(
    app: FastAPI, number: int, code: int
) -> None:
    fast, routed = both(app, f"/topics/{number}")
    assert layer(app)._memo[(f"/topics/{number}", b"")] is None
    assert status(fast) == code and fast == routed
    body = json.loads(fast[1]["body"])
    if number == 0:
        assert body["merged_into"] == 2 and body["merged_at"]["docs_seen"] == 10
