"""The page at ``/`` in headless Chromium, on the real API and a real Redis.

DOM tests read what Chromium serialises after the page's scripts ran (``--dump-dom``, with a
virtual-time budget that lets the first fetches finish); the page's deep links
(``/#sort=coherence&topic=2``) stand in for clicks. A screenshot test checks that the page is
drawn, in colour, with its plots and bars.
"""

from __future__ import annotations

import dataclasses
import html
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest
import redis
from fastapi import Request, Response

from service.api.app import create_app
from service.api.routes import page as page_route
from service.learn.topic_watch import TopicWatch
from service.settings import Settings
from service.store.control import set_paused
from service.store.perplexity import PerplexityPoint, append_perplexity
from service.store.snapshot import publish_snapshot
from service.store.source_status import SourceStatus, publish_source_status
from tests.service.conftest import (
    VOCAB,
    Published,
    serve,
    watch_fields,
    watched_topics,
)

CHROMIUM = shutil.which("chromium")
CHROMIUM_TIMEOUT_S = 60
VIRTUAL_TIME_MS = 5000
QUEUE_LENGTH, QUEUE_PENDING = 7, 3

# Every page test: slow (a Redis, a server and Chromium), and skipped without Chromium.
IN_CHROMIUM = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)"
    ),
]
pytestmark = IN_CHROMIUM


def run_chromium(
    url: str, profile: Path, *args: str, budget_ms: int = VIRTUAL_TIME_MS
) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on ``url`` for ``budget_ms`` of virtual time, the page's console
    logged to stderr."""
    assert CHROMIUM is not None
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}",
        f"--virtual-time-budget={budget_ms}", *args, url,
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def chromium(url: str, profile: Path, *args: str, budget_ms: int = VIRTUAL_TIME_MS) -> str:
    """Run headless Chromium on ``url`` for ``budget_ms`` of virtual time; its stdout."""
    return run_chromium(url, profile, *args, budget_ms=budget_ms).stdout


def csp_violations(stderr: str) -> list[str]:
    """The console's reports of something the Content-Security-Policy blocked."""
    return re.findall(r"CONSOLE[^\n]*Content Security Policy[^\n]*", stderr)


def dump_dom(url: str, profile: Path, budget_ms: int = VIRTUAL_TIME_MS) -> str:
    """The DOM after the page's scripts ran, as Chromium serialises it."""
    return chromium(url, profile, "--dump-dom", budget_ms=budget_ms)


def rows(dom: str) -> list[tuple[int, str]]:
    """(topic id, row HTML) of the topic list, in the order shown."""
    found = re.findall(r'<tr class="topic[^"]*" data-id="(\d+)">(.*?)</tr>', dom, flags=re.S)
    return [(int(k), row) for k, row in found]


def cell(row: str, name: str) -> str:
    """The text of a row's cell of class ``name``."""
    match = re.search(rf'<td class="{name}[^"]*"[^>]*>(.*?)</td>', row, flags=re.S)
    assert match is not None, row
    return text(match.group(1))


def field(dom: str, name: str) -> str:
    """The text of the health field ``name``."""
    match = re.search(rf'data-field="{name}"[^>]*>([^<]*)<', dom)
    assert match is not None, name
    return html.unescape(match.group(1))


def element(dom: str, pattern: str) -> str:
    match = re.search(pattern, dom, flags=re.S)
    assert match is not None, pattern
    return match.group(0)


def text(fragment: str) -> str:
    """What a person reads: tags, scripts and styles dropped, whitespace collapsed."""
    fragment = re.sub(r"<(script|style)\b.*?</\1>", " ", fragment, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


@pytest.fixture
def watched(redis_client: redis.Redis, published: Published, settings: Settings) -> TopicWatch:
    """The published model plus everything a worker and scrapers add: per-topic quality and
    intervals, a checkpoint, coherence in the perplexity history, a queue with entries pending
    and the scrapers' counters."""
    watch = watched_topics(published)
    now = time.time()
    fields = watch_fields(watch, published)
    revisits = {
        "fresh_docs_per_s": 48.0,
        "revisit_docs_per_s": 650.0,
        "fresh_wait_s": 2.34,
        "fresh_wait_p95_s": 4.5,
        "reservoir_articles": 12_000,
        "reservoir_passes": 2.5,
    }
    publish_snapshot(
        redis_client,
        dataclasses.replace(published.snapshot, checkpoint_at=now - 40, **fields, **revisits),
    )
    for i, point in enumerate(published.points):
        scored = dataclasses.replace(point, coherence=0.05 + 0.05 * i, diversity=0.6 + 0.1 * i)
        append_perplexity(redis_client, scored, keep=100)
    for i in range(QUEUE_LENGTH):
        redis_client.xadd(settings.queue.stream, {"id": str(i), "text": "apple banana"})
    redis_client.xgroup_create(settings.queue.stream, settings.queue.group, id="0")
    redis_client.xreadgroup(
        settings.queue.group, "worker", {settings.queue.stream: ">"}, count=QUEUE_PENDING
    )
    redis_client.hset(
        settings.queue.counters_key,
        mapping={
            "fetched": 130,
            "queued": 100,
            "duplicates": 8,
            "skipped": 12,
            "skipped:redirect": 12,
            "updated_at": repr(now - 5),
        },
    )
    return watch


def test_page_shows_topics_and_plot(published: Published, served: str, tmp_path: Path) -> None:
    # published first: the app reads Redis once before it serves, so the first fetch sees it.
    dom = dump_dom(served, tmp_path / "profile")
    listed = rows(dom)
    assert [k for k, _ in listed] == [0, 1, 2], dom[:3000]
    assert "apple banana cherry grape" in listed[0][1]
    assert "sonata violin cello opera" in listed[2][1]
    # A worker that predates per-topic quality: no coherence and no drift, shown as such.
    assert {cell(row, "coherence") for _, row in listed} == {"—"}
    assert {cell(row, "drift") for _, row in listed} == {"—"}
    assert "coherence and drift come with the first evaluation" in text(dom)
    plot = element(dom, r'<svg id="plot".*?</svg>')
    # Three evaluations, each drawn for the sample and the posterior average.
    assert len(re.findall(r"<circle[^>]*class=\"point", plot)) == 6
    assert plot.count("<polyline") == 2
    assert "no coherence yet" in element(dom, r'<svg id="coherence-plot".*?</svg>')
    assert "3,000 documents seen" in text(dom)


def test_topics_sort_by_coherence_and_a_topic_shows_its_words_with_intervals(
    watched: TopicWatch, served: str, tmp_path: Path
) -> None:
    dom = dump_dom(served + "#sort=coherence&topic=2", tmp_path / "profile")
    listed = rows(dom)
    assert [k for k, _ in listed] == [2, 0, 1]  # highest coherence first, none last
    assert [cell(row, "coherence") for _, row in listed] == ["0.31", "0.12", "—"]
    assert watched.drift is not None and watched.changed_at is not None
    assert [cell(row, "drift") for _, row in listed] == [
        f"{watched.drift[k]:.3f}" for k in (2, 0, 1)
    ]
    assert 'class="topic selected" data-id="2"' in dom
    assert re.search(r'data-sort="coherence" aria-pressed="true"', dom)
    assert "as of the evaluation at 2,000 documents" in text(dom)

    detail = element(dom, r'<aside id="detail".*?</aside>')
    assert "Topic 2" in text(detail)
    facts = dict(re.findall(r'<dd data-fact="([^"]+)">([^<]*)</dd>', detail))
    assert facts["coherence"] == "0.310 NPMI"
    assert facts["drift"].startswith(f"{watched.drift[2]:.3f} bits")
    assert facts["last changed"] == f"at {watched.changed_at[2]:,} documents"
    # every word of the topic (the vocabulary has 12), a bar each and an interval each
    bars = re.findall(r'<rect[^>]*class="bar"', detail)
    intervals = re.findall(r'<line[^>]*class="whisker interval"', detail)
    assert len(bars) == len(intervals) == len(VOCAB)
    assert text(detail).count("[") == len(VOCAB) and "[—]" not in detail
    assert "sonata" in text(detail)

    coherence = element(dom, r'<svg id="coherence-plot".*?</svg>')
    assert coherence.count("<polyline") == 2  # mean coherence and diversity
    assert len(re.findall(r"<circle[^>]*class=\"point", coherence)) == 6


def test_health_shows_the_pipeline_with_relative_times(
    watched: TopicWatch, redis_client: redis.Redis, served: str, tmp_path: Path
) -> None:
    set_paused(redis_client, True)
    time.sleep(0.5)  # the API's next refresh of its live values sees the pause
    dom = dump_dom(served, tmp_path / "profile")
    assert field(dom, "queue-length") == str(QUEUE_LENGTH)
    assert field(dom, "queue-pending") == str(QUEUE_PENDING)
    assert field(dom, "queue-unread") == str(QUEUE_LENGTH - QUEUE_PENDING)
    assert field(dom, "scraper-fetched") == "130"
    assert field(dom, "scraper-queued") == "100"
    assert field(dom, "scraper-errors") == "12"
    assert field(dom, "worker-rate") == "12.5"
    assert field(dom, "worker-ranks") == "1 (single worker)"
    learned = "48.0 fresh · 650 revisited docs/s · fresh learned in 2.3 s"
    assert field(dom, "worker-learned") == learned
    assert field(dom, "worker-reservoir") == "12,000 articles · 2.5 passes"
    assert field(dom, "worker-state") == "paused by an operator"
    assert '<span id="paused" class="badge">paused</span>' in dom  # shown: no hidden attribute
    relative = re.compile(r"^(just now|\d+ s ago)$")
    for name in ("scraper-updated", "worker-heartbeat", "model-updated", "model-checkpoint"):
        assert relative.match(field(dom, name)), (name, field(dom, name))
    assert 35 <= int(field(dom, "model-checkpoint").split()[0]) <= 60
    # times are relative: no raw ISO timestamp in what a person reads
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:", text(dom))


def test_polling_measures_the_scraper_rate_and_revalidates_with_etags(
    watched: TopicWatch, redis_client: redis.Redis, settings: Settings, tmp_path: Path
) -> None:
    fast = settings.updated(page_refresh_s=0.05, api_refresh_s=0.02)
    stop = threading.Event()
    queued: list[tuple[float, int]] = []

    def scrape() -> None:  # a scraper publishing its counters every 20 ms
        while not stop.wait(0.02):
            total = redis_client.hincrby(fast.queue.counters_key, "queued", 1)
            now = time.time()
            redis_client.hset(fast.queue.counters_key, "updated_at", repr(now))
            queued.append((now, total))

    app = create_app(fast)
    answers: list[tuple[str, int]] = []

    @app.middleware("http")
    async def record(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        answers.append((request.url.path, response.status_code))
        return response

    thread = threading.Thread(target=scrape, daemon=True)
    thread.start()
    try:
        with serve(app) as url:
            dom = dump_dom(url + "#topic=1", tmp_path / "profile")
    finally:
        stop.set()
        thread.join()
    rate = field(dom, "scraper-rate")
    assert re.fullmatch(r"\d+\.\d", rate), rate
    (t0, n0), (t1, n1) = queued[0], queued[-1]
    assert float(rate) == pytest.approx((n1 - n0) / (t1 - t0), rel=0.5)
    # unchanged topics come back as 304 (the browser asked with If-None-Match), not as bodies
    for path in ("/topics", "/topics/1"):
        statuses = [status for answered, status in answers if answered == path]
        assert statuses[0] == 200 and 304 in statuses, (path, statuses)


def test_page_loads_nothing_from_elsewhere(
    watched: TopicWatch, served: str, tmp_path: Path
) -> None:
    dom = dump_dom(served + "#topic=0", tmp_path / "profile")
    links = re.findall(r'\s(?:src|href|action|srcset)="([^"]*)"', dom)
    assert links and all(link.startswith("#") for link in links), links
    urls = set(re.findall(r"[a-z][a-z0-9+.-]*://[^\s\"'<>)]+", dom))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert "url(" not in dom and "@import" not in dom and "<link" not in dom


def test_page_runs_under_its_content_security_policy(
    watched: TopicWatch, served: str, tmp_path: Path
) -> None:
    """Served with a policy that allows no inline code but its own, by hash, and no framing;
    the page draws everything (plots, bars, swatches, a topic's view) and the browser blocks
    nothing."""
    answer = httpx.get(served, timeout=10)
    headers = answer.headers
    assert " style=" not in answer.text  # a style attribute is inline style no hash allows
    policy = headers["content-security-policy"]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    run = run_chromium(served + "#sort=coherence&topic=2", tmp_path / "profile", "--dump-dom")
    assert csp_violations(run.stderr) == []
    assert [k for k, _ in rows(run.stdout)] == [2, 0, 1]
    assert len(re.findall(r'<rect[^>]*class="bar"', run.stdout)) == len(VOCAB)


def test_a_page_outside_its_policy_is_blocked_and_reported(
    settings: Settings, published: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above can fail: a policy without the page's hashes blocks its script and
    style, Chromium says so on the console, and the page shows nothing."""
    monkeypatch.setattr(page_route, "content_security_policy", lambda html: "default-src 'none'")
    with serve(create_app(settings)) as url:
        run = run_chromium(url, tmp_path / "profile", "--dump-dom")
    blocked = csp_violations(run.stderr)
    assert any("inline script" in line for line in blocked), run.stderr[-2000:]
    assert any("inline style" in line for line in blocked), run.stderr[-2000:]
    assert rows(run.stdout) == []


def test_screenshot_draws_the_page(watched: TopicWatch, served: str, tmp_path: Path) -> None:
    from PIL import Image as image_module

    png = tmp_path / "page.png"
    chromium(
        served + "#sort=coherence&topic=2",
        tmp_path / "profile",
        "--hide-scrollbars",
        "--window-size=1280,1100",
        f"--screenshot={png}",
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with image_module.open(png) as image:
        assert image.size == (1280, 1100)
        rgb = image.convert("RGB")
    colours = rgb.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # not blank: text, plots, bars
    present = {colour for _, colour in colours}

    def drawn(hex_colour: str) -> bool:
        want = bytes.fromhex(hex_colour)
        return any(all(abs(a - b) <= 3 for a, b in zip(c, want, strict=True)) for c in present)

    # the perplexity lines, the coherence line, the detail panel's bars, the selected row
    for colour in ("1f77b4", "d62728", "2a8a3e", "9fbfe3", "e6eefb"):
        assert drawn(colour), colour


def test_page_says_what_is_missing_before_the_first_update(
    served: str, settings: Settings, tmp_path: Path
) -> None:
    dom = dump_dom(served + "#topic=1", tmp_path / "profile")
    assert "no perplexity yet" in dom
    assert "no coherence yet" in dom
    assert "first snapshot" in element(dom, r'<table id="topics".*?</table>')
    # the detail panel says why there is no topic 1 (the API's 503 message)
    assert "first snapshot" in element(dom, r'<aside id="detail".*?</aside>')
    assert field(dom, "scraper-updated") == "none yet"
    assert field(dom, "worker-ranks") == "—"
    assert field(dom, "worker-state") == "not started"
    assert field(dom, "queue-length") == "0"
    assert field(dom, "model-checkpoint") == "—"


def test_health_says_the_source_is_unreachable_and_the_worker_idle(
    watched: TopicWatch,
    published: Published,
    redis_client: redis.Redis,
    served: str,
    tmp_path: Path,
) -> None:
    now = time.time()
    idle = dataclasses.replace(published.snapshot, docs_per_s=0.0, idle_since=now - 30)
    publish_snapshot(redis_client, idle)
    down = SourceStatus("wikipedia", "en.wikipedia.org", now - 90, "connection: refused")
    publish_source_status(redis_client, "wikipedia", down)
    time.sleep(0.5)  # the API's next refresh sees both
    dom = dump_dom(served, tmp_path / "profile")
    assert field(dom, "scraper-source") == down.message
    assert field(dom, "worker-state").startswith("idle, queue empty since ")
    assert field(dom, "worker-rate") == "0.0"

    publish_source_status(redis_client, "wikipedia", None)
    time.sleep(0.5)
    assert field(dump_dom(served, tmp_path / "profile"), "scraper-source") == "answering"


def test_the_perplexity_plot_marks_each_new_vocabulary(
    published: Published, redis_client: redis.Redis, served: str, tmp_path: Path
) -> None:
    """A dashed line and a label where the vocabulary version changes; points without a version
    (an older worker's) mark nothing; the model card says the version and size in use."""
    versions = [None, 0, 0, 1, None, 1, 2]
    for i, version in enumerate(versions):
        point = PerplexityPoint(1000 * (i + 1), 3000.0 - 100 * i, 3100.0 - 100 * i, i, None)
        append_perplexity(redis_client, dataclasses.replace(point, vocab_version=version), keep=100)
    publish_snapshot(redis_client, dataclasses.replace(published.snapshot, vocab_version=2))
    time.sleep(0.5)  # the API's next refresh sees both
    dom = dump_dom(served, tmp_path / "profile")
    plot = element(dom, r'<svg id="plot".*?</svg>')
    marks = re.findall(
        r'<g class="vocab-change" data-docs="(\d+)" data-version="(\d+)">(.*?)</g>', plot, re.S
    )
    assert [(int(docs), int(v)) for docs, v, _ in marks] == [(4000, 1), (7000, 2)]
    assert [text(re.sub(r"<title>.*?</title>", "", g)) for *_, g in marks] == [
        "vocabulary 1",
        "vocabulary 2",
    ]
    for docs, _, g in marks:  # each line stands at its point's x
        x = re.search(r'<line x1="([\d.]+)" x2="\1"[^>]*class="vocab-mark"', g)
        dot = re.search(rf'<circle cx="([\d.]+)"[^>]*><title>{int(docs):,} docs: perplexity ', plot)
        assert x is not None and dot is not None and x.group(1) == dot.group(1)
    assert '<span id="vocab-legend">' in dom  # shown: a change is drawn
    assert field(dom, "model-vocab") == f"version 2 · {len(VOCAB)} words"


def test_a_history_without_vocabulary_versions_marks_nothing(
    published: Published, served: str, tmp_path: Path
) -> None:
    dom = dump_dom(served, tmp_path / "profile")
    assert "vocab-change" not in element(dom, r'<svg id="plot".*?</svg>')
    assert '<span id="vocab-legend" hidden="">' in dom
    assert field(dom, "model-vocab") == f"version 0 · {len(VOCAB)} words"


def test_a_seeded_topic_shows_its_seeds_beside_its_name(
    redis_client: redis.Redis, published: Published, settings: Settings, tmp_path: Path
) -> None:
    seeded = dataclasses.replace(published.snapshot, topic_seeds=[["apple", "kiwi"], [], []])
    publish_snapshot(redis_client, seeded)
    with serve(create_app(settings)) as url:
        dom = dump_dom(url + "#topic=0", tmp_path / "profile")
    listed = dict(rows(dom))
    seeds = element(listed[0], r'<span class="seeds".*?</span></span>')
    assert text(seeds) == "seeds: apple kiwi"
    assert '<span class="held">apple</span>' in seeds  # among topic 0's top words
    assert '<span class="held">kiwi</span>' not in seeds and "kiwi" in seeds
    assert 'class="seeds"' not in listed[1] and 'class="seeds"' not in listed[2]
    detail = element(dom, r'<aside id="detail".*?</aside>')
    assert "seeds: apple kiwi" in text(detail)
