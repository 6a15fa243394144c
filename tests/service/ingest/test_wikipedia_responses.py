"""The live source survives any response: a body over the bound is read no further, and any
answer that cannot be decoded is a counted, retried failure. Fast: the answers come from a
canned transport (real urllib3 responses over bytes, no socket); the real server is in
test_wikipedia_hostile_api.py."""

from __future__ import annotations

import gzip
import io
import json
import threading
from dataclasses import replace
from typing import Any

import pytest
import requests
import urllib3
from requests.adapters import HTTPAdapter

from service.ingest.sources import SourceError, SourceStopped
from service.ingest.sources.wikipedia import (
    MOST_PAGES,
    WikipediaConfig,
    WikipediaSource,
    response_bound,
)
from service.store.article_limits import TITLE_CHARS
from tests.service.ingest.helpers import fast_settings

MAX_ARTICLE_BYTES = 4096
BOUND = response_bound(MAX_ARTICLE_BYTES)


def _page(page_id: int, title: str = "") -> dict[str, Any]:
    return {
        "pageid": page_id,
        "ns": 0,
        "title": title or f"Article {page_id}",
        "revisions": [{"slots": {"main": {"content": f"'''Article {page_id}''' is [[x]]."}}}],
    }


GOOD = json.dumps({"query": {"pages": [_page(1), _page(2)]}}).encode()


class Body(io.BytesIO):
    """A response body that records how much of it was read, and can set an event once read."""

    def __init__(self, data: bytes, then_set: threading.Event | None = None) -> None:
        super().__init__(data)
        self.then_set = then_set
        self.taken = 0  # bytes read from it

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.taken += len(data)
        if self.then_set is not None:
            self.then_set.set()
        return data


class Canned(HTTPAdapter):
    """A transport answering each request with the next (status, headers, body)."""

    def __init__(self, answers: list[tuple[int, dict[str, str], Body]]) -> None:
        super().__init__()
        self.answers = answers

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        status, headers, body = self.answers.pop(0)
        raw = urllib3.HTTPResponse(
            body=body, headers=headers, status=status, preload_content=False, decode_content=True
        )
        return self.build_response(request, raw)


def _source(
    *answers: tuple[int, dict[str, str], bytes | Body], **overrides: object
) -> tuple[WikipediaSource, list[Body]]:
    bodies = [body if isinstance(body, Body) else Body(body) for _, _, body in answers]
    session = requests.Session()
    session.mount(
        "http://", Canned([(s, h, b) for (s, h, _), b in zip(answers, bodies, strict=True)])
    )
    settings = fast_settings(
        wikipedia_api_url="http://api.test/w/api.php", max_article_bytes=MAX_ARTICLE_BYTES
    )
    config = replace(settings.part(WikipediaConfig), **overrides)  # type: ignore[arg-type]
    source = WikipediaSource(config, session=session, sleep=lambda _s: None)
    return source, bodies


def ok(body: bytes | Body, **headers: str) -> tuple[int, dict[str, str], bytes | Body]:
    return 200, headers, body


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (b"[" * 30_000 + b"]" * 30_000, "malformed_json"),  # RecursionError in the decoder
        (b'{"query": {"pages": [{"pageid": 1', "malformed_json"),
        (b'{"title": "caf\xe9"}', "malformed_json"),  # not UTF-8
        (b'["a list"]', "malformed_json"),
        (b'{"n": ' + b"9" * 5_000 + b"}", "malformed_json"),  # past int's digit limit
        (json.dumps({"query": {"pages": [{}] * (MOST_PAGES + 1)}}).encode(), "too_many_pages"),
    ],
)
def test_an_undecodable_answer_is_a_counted_retried_failure(answer: bytes, reason: str) -> None:
    source, _ = _source(ok(answer), ok(GOOD))
    articles = source.fetch_batch()
    assert [a.id for a in articles] == ["1", "2"]
    assert source.failures == {reason: 1} and source.retries == 1 and source.requests == 2
    assert source.health.failing_since is None  # the answer after it ended the run


def test_a_body_over_the_bound_is_read_no_further() -> None:
    unsized = b'{"padding": "' + b" " * (3 * BOUND) + b'"}'
    source, (first, second, _) = _source(
        ok(unsized, **{"Content-Length": str(len(unsized))}),
        ok(unsized),  # no length announced: read until the bound
        ok(GOOD),
    )
    assert len(source.fetch_batch()) == 2
    assert source.failures == {"too_large_response": 2}
    assert first.taken == 0  # refused by its announced length, unread
    assert BOUND < second.taken <= BOUND + 2 * 64 * 1024


def test_a_body_over_the_bound_once_decompressed_is_read_no_further() -> None:
    bomb = gzip.compress(b'{"padding": "' + b" " * (50 * BOUND) + b'"}')
    assert len(bomb) < BOUND
    source, _ = _source(ok(bomb, **{"Content-Encoding": "gzip"}), ok(GOOD))
    assert len(source.fetch_batch()) == 2
    assert source.failures == {"too_large_response": 1}


def test_a_broken_compression_is_a_counted_retried_failure() -> None:
    source, _ = _source(
        ok(gzip.compress(b"{}")[:10] + b"\xff" * 64, **{"Content-Encoding": "gzip"}), ok(GOOD)
    )
    assert len(source.fetch_batch()) == 2
    assert source.failures == {"broken_response": 1}


def test_failures_reach_the_health_tracker_and_end_in_a_clear_error() -> None:
    nested = b"[" * 30_000 + b"]" * 30_000
    assert len(nested) < BOUND
    source, _ = _source(ok(nested), ok(nested), ok(nested), max_retries=2)
    with pytest.raises(SourceError, match=r"gave up after 3 attempts \(last: malformed_json\)"):
        source.fetch_batch()
    assert source.health.failing_since is not None
    assert source.health.cause.startswith("malformed_json: RecursionError")


def test_a_stop_is_honoured_while_a_body_is_read() -> None:
    stop = threading.Event()
    body = Body(b'{"padding": "' + b" " * BOUND, then_set=stop)
    source, _ = _source(ok(body))
    source.stop = stop
    with pytest.raises(SourceStopped, match="reading a response"):
        source.fetch_batch()
    assert body.taken <= 2 * 64 * 1024


def test_an_unexpected_status_quotes_its_body_without_reading_it_all() -> None:
    body = Body(b"Not found. " * BOUND)
    source, _ = _source((404, {}, body))
    with pytest.raises(SourceError, match=r"HTTP 404: 'Not found\. ") as raised:
        source.fetch_batch()
    assert len(str(raised.value)) < 400 and body.taken <= 64 * 1024


def test_a_long_title_is_cut_and_a_long_page_id_skipped() -> None:
    pages = [_page(1, "T" * 100_000), _page(10**250), _page(2)]
    source, _ = _source(
        ok(json.dumps({"query": {"pages": pages}}).encode()), max_article_bytes=10**6
    )
    articles = source.fetch_batch()
    assert [a.id for a in articles] == ["1", "2"]
    assert len(articles[0].title) == TITLE_CHARS and articles[0].title.endswith("\u2026")
    assert source.skipped.counts == {"id_too_long": 1} and source.skipped.truncated == {"title": 1}
