"""The live Wikipedia source against the stand-in MediaWiki API: politeness and faults."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from service.ingest.sources import SourceError, open_source
from service.ingest.sources.wikipedia import (
    WikipediaConfig,
    WikipediaSource,
    parse_retry_after,
    user_agent,
)
from tests.service.ingest.helpers import fast_settings
from tests.support.corpora import RawPage, dump_pages
from tests.support.wikipedia_api import FakeWikipediaAPI, is_disambiguation_page

MakeAPI = Callable[..., FakeWikipediaAPI]


def _plain_pages(count: int, first_id: int = 1) -> list[RawPage]:
    return [
        RawPage(
            pageid=first_id + i,
            ns=0,
            title=f"Article {first_id + i}",
            wikitext=f"'''Article {first_id + i}''' is about [[topic {i}|things]].",
        )
        for i in range(count)
    ]


def _source(api: FakeWikipediaAPI, **overrides: object) -> WikipediaSource:
    return WikipediaSource(
        fast_settings(wikipedia_api_url=api.url, **overrides).part(WikipediaConfig)
    )


@pytest.mark.slow
def test_requests_are_polite_and_well_formed(make_wikipedia_api: MakeAPI) -> None:
    api = make_wikipedia_api(pages=_plain_pages(120))
    source = _source(api, contact="ops@example.org", articles_per_request=50)
    articles = source.fetch_batch()
    assert len(articles) == 50 and articles[0].source == "wikipedia"
    record = api.requests[0]
    assert record.params["maxlag"] == "5"
    assert record.params["grnlimit"] == "50" and record.params["grnnamespace"] == "0"
    assert record.params["rvslots"] == "main" and "content" in record.params["rvprop"]
    agent = record.headers["User-Agent"]
    assert agent == user_agent("ops@example.org")
    assert agent.startswith("streamlda/") and "ops@example.org" in agent
    assert "python-requests/" in agent
    assert source.fetch_batch(limit=7) and api.requests[1].params["grnlimit"] == "7"


@pytest.mark.slow
def test_rate_limit_spaces_requests(make_wikipedia_api: MakeAPI) -> None:
    api = make_wikipedia_api(pages=_plain_pages(200))
    source = _source(api, rate=10.0, articles_per_request=5)
    for _ in range(6):
        source.fetch_batch()
    starts = [r.started for r in api.requests]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(gaps) == 5
    # At most 10 requests per second, evenly spaced (server-side times jitter a little).
    assert starts[-1] - starts[0] >= 0.5 - 0.02, gaps
    assert min(gaps) >= 0.05, gaps


@pytest.mark.slow
def test_429_waits_at_least_retry_after(make_wikipedia_api: MakeAPI) -> None:
    api = make_wikipedia_api(pages=_plain_pages(60), retry_after=1)
    api.inject("429")
    source = _source(api)
    articles = source.fetch_batch()
    assert len(articles) == 50
    refused, retried = api.requests
    assert refused.outcome == "429" and retried.outcome == "ok"
    waited = retried.started - refused.finished
    assert waited >= 1.0, f"retried after {waited:.3f} s, Retry-After asked 1 s"
    assert source.retries == 1 and source.failures == {"http_429": 1}


@pytest.mark.slow
def test_maxlag_error_body_is_retried_after_retry_after(make_wikipedia_api: MakeAPI) -> None:
    api = make_wikipedia_api(pages=_plain_pages(60), retry_after=1)
    api.inject("maxlag")
    source = _source(api)
    assert len(source.fetch_batch()) == 50
    lagged, retried = api.requests
    assert retried.started - lagged.finished >= 1.0
    assert source.failures == {"api_maxlag": 1}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("503", "http_503"),
        ("reset", "connection"),
        ("slow", "timeout"),
        ("malformed", "malformed_json"),
    ],
)
def test_transient_faults_are_retried(make_wikipedia_api: MakeAPI, fault: str, reason: str) -> None:
    api = make_wikipedia_api(pages=_plain_pages(60), slow_seconds=1.5)
    api.inject(fault, fault)
    source = _source(api, request_timeout=0.4)
    articles = source.fetch_batch()
    assert len(articles) == 50
    assert source.failures == {reason: 2} and source.retries == 2 and source.requests == 3
    if fault == "malformed":
        assert source.skipped.counts["malformed_json"] == 2


@pytest.mark.slow
def test_giving_up_after_max_retries_is_a_clear_error(make_wikipedia_api: MakeAPI) -> None:
    api = make_wikipedia_api(pages=_plain_pages(10))
    api.inject(*["503"] * 4)
    source = _source(api, max_retries=2)
    with pytest.raises(SourceError, match=r"gave up after 3 attempts \(last: http_503\)"):
        source.fetch_batch()
    assert len(api.requests) == 3


@pytest.mark.slow
def test_wrong_endpoint_fails_fast(make_wikipedia_api: MakeAPI) -> None:
    api = make_wikipedia_api(pages=_plain_pages(10))
    source = WikipediaSource(
        fast_settings(wikipedia_api_url=api.url.replace("api.php", "x")).part(WikipediaConfig)
    )
    with pytest.raises(SourceError, match="HTTP 404"):
        source.fetch_batch()
    assert len(api.requests) == 1


@pytest.mark.slow
def test_broken_pages_are_skipped_and_counted(make_wikipedia_api: MakeAPI) -> None:
    api = make_wikipedia_api(pages=_plain_pages(10))
    api.inject("empty_revisions")
    source = _source(api, articles_per_request=10)
    articles = source.fetch_batch()
    assert sorted(int(a.id) for a in articles) == list(range(1, 11))
    assert dict(source.skipped.counts) == {"no_revisions": 2, "no_content": 1, "missing": 1}


@pytest.mark.slow
@pytest.mark.parametrize("pageprops", [True, False])
def test_redirects_and_disambiguation_pages_are_skipped(
    make_wikipedia_api: MakeAPI, pageprops: bool
) -> None:
    main = [p for p in dump_pages() if p.ns == 0]
    bad = [p for p in main if p.redirect or is_disambiguation_page(p)]
    good = sorted((p for p in main if p not in bad), key=lambda p: len(p.wikitext))[:10]
    api = make_wikipedia_api(
        pages=bad + good, serve_redirects=True, disambiguation_pageprops=pageprops
    )
    source = _source(api)
    articles = [a for _ in range(3) for a in source.fetch_batch()]  # 150 >= the 117 pages
    assert {a.id for a in articles} == {str(p.pageid) for p in api.good_pages()}
    assert source.skipped.counts["redirect"] >= 99
    assert source.skipped.counts["disambiguation"] >= 8
    assert all("{{" not in a.text and "[[" not in a.text for a in articles)


@pytest.mark.slow
def test_open_source_builds_the_live_source_from_settings(make_wikipedia_api: MakeAPI) -> None:
    api = make_wikipedia_api(pages=_plain_pages(5))
    source = open_source(
        "wikipedia", wikipedia=fast_settings(wikipedia_api_url=api.url).part(WikipediaConfig)
    )
    assert isinstance(source, WikipediaSource)
    assert len(list(zip(range(5), source, strict=False))) == 5


def test_retry_after_header_forms() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
