"""/topics and /topics/{id} are answered two ways, and both give the same bytes.

The pre-rendered layer (service.api.reads.prerendered) answers the plain polls before routing;
the routes (service.api.routes.topics) answer everything. For every query form the whole app's
answer (the layer first) is compared with the routes' (the same app, the layer stepped over):
status, every header in order, and body, as ASGI messages. The app is driven in-process over a
view whose state holds a snapshot, so no Redis is needed: the one query that would read it
(``?relevance=``, left to the routes) gets their 503 both ways.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI

from service.api.app import create_app
from service.api.reads.bodies import Labels
from service.api.reads.prerendered import FastReads
from service.api.reads.refresher import State, TopicsView, suggested_names
from service.settings import Settings
from service.store.snapshot import Snapshot, WordWeight

UNREACHABLE = "redis://127.0.0.1:1/0"  # never contacted but by ?relevance= (connection refused)
K, WORDS = 4, 30  # topic_words: the largest ?top=
Message = dict[str, Any]


def snapshot() -> Snapshot:
    """Every field a topic's body shows, some of them null, so sorting meets ties and Nones."""
    words = [
        [WordWeight(f"w{k}x{i}", 0.5 / (i + 1) + k / 1e3) for i in range(WORDS)] for k in range(K)
    ]
    sample = [[WordWeight(f"s{k}x{i}", 0.4 / (i + 1)) for i in range(WORDS)] for k in range(K)]
    # Each word's interval; every seventh upper bound not yet known.
    bounds = [
        [[w.weight * 0.9, None if i % 7 == 0 else w.weight * 1.1] for i, w in enumerate(t)]
        for t in words
    ]
    return Snapshot(
        docs_seen=3000,
        updated_at=1_764_000_000.25,
        sampler="scir",
        step_size=0.01,
        device="cpu",
        vocab_size=500,
        topics=words,
        sample_topics=sample,
        quality_docs=200,
        topic_coherence=[0.12, None, 0.31, 0.12],
        topic_drift=[0.2, 0.1, 0.3, 0.0],
        topic_changed_at=[1000, 2000, 3000, 1000],
        intervals=bounds,
        topic_size=[0.4, 0.1, 0.3, 0.2],
        topic_articles=[[["Apple", f"{k}1", "wikipedia", 0.8, 2900]] for k in range(K)],
        topic_article_bounds=[[[0.1, 240]] for _ in range(K)],
        topic_seeds=[["w0x3", "nowhere"], [], [], ["w3x0"]],
    )


@pytest.fixture(scope="module")
def app() -> FastAPI:
    app = create_app(Settings(redis_url=UNREACHABLE, topic_words=WORDS))
    served = snapshot()
    labels = Labels({1: "Fruit", 3: 'Ünïcode "quoted"'}, suggested_names(served))
    app.state.view.state = State(error=None, topics=TopicsView("v1", served, 64, labels))
    return app


def exchange(
    asgi: Any, path: str, query: str = "", headers: tuple[tuple[str, str], ...] = (), **scope: Any
) -> list[Message]:
    """The messages ``asgi`` sends for one request."""
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    request = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": [(b"host", b"api"), *((k.lower().encode(), v.encode()) for k, v in headers)],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        **scope,
    }
    asyncio.run(asgi(request, receive, send))
    return sent


def layer(app: FastAPI) -> FastReads:
    """The pre-rendered layer of ``app``'s middleware stack (built by a first request)."""
    if app.middleware_stack is None:
        exchange(app, "/healthz")
    node: Any = app.middleware_stack
    while not isinstance(node, FastReads):
        node = node.app
    return node


def both(app: FastAPI, path: str, query: str = "", **kw: Any) -> Iterator[list[Message]]:
    """The whole app's answer, then the routes' alone (given the scope's ``app`` as the app
    would give it)."""
    yield exchange(app, path, query, **kw)
    yield exchange(layer(app).app, path, query, app=app, **kw)


def status(messages: list[Message]) -> int:
    return int(messages[0]["status"])


# Answered by the layer: the plain forms of both paths.
ANSWERED = [
    ("/topics", ""),
    ("/topics", "top=1"),
    ("/topics", f"top={WORDS}"),
    ("/topics", "top=005"),
    ("/topics", "top=7&estimate=sample"),
    ("/topics", "estimate=mean&uncertainty=true"),
    ("/topics", "estimate=sample&uncertainty=true"),
    ("/topics", "uncertainty=false&sort=id"),
    ("/topics", "sort=coherence&top=3"),
    ("/topics", "sort=size&uncertainty=true&estimate=sample&top=12"),
    ("/topics", "top=%32"),
    ("/topics/0", ""),
    ("/topics/1", "top=3&uncertainty=true"),
    ("/topics/2", "estimate=sample&top=30"),
    (f"/topics/{K - 1}", "uncertainty=true&estimate=sample"),
    ("/topics/003", "top=1"),
]


@pytest.mark.parametrize(("path", "query"), ANSWERED)
def test_the_layer_answers_as_the_routes_do(app: FastAPI, path: str, query: str) -> None:
    fast, routed = both(app, path, query)
    assert layer(app)._memo[(path, query.encode())] is not None  # the layer answered
    assert status(fast) == 200 and fast == routed
    etag = dict(fast[0]["headers"])[b"etag"].decode()
    for current in (etag, f"W/{etag}", f'"old", {etag}', "*"):
        fast, routed = both(app, path, query, headers=(("If-None-Match", current),))
        assert status(fast) == 304 and fast == routed, current
    # Repeated If-None-Match headers are one list; a tag not current gets the body.
    twice = (("If-None-Match", '"old"'), ("If-None-Match", etag))
    fast, routed = both(app, path, query, headers=twice)
    assert status(fast) == 304 and fast == routed
    fast, routed = both(app, path, query, headers=(("If-None-Match", '"old"'),))
    assert status(fast) == 200 and fast == routed


# Left to the routes: errors, relevance, and names the layer does not know.
LEFT = [
    ("/topics", "top=0", 422),
    ("/topics", f"top={WORDS + 1}", 422),
    ("/topics", "top=1.5", 422),
    ("/topics", "top=+5", 422),
    ("/topics", "top=", 422),
    ("/topics", "top=5&top=6", 422),
    ("/topics", "estimate=median", 422),
    ("/topics", "uncertainty=1", 422),
    ("/topics", "sort=drift", 422),
    ("/topics", "relevance=2", 422),
    ("/topics", "relevance=0.6&estimate=sample", 409),
    ("/topics", "relevance=0.6", 503),  # the published model: Redis, unreachable here
    ("/topics", "top=5&unknown=1", 200),
    (f"/topics/{K}", "", 404),
    ("/topics/99999999999999999999", "", 422),
    ("/topics/-1", "", 422),
    ("/topics/x", "", 422),
    ("/topics/1", "sort=size", 200),  # not a parameter of one topic: ignored by the route
    ("/topics/1", "relevance=0.3&estimate=sample", 409),
    ("/topics/", "", 404),
]


@pytest.mark.parametrize(("path", "query", "code"), LEFT)
def test_what_the_layer_leaves_the_routes_answer(
    app: FastAPI, path: str, query: str, code: int
) -> None:
    fast, routed = both(app, path, query)
    assert layer(app)._memo[(path, query.encode())] is None  # the layer stepped aside
    assert status(fast) == code and fast == routed


def test_cors_and_other_methods_go_to_the_routes(app: FastAPI) -> None:
    fast, routed = both(app, "/topics", headers=(("Origin", "http://elsewhere.example"),))
    assert status(fast) == 200 and fast == routed
    fast, routed = both(app, "/topics", method="HEAD")
    assert status(fast) == 405 and fast == routed


def test_before_a_snapshot_both_answer_503() -> None:
    app = create_app(Settings(redis_url=UNREACHABLE, topic_words=WORDS))
    app.state.view.state = State(error=None)
    for path in ("/topics", "/topics/0"):
        fast, routed = both(app, path)
        assert status(fast) == 503 and fast == routed
