"""Odd but legal HTTP on the hot reads: huge or lax numbers, repeated parameters and repeated
If-None-Match headers get the schema's answers, the same from the pre-rendered path and the
routes, and never a 500."""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from tests.service.api.test_fast_reads import fast_layer
from tests.service.conftest import Published

pytestmark = pytest.mark.slow  # a real Redis behind the app

NINES = "9" * 4301
ODD = [
    (f"/topics?top={NINES}", 422),
    (f"/perplexity?since={'0' * 4400}5", 200),
    (f"/topics/{NINES}", 422),
    (f"/topics/{'0' * 4400}1", 200),
    ("/perplexity?since=x&since=3", 422),
    ("/perplexity?since=3&since=3", 422),
    ("/perplexity?since=3%0A", 422),
    ("/perplexity?since=%203", 422),
    ("/perplexity?since=1_000", 422),
    ("/topics?top=1_0", 422),
    ("/topics?top=%203", 422),
    ("/topics?top=3&top=4", 422),
    ("/topics/1?top=3%0A", 422),
    ("/topics?uncertainty=yes", 422),
    ("/topics/0001?top=002", 200),
]


@pytest.mark.parametrize(("query", "status"), ODD)
def test_both_paths_answer_odd_queries_as_the_schema_says(
    api: TestClient, published: Published, caplog: pytest.LogCaptureFixture, query: str, status: int
) -> None:
    caplog.set_level(logging.WARNING)
    fast = api.get(query)
    routed = api.get(query + ("&" if "?" in query else "?") + "unknown=1")  # the routes' way
    assert fast.status_code == routed.status_code == status
    assert fast.json() == routed.json()
    if status == 422:
        body = fast.json()
        assert body["detail"].startswith("invalid request: ") and body["errors"]
        assert len(body["detail"]) < 200  # the value is cut, never echoed whole
        path, _, raw = query.partition("?")
        assert fast_layer(api)._memo.get((path, raw.encode())) is None  # left to the routes
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_parameter_error_names_the_parameter(api: TestClient, published: Published) -> None:
    body = api.get(f"/topics?top={NINES}").json()
    assert body["errors"][0]["loc"] == ["query", "top"]
    assert "top" in body["detail"]
    assert api.get(f"/topics/{NINES}").json()["errors"][0]["loc"] == ["path", "topic_id"]


@pytest.mark.parametrize("path", ["/topics", "/topics/1", "/perplexity"])
def test_repeated_if_none_match_headers_are_one_list(
    api: TestClient, published: Published, path: str
) -> None:
    etag = api.get(path).headers["etag"]
    for query in (path, path + "?unknown=1"):  # the pre-rendered path, then the routes
        for first, second in (('"bogus"', etag), (etag, '"bogus"')):
            response = api.get(query, headers=[("If-None-Match", first), ("If-None-Match", second)])
            assert response.status_code == 304, (query, first, second)
        unmatched = [("If-None-Match", '"bogus"'), ("If-None-Match", '"other"')]
        assert api.get(query, headers=unmatched).status_code == 200


@pytest.mark.parametrize("path", ["/topics/", "/topics/3/", "/perplexity/", "/stats/"])
def test_a_trailing_slash_is_no_path_of_the_api(
    api: TestClient, published: Published, path: str
) -> None:
    response = api.get(path, follow_redirects=False)
    assert response.status_code == 404 and response.json()["detail"]


@pytest.mark.parametrize("path", ["/topics", "/topics/1", "/perplexity", "/stats"])
def test_a_method_the_schema_does_not_list_is_405_naming_get(
    api: TestClient, published: Published, path: str
) -> None:
    response = api.head(path)
    assert response.status_code == 405 and response.headers["allow"] == "GET"
