"""The page's search in headless Chromium, on the real API and a real Redis: the box that lists
the kept articles like a pasted text (``POST /similar``), and a topic view's "more articles"
that pages through ``GET /topics/{id}/articles``.

The model is published with an index of kept articles (test_search.py's rows). As in
test_page.py, whose helpers these tests share, deep links stand in for clicks: ``#search=<text>``
fills the box and submits it, ``#topic=2&more=2`` is the topic view after two clicks on "more
articles" (a click sets ``more`` in the link and asks for the next page, so both take the same
path). Each page's answer is compared with the API's own answer over HTTP.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import redis
from fastapi import Request, Response

from service.api.app import create_app
from service.settings import Settings
from service.store.published_model import publish_model
from service.store.search import IndexRows
from service.store.snapshot import publish_snapshot
from service.store.topic_names import set_topic_name
from tests.service.api.test_page import (
    IN_CHROMIUM,
    csp_violations,
    dump_dom,
    element,
    run_chromium,
    text,
)
from tests.service.api.test_search import index_rows
from tests.service.conftest import VOCAB, Published, serve

pytestmark = IN_CHROMIUM

TEXT = "violin cello opera sonata violin engine"
SEARCH_LIMIT = 20  # the page's SEARCH_LIMIT: articles it asks POST /similar for
MORE_PAGE = 10  # the page's MORE_PAGE: articles per click on "more articles"
NAME = "Classical music"
TIMEOUT_S = 30
# The snapshot's list behind topic 2, from a worker that keeps each share's bound and length.
SNAPSHOT_ARTICLES: list[list[list[Any]]] = [
    [],
    [],
    [["Symphony No. 5 (Beethoven)", "4321", "wikipedia", 0.823, 2500]],
]
SNAPSHOT_BOUNDS: list[list[list[float]]] = [[], [], [[0.641, 1800]]]  # [share_bound, tokens]


@pytest.fixture
def with_index(redis_client: redis.Redis, published: Published) -> IndexRows:
    """The published model with an index of kept articles, and a name for topic 2."""
    rows = index_rows()
    publish_model(redis_client, published.beta, VOCAB, docs_seen=3000, gamma=0.1, index=rows)
    set_topic_name(redis_client, 2, NAME)
    return rows


def items(fragment: str) -> list[tuple[str, str, str]]:
    """(source, id, HTML) of each article listed in ``fragment``, in order."""
    found = re.findall(
        r'<li data-source="([^"]+)" data-id="([^"]+)">(.*?)</li>', fragment, flags=re.S
    )
    return [(source, article_id, item) for source, article_id, item in found]


def title_link(item: str) -> tuple[str, str] | None:
    """(href, text) of an article's title link; None when its title is plain text."""
    match = re.match(r'<a href="([^"]*)" target="_blank"[^>]*>([^<]*)</a>', item)
    return None if match is None else (match.group(1), match.group(2))


def percent(shown: str) -> float:
    """A share the page shows ("64%", "4.2%") as a fraction."""
    assert re.fullmatch(r"\d+(\.\d)?%", shown), shown
    return float(shown[:-1]) / 100


def assert_shown(shown: str, share: float) -> None:
    """``shown`` is ``share`` as the page rounds it: whole percents from 10%, tenths below."""
    step = 0.01 if share >= 0.1 else 0.001
    assert abs(percent(shown) - share) <= step / 2 + 1e-9, (shown, share)


def similar(url: str, text: str, limit: int) -> dict[str, Any]:
    answer = httpx.post(url + "similar", json={"text": text, "limit": limit}, timeout=TIMEOUT_S)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def topic_page(url: str, topic: int, offset: int) -> dict[str, Any]:
    params = {"limit": MORE_PAGE, "offset": offset}
    answer = httpx.get(f"{url}topics/{topic}/articles", params=params, timeout=TIMEOUT_S)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_the_search_box_lists_the_articles_like_a_text(
    with_index: IndexRows, settings: Settings, tmp_path: Path
) -> None:
    with serve(create_app(settings)) as url:
        run = run_chromium(url + "#search=" + quote(TEXT), tmp_path / "profile", "--dump-dom")
        answer = similar(url, TEXT, SEARCH_LIMIT)
    assert csp_violations(run.stderr) == []  # the POST is to this origin: connect-src allows it
    assert "Uncaught" not in run.stderr, run.stderr[-2000:]
    dom = run.stdout
    results = element(dom, r'<ol class="articles" id="search-results">.*?</ol>')
    listed = items(results)
    assert len(answer["articles"]) == SEARCH_LIMIT
    assert [article_id for _, article_id, _ in listed] == [a["id"] for a in answer["articles"]]
    for (source, _, item), article in zip(listed, answer["articles"], strict=True):
        assert source == article["source"]
        assert title_link(item) == (article["url"], article["title"])
        assert f"distance {article['distance']:.3f}" in text(item)
        # its topics, largest first, each a link to the topic's view; topic 2 with its name
        topics = re.findall(r'<a href="#topic=(\d+)"[^>]*data-topic="(\d+)"[^>]*>([^<]*)</a>', item)
        assert [int(k) for k, _, _ in topics] == [t["id"] for t in article["topics"]]
        assert all(k == shown for k, shown, _ in topics)
        for _, k, label in topics:
            assert label == f"topic {k} {NAME}" if k == "2" else label.startswith(f"topic {k}")
    status = text(element(dom, r'<p id="search-status"[^>]*>.*?</p>'))
    assert status.startswith(f"{answer['tokens']} of its words in the vocabulary")
    assert f"its topics: topic 2 {NAME} " in status  # the music topic first
    assert f"The {SEARCH_LIMIT} nearest kept articles" in status


def test_a_topics_more_articles_page_through_its_kept_articles(
    with_index: IndexRows,
    redis_client: redis.Redis,
    published: Published,
    settings: Settings,
    tmp_path: Path,
) -> None:
    snapshot = dataclasses.replace(
        published.snapshot, topic_articles=SNAPSHOT_ARTICLES, topic_article_bounds=SNAPSHOT_BOUNDS
    )
    publish_snapshot(redis_client, snapshot)
    with serve(create_app(settings)) as url:
        before = dump_dom(url + "#topic=2", tmp_path / "profile")
        two = dump_dom(url + "#topic=2&more=2", tmp_path / "profile")
        every = dump_dom(url + "#topic=2&more=50", tmp_path / "profile")
        first = topic_page(url, 2, 0)
        pages = [first]
        while pages[-1]["offset"] + MORE_PAGE < first["total"]:
            pages.append(topic_page(url, 2, pages[-1]["offset"] + MORE_PAGE))
    total = first["total"]
    assert total > 2 * MORE_PAGE  # a third page remains after two
    kept = [a for page in pages for a in page["articles"]]
    assert len(kept) == total

    # The snapshot's list shows how sure each share is.
    listed = element(before, r'<ol class="articles" id="topic-articles">.*?</ol>')
    assert text(listed) == "Symphony No. 5 (Beethoven) 82% ≥ 64%"
    assert "given the article's 1,800 tokens" in listed
    # Before a click: the button alone.
    more = element(before, r'<div id="topic-more">.*?</div>')
    assert re.fullmatch(
        r'<div id="topic-more"><button type="button" class="action" id="topic-more-button"'
        r"[^>]*>more articles</button></div>",
        more,
    )

    # After two clicks: the first two pages, in order, with each share and its bound.
    more = element(two, r'<div id="topic-more">.*?</div>')
    shown = items(more)
    assert [article_id for _, article_id, _ in shown] == [a["id"] for a in kept[: 2 * MORE_PAGE]]
    for (source, _, item), article in zip(shown, kept, strict=False):
        assert source == article["source"]
        assert title_link(item) == (article["url"], article["title"])
        share, bound = re.findall(r'<span class="(?:share|bound)"[^>]*>([^<]*)</span>', item)
        assert_shown(share, article["share"])
        assert bound.startswith("≥ ")
        assert_shown(bound[2:], article["share_bound"])
        assert f"given the article's {article['tokens']:,} tokens" in item
    note = text(element(more, r'<p class="muted" id="topic-more-note">.*?</p>'))
    assert note.startswith(f"{2 * MORE_PAGE} of {total} kept articles")
    assert 'id="topic-more-button"' in more  # more to come

    # Clicked until the last page: every kept article, and no button.
    more = element(every, r'<div id="topic-more">.*?</div>')
    assert [article_id for _, article_id, _ in items(more)] == [a["id"] for a in kept]
    assert text(element(more, r"<p .*?</p>")).startswith(f"all {total} kept articles")
    assert "<button" not in more


def test_without_kept_articles_search_says_so(
    published: Published, settings: Settings, tmp_path: Path
) -> None:
    """No index (a worker without revisits and search): the search says why in a muted note,
    and "more articles" gives way to the same note."""
    with serve(create_app(settings)) as url:
        dom = dump_dom(url + "#topic=2&more=1&search=opera", tmp_path / "profile")
    status = element(dom, r'<p id="search-status"[^>]*>.*?</p>')
    assert 'class="muted"' in status and text(status).startswith("no kept articles")
    assert '<ol class="articles" id="search-results" hidden=""></ol>' in dom
    more = element(dom, r'<div id="topic-more">.*?</div>')
    assert text(more).startswith("no kept articles")
    assert 'class="muted"' in more and "<button" not in more and "<li" not in more


GOOD_LINK = "https://en.wikipedia.org/?curid=3"
HOSTILE_LINKS = [
    "https://evil.example/?curid=1",
    "http://en.wikipedia.org/?curid=2",  # not https
    "https://en.wikipedia.org@evil.example/?curid=5",
    "javascript:alert(1)",
    "//evil.example/?curid=6",
]


def test_found_articles_link_only_to_the_wiki(
    with_index: IndexRows, settings: Settings, tmp_path: Path
) -> None:
    """Like the topic view's list (test_page_topic.py), the search's answers and a topic's
    more articles link only to the live source's wiki, whatever the answer says."""
    app = create_app(settings)

    @app.middleware("http")
    async def hostile(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        searched = request.url.path in ("/similar", "/topics/2/articles")
        if not searched or response.status_code != 200:
            return response
        body = b"".join([chunk async for chunk in response.body_iterator])  # type: ignore[attr-defined]
        data = json.loads(body)
        for article, link in zip(data["articles"], [GOOD_LINK, *HOSTILE_LINKS], strict=False):
            article["url"] = link
        return Response(json.dumps(data), media_type="application/json")

    with serve(app) as url:
        dom = dump_dom(url + "#topic=2&more=1&search=" + quote(TEXT), tmp_path / "profile")
    for found in (
        element(dom, r'<ol class="articles" id="search-results">.*?</ol>'),
        element(dom, r'<ol class="articles" id="topic-more-list">.*?</ol>'),
    ):
        titles = [title_link(item) for _, _, item in items(found)]
        assert titles[0] is not None and titles[0][0] == GOOD_LINK
        assert titles[1 : 1 + len(HOSTILE_LINKS)] == [None] * len(HOSTILE_LINKS)
        assert "evil" not in found and "javascript" not in found
