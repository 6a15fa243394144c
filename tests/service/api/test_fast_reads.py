"""The polled reads answered before routing (service.api.reads.prerendered) are the routes'
answers: same status, body, ETag and 304s, the latency histogram kept; anything else goes on to
the routes."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.api.reads.prerendered import FastReads
from tests.service.conftest import Published

pytestmark = pytest.mark.slow


def fast_layer(api: TestClient) -> FastReads:
    node: Any = api.app.middleware_stack  # type: ignore[attr-defined]
    while not isinstance(node, FastReads):
        node = node.app
    return node


QUERIES = [
    "/topics",
    "/topics?top=5",
    "/topics?top=3&estimate=sample&uncertainty=true&sort=coherence",
    "/topics/2",
    "/topics/0?top=2&estimate=sample",
    "/topics/1/history",
    "/perplexity",
    "/perplexity?since=1000",
    "/stats",
]


@pytest.mark.parametrize("query", QUERIES)
def test_fast_answers_equal_the_routes(api: TestClient, published: Published, query: str) -> None:
    fast = api.get(query)
    path, _, raw = query.partition("?")
    assert fast_layer(api)._memo.get((path, raw.encode())) is not None  # answered there
    # An unknown parameter (ignored by the route) sends the request the slow way.
    routed = api.get(query + ("&" if "?" in query else "?") + "unknown=1")
    assert fast.status_code == routed.status_code == 200
    if path == "/stats":  # its live values move with every refresh of the view
        ages = ("heartbeat_age_s", "queue", "heartbeat_at")
        assert {k: v for k, v in fast.json().items() if k not in ages} == {
            k: v for k, v in routed.json().items() if k not in ages
        }
        headers: tuple[str, ...] = ("cache-control", "content-type")
    else:
        assert fast.content == routed.content
        headers = ("etag", "cache-control", "content-type", "content-length")
    for header in headers:
        assert fast.headers[header] == routed.headers[header], header
    if path != "/stats":
        again = api.get(query, headers={"If-None-Match": fast.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
        assert again.headers["etag"] == fast.headers["etag"]


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("/topics?top=0", 422),
        ("/topics?top=101", 422),
        ("/topics?top=1.5", 422),
        ("/topics?estimate=median", 422),
        ("/topics?sort=drift", 422),
        ("/topics/3", 404),
        ("/topics/3/history", 404),
        ("/topics/x/history", 422),
        ("/topics/-1", 422),
        ("/topics?uncertainty=1", 422),
        ("/topics/x", 422),
        ("/perplexity?since=-1", 422),
    ],
)
def test_what_the_fast_layer_cannot_answer_goes_to_the_routes(
    api: TestClient, published: Published, query: str, status: int
) -> None:
    response = api.get(query)
    assert response.status_code == status and response.json()["detail"]


def test_fast_answers_are_timed_by_route(api: TestClient, published: Published) -> None:
    for query in ("/topics", "/topics?top=2", "/topics/1", "/perplexity", "/stats"):
        assert api.get(query).status_code == 200
    metrics = api.get("/metrics").text
    count = "streamlda_http_request_duration_seconds_count"
    assert f'{count}{{method="GET",route="/topics"}} 2.0' in metrics
    assert f'{count}{{method="GET",route="/topics/{{topic_id}}"}} 1.0' in metrics
    assert f'{count}{{method="GET",route="/perplexity"}} 1.0' in metrics
    assert f'{count}{{method="GET",route="/stats"}} 1.0' in metrics


def test_nothing_served_yet_goes_to_the_routes(api: TestClient) -> None:
    response = api.get("/topics")
    assert response.status_code == 503 and "first snapshot" in response.json()["detail"]
