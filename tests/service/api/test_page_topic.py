"""The page's topic view in headless Chromium, on the real API and a real Redis: a topic's name
(an operator's or the suggested one), size, words by relevance with their intervals, the
articles behind it and its history; and the list sorted by size.

The snapshot carries what a worker keeping the topic record publishes (sizes, articles,
suggested names, intervals), beside a model with the stream's word counts for relevance and,
where a test wants one, a history of evaluations. Deep links (``/#topic=2&lambda=1``) stand in
for clicks, as in test_page.py, whose helpers these tests share.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import numpy as np
import redis
from fastapi import Request, Response

from service.api.app import create_app
from service.keys import MODEL_KEY
from service.settings import Settings
from service.store.published_model import StreamFigures, publish_model
from service.store.snapshot import publish_snapshot
from service.store.topic_history import HistoryPoint, append_topic_history
from service.store.topic_names import set_topic_name
from tests.service.api.test_page import IN_CHROMIUM, chromium, dump_dom, element, rows, text
from tests.service.conftest import (
    VOCAB,
    K,
    Published,
    serve,
    watch_fields,
    watched_topics,
)

pytestmark = IN_CHROMIUM

SIZES = [0.5, 0.2, 0.3]
SUGGESTED = ["apple · banana · cherry", "engine · piston · turbine", "sonata · violin · cello"]
NAME = "Classical music"
WIKI_TITLE, WIKI_ID = "Symphony No. 5 (Beethoven)", "4321"
FILE_TITLE = "Notes on the cello & its bow"
ARTICLES: list[list[list[object]]] = [
    [["Apple pie", "77", "wikipedia", 0.64, 2800]],
    [],  # topic 1: none yet
    [[WIKI_TITLE, WIKI_ID, "wikipedia", 0.823, 2500], [FILE_TITLE, "cello-7", "file", 0.41, 2900]],
]
# Topic 2 over four evaluations: its words changed at the second and the fourth, and the first
# had no held-out document with its words (no coherence).
HISTORY_DOCS = [1000, 2000, 3000, 4000]
CHANGED = [False, True, False, True]
COHERENCE_2 = [None, 0.21, 0.26, 0.31]
EARLIEST = ["sonata", "violin", "cello", "opera"]
LATEST = ["violin", "sonata", "opera", "cello"]
# The stream's word counts: "sonata" is everywhere, so by relevance it falls behind the words
# peculiar to topic 2.
COMMON = "sonata"


def publish_record(client: redis.Redis, published: Published, *, history: bool) -> None:
    """Publish what a worker keeping the topic record publishes over ``published``: sizes,
    articles, suggestions and intervals in the snapshot, the stream's figures beside beta, an
    operator's name for topic 2 and (with ``history``) four evaluations of every topic."""
    fields = watch_fields(watched_topics(published), published)
    snapshot = dataclasses.replace(
        published.snapshot,
        **fields,
        topic_size=SIZES,
        topic_articles=ARTICLES,
        topic_suggested=SUGGESTED,
    )
    publish_snapshot(client, snapshot)
    counts = np.full(len(VOCAB), 10.0)
    counts[VOCAB.index(COMMON)] = 1000.0
    stream = StreamFigures(
        term_frequency=counts,
        topic_size=np.array(SIZES),
        doc_lengths=np.array([40], dtype=np.int64),
        doc_topic=np.full((1, K), 1 / K, dtype=np.float32),
    )
    publish_model(client, published.beta, VOCAB, docs_seen=3000, gamma=0.1, stream=stream)
    set_topic_name(client, 2, NAME)
    if not history:
        return
    now = time.time()
    for i, docs in enumerate(HISTORY_DOCS):
        point = HistoryPoint(
            docs_seen=docs,
            at=now - 100 + i,
            size=[0.45 + 0.01 * i, 0.25 - 0.01 * i, 0.3],
            coherence=[0.1, None, COHERENCE_2[i]],
            drift=[None if i == 0 else 0.01, None if i == 0 else 0.02, None if i == 0 else 0.07],
            changed=[False, False, CHANGED[i]],
            words=[VOCAB[0:4], VOCAB[4:8], LATEST if i == len(HISTORY_DOCS) - 1 else EARLIEST],
        )
        append_topic_history(client, point, keep=100)


def detail_of(dom: str) -> str:
    return element(dom, r'<aside id="detail".*?</aside>')


def bar_words(detail: str) -> list[str]:
    """The words of the topic view's bars, top to bottom."""
    return re.findall(r'<text[^>]*class="word"[^>]*>([^<]*)</text>', detail)


def test_topic_view_shows_name_size_words_articles_and_history(
    redis_client: redis.Redis, published: Published, settings: Settings, tmp_path: Path
) -> None:
    publish_record(redis_client, published, history=True)
    with serve(create_app(settings)) as url:
        dom = dump_dom(url + "#topic=2", tmp_path / "profile")
        by_probability = dump_dom(url + "#topic=2&lambda=1", tmp_path / "profile")
    detail = detail_of(dom)
    heading = element(detail, r'<h2 id="topic-heading">.*?</h2>')
    assert text(heading) == f"Topic 2 {NAME}"  # an operator's name: not marked as suggested
    assert "suggested" not in heading
    facts = dict(re.findall(r'<dd data-fact="([^"]+)">([^<]*)</dd>', detail))
    assert facts["size"] == "30% of the stream's tokens"

    # By relevance (the page's default lambda): the word common to the whole stream drops from
    # first to behind the topic's own words; at lambda 1 the order is by probability again.
    assert bar_words(detail)[:4] == ["violin", "cello", "opera", COMMON]
    assert "Ranked by relevance at λ = 0.6" in text(detail)
    assert re.search(r'<input type="range" id="lambda"[^>]*value="0.6"', detail)
    assert bar_words(detail_of(by_probability))[:4] == ["sonata", "violin", "cello", "opera"]
    assert "Ranked by probability" in text(detail_of(by_probability))
    # every word of the vocabulary, each with its bar and its interval
    assert len(re.findall(r'<rect[^>]*class="bar"', detail)) == len(VOCAB)
    assert len(re.findall(r'class="whisker interval"', detail)) == len(VOCAB)

    articles = element(detail, r'<ol class="articles" id="topic-articles">.*?</ol>')
    items = re.findall(r'<li data-source="([^"]+)">(.*?)</li>', articles, flags=re.S)
    assert [source for source, _ in items] == ["wikipedia", "file"]
    wiki, file = items[0][1], items[1][1]
    link = re.search(r'<a href="([^"]+)"[^>]*>([^<]*)</a>', wiki)
    assert link is not None and link.groups() == (
        f"https://en.wikipedia.org/?curid={WIKI_ID}",
        WIKI_TITLE,
    )
    assert text(wiki) == f"{WIKI_TITLE} 82%"
    assert "<a" not in file and text(file) == f"{FILE_TITLE} 41% file"

    chart = element(detail, r'<svg id="topic-history".*?</svg>')
    sizes = re.findall(r'<circle[^>]*class="hpoint hsize( changed)?"', chart)
    assert len(sizes) == len(HISTORY_DOCS)  # one point per evaluation
    assert [bool(c) for c in sizes] == CHANGED  # the changed ones marked
    coherence = re.findall(r'<circle[^>]*class="hpoint hcoherence', chart)
    assert len(coherence) == sum(c is not None for c in COHERENCE_2)
    assert chart.count('class="changed-mark"') == sum(CHANGED)
    words = dict(re.findall(r'<dd data-history="(\w+)">([^<]*)</dd>', detail))
    assert words == {"earliest": " ".join(EARLIEST), "latest": " ".join(LATEST)}
    assert "at 1,000 docs" in text(detail) and "at 4,000 docs" in text(detail)


def test_topic_view_says_what_is_missing_and_ranks_by_probability_without_a_model(
    redis_client: redis.Redis, published: Published, settings: Settings, tmp_path: Path
) -> None:
    publish_record(redis_client, published, history=False)
    redis_client.delete(MODEL_KEY)  # no model to rank by relevance: /topics/1?relevance= is 503
    with serve(create_app(settings)) as url:
        dom = dump_dom(url + "#topic=1", tmp_path / "profile")
    detail = detail_of(dom)
    heading = element(detail, r'<h2 id="topic-heading">.*?</h2>')
    assert text(heading) == f"Topic 1 {SUGGESTED[1]} suggested"
    assert 'class="topic-name suggested"' in heading
    assert 'class="bad"' not in detail  # the 503 is not shown: words by probability instead
    assert bar_words(detail)[:4] == ["engine", "piston", "turbine", "valve"]
    assert "Ranked by probability" in text(detail)
    assert "no articles yet" in text(element(detail, r'<p [^>]*id="topic-articles".*?</p>'))
    history = element(detail, r'<section id="topic-history-section".*?</section>')
    assert "no evaluation yet" in text(history) and "<svg" not in history


def test_topics_sort_by_size_and_show_names(
    redis_client: redis.Redis, published: Published, settings: Settings, tmp_path: Path
) -> None:
    publish_record(redis_client, published, history=False)
    with serve(create_app(settings)) as url:
        by_id = rows(dump_dom(url, tmp_path / "profile"))
        dom = dump_dom(url + "#sort=size", tmp_path / "profile")
    assert [k for k, _ in by_id] == [0, 1, 2]
    listed = rows(dom)
    assert [k for k, _ in listed] == [0, 2, 1]  # largest first
    assert re.search(r'data-sort="size" aria-pressed="true"', dom)
    size = re.compile(r'<td class="size"[^>]*><span class="num">([^<]*)</span>')
    assert [size.findall(row) for _, row in listed] == [["50%"], ["30%"], ["20%"]]
    name = re.compile(r'<span class="(tname[^"]*)"[^>]*>([^<]*)</span>')
    assert {k: name.findall(row) for k, row in listed} == {
        0: [("tname suggested", SUGGESTED[0])],
        1: [("tname suggested", SUGGESTED[1])],
        2: [("tname", NAME)],
    }
    assert "apple banana cherry grape" in text(listed[0][1])  # the top words still there


def test_screenshot_draws_the_topic_view(
    redis_client: redis.Redis, published: Published, settings: Settings, tmp_path: Path
) -> None:
    from PIL import Image as image_module

    publish_record(redis_client, published, history=True)
    png = tmp_path / "topic.png"
    with serve(create_app(settings)) as url:
        chromium(
            url + "#sort=size&topic=2",
            tmp_path / "profile",
            "--hide-scrollbars",
            "--window-size=1280,1700",
            f"--screenshot={png}",
        )
    with image_module.open(png) as image:
        assert image.size == (1280, 1700)
        rgb = image.convert("RGB")
    colours = rgb.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # not blank
    present = {colour for _, colour in colours}

    def drawn(hex_colour: str) -> bool:
        want = bytes.fromhex(hex_colour)
        return any(all(abs(a - b) <= 3 for a, b in zip(c, want, strict=True)) for c in present)

    # the size line and meters, the coherence line, the changed marks, the word bars
    for colour in ("3a6fb0", "2a8a3e", "c77800", "9fbfe3"):
        assert drawn(colour), colour


GOOD_LINK = "https://en.wikipedia.org/?curid=3"
HOSTILE_LINKS = [
    "https://evil.example/?curid=1",
    "http://en.wikipedia.org/?curid=2",  # not https
    "https://en.wikipedia.org.evil.example/?curid=4",
    "https://en.wikipedia.org@evil.example/?curid=5",
    "javascript:alert(1)",
    "//evil.example/?curid=6",
]


def test_articles_link_only_to_the_wiki(
    redis_client: redis.Redis, published: Published, settings: Settings, tmp_path: Path
) -> None:
    """The server builds every link, but the page trusts none it is given: an answer whose
    articles point anywhere but the live source's wiki shows them as plain text."""
    publish_record(redis_client, published, history=False)
    app = create_app(settings)

    @app.middleware("http")
    async def hostile(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        if request.url.path != "/topics/2" or response.status_code != 200:
            return response
        body = b"".join([chunk async for chunk in response.body_iterator])  # type: ignore[attr-defined]
        data = json.loads(body)
        data["articles"] = [
            {"title": f"article {i}", "id": str(i), "source": "wikipedia", "share": 0.5,
             "docs_seen": 100, "url": url}
            for i, url in enumerate([GOOD_LINK, *HOSTILE_LINKS])
        ]  # fmt: skip
        return Response(json.dumps(data), media_type="application/json")

    with serve(app) as url:
        dom = dump_dom(url + "#topic=2", tmp_path / "profile")
    articles = element(detail_of(dom), r'<ol class="articles" id="topic-articles">.*?</ol>')
    assert re.findall(r'<a href="([^"]*)"', articles) == [GOOD_LINK]
    shown = re.findall(r'<li data-source="wikipedia">(.*?)</li>', articles, flags=re.S)
    assert [text(item).split()[:2] for item in shown] == [
        ["article", str(i)] for i in range(1 + len(HOSTILE_LINKS))
    ]
    assert "evil" not in articles and "javascript" not in articles
