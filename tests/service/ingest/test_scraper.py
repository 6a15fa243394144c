"""``streamlda scrape`` end to end: stand-in API -> scraper -> real Redis, with faults."""

from __future__ import annotations

import bz2
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from service.cli import main
from service.ingest.command import scraper_config
from service.ingest.queue import ArticleQueue, QueueConfig
from service.ingest.scraper import Scraper
from service.ingest.sources import open_source
from service.ingest.sources.wikipedia import WikipediaConfig, WikipediaSource
from service.store.redis_client import connect
from tests.service.ingest.helpers import Background, fast_settings, stream_ids, wait_until
from tests.support.corpora import RawPage
from tests.support.redis_server import RedisServer
from tests.support.wikipedia_api import FakeWikipediaAPI, default_pool, is_disambiguation_page

pytestmark = pytest.mark.slow

MakeAPI = Callable[..., FakeWikipediaAPI]
MARKUP_REMNANTS = ("{{", "}}", "[[", "]]", "<ref", "|", "&lt;", "==")


_SCRAPERS: list[Scraper] = []


@pytest.fixture(autouse=True)
def _stop_scrapers() -> Iterator[None]:
    """Whatever a test does, its background scrapers end with it."""
    yield
    while _SCRAPERS:
        scraper = _SCRAPERS.pop()
        scraper.stop.set()


def _scraper(
    api: FakeWikipediaAPI, redis_server: RedisServer, limit: int | None, **overrides: object
) -> Scraper:
    settings = fast_settings(redis_url=redis_server.url, wikipedia_api_url=api.url, **overrides)
    scraper = Scraper(
        scraper_config(settings),
        WikipediaSource(settings.part(WikipediaConfig)),
        client=connect(settings.store),
        limit=limit,
    )
    _SCRAPERS.append(scraper)
    return scraper


def _entries(redis_server: RedisServer, queue: QueueConfig) -> dict[str, dict[str, str]]:
    entries = redis_server.client().xrange(queue.stream)
    out = {}
    for _, fields in entries:
        values = {k.decode(): v.decode() for k, v in fields.items()}
        assert values["id"] not in out, f"page {values['id']} queued twice"
        out[values["id"]] = values
    return out


def test_500_articles_end_to_end_each_exactly_once_and_clean(
    wikipedia_api: FakeWikipediaAPI, redis_server: RedisServer
) -> None:
    good = {str(p.pageid): p for p in wikipedia_api.good_pages()}
    assert len(good) == 500
    scraper = _scraper(wikipedia_api, redis_server, limit=500)
    totals = scraper.run()
    entries = _entries(redis_server, scraper.config.queue)
    assert set(entries) == set(good)
    assert totals.counts["queued"] == 500 and totals.counts["fetched"] == 500
    assert totals.skipped["disambiguation"] == 8
    wikitext_ids = [pid for pid, page in good.items() if "[[" in page.wikitext]
    assert len(wikitext_ids) >= 98
    for pid in wikitext_ids:
        text = entries[pid]["text"]
        for remnant in MARKUP_REMNANTS:
            assert remnant not in text, f"{good[pid].title}: {remnant!r} in the queued text"
    aruba = next(pid for pid in wikitext_ids if good[pid].title == "Aruba")
    assert "constituent country of the Kingdom of the Netherlands" in entries[aruba]["text"]
    assert all(float(e["fetched_at"]) > 0 and e["source"] == "wikipedia" for e in entries.values())
    counters = ArticleQueue(redis_server.client(), scraper.config.queue).counters()
    assert counters["queued"] == 500 and counters["skipped:disambiguation"] == 8
    assert counters["requests"] == len(wikipedia_api.requests)


def _small_pool(count: int) -> list[RawPage]:
    """``count`` short good articles of the default pool (quick to clean)."""
    return [
        p
        for p in default_pool()
        if p.ns == 0 and not p.redirect and not is_disambiguation_page(p) and len(p.wikitext) < 3000
    ][:count]


def test_every_fault_is_survived_and_every_article_delivered_once(
    make_wikipedia_api: MakeAPI, redis_server: RedisServer
) -> None:
    pool = _small_pool(150) + [p for p in default_pool() if p.redirect][:20]
    assert len(pool) == 170
    api = make_wikipedia_api(pages=pool, retry_after=1, slow_seconds=1.0, serve_redirects=True)
    api.inject(
        "429", "503", "maxlag", "reset", "slow", "malformed", "empty_revisions", "503", "reset"
    )
    good = {str(p.pageid) for p in api.good_pages()}
    scraper = _scraper(api, redis_server, limit=len(good), request_timeout=0.4)
    started = time.monotonic()
    totals = scraper.run()
    assert time.monotonic() - started < 30
    assert api.faults_left == 0
    assert set(_entries(redis_server, scraper.config.queue)) == good
    failures = scraper.source.failures  # type: ignore[attr-defined]
    assert failures == {
        "http_429": 1,
        "http_503": 2,
        "api_maxlag": 1,
        "connection": 2,
        "timeout": 1,
        "malformed_json": 1,
    }
    assert totals.counts["retries"] == 8
    assert totals.skipped["redirect"] == 20 and totals.skipped["no_revisions"] == 2
    refused = next(i for i, r in enumerate(api.requests) if r.outcome == "429")
    waited = api.requests[refused + 1].started - api.requests[refused].finished
    assert waited >= 1.0, f"retried {waited:.3f} s after a 429 asking for 1 s"


def test_redis_restart_mid_run_loses_nothing(
    make_wikipedia_api: MakeAPI, redis_server: RedisServer
) -> None:
    api = make_wikipedia_api(pages=_small_pool(300))
    good = {str(p.pageid) for p in api.good_pages()}
    scraper = _scraper(api, redis_server, limit=len(good), rate=20.0, articles_per_request=20)
    runner = Background(scraper.run)
    runner.start()
    assert wait_until(lambda: scraper.totals.counts["queued"] >= 60, timeout=30)
    redis_server.stop()
    time.sleep(1.0)  # the scraper holds a batch and keeps retrying meanwhile
    requests_while_down = len(api.requests)
    time.sleep(0.5)
    assert len(api.requests) <= requests_while_down + 1  # it does not fetch ahead
    redis_server.start()
    totals = runner.finish(timeout=60)
    assert totals.counts["redis_reconnects"] >= 1
    assert set(_entries(redis_server, scraper.config.queue)) == good
    assert totals.counts["queued"] == len(good)


def test_a_batch_whose_reply_redis_lost_counts_as_queued_and_the_limit_is_reached(
    make_wikipedia_api: MakeAPI, redis_server: RedisServer
) -> None:
    # Redis ran the second batch's add, then the reply was lost: the scraper retries the add.
    # Counted as duplicates, that batch would keep --limit out of reach of a finite pool.
    api = make_wikipedia_api(pages=_small_pool(60))
    good = {str(p.pageid) for p in api.good_pages()}
    scraper = _scraper(api, redis_server, limit=len(good), articles_per_request=20)
    real = scraper.queue.try_add
    calls: list[list[int]] = []

    def try_add(*args: Any, **kwargs: Any) -> list[int]:
        statuses = real(*args, **kwargs)
        calls.append(statuses)
        if len(calls) == 2:
            raise redis.ConnectionError("Connection closed by server.")
        return statuses

    scraper.queue.try_add = try_add  # type: ignore[method-assign]
    runner = Background(scraper.run)
    runner.start()
    totals = runner.finish(timeout=30)
    assert calls[1] == [1] * 20 and calls[2] == [2] * 20  # run, reply lost, recognised
    assert totals.counts["queued"] == len(good) and totals.counts["duplicates"] == 0
    assert totals.counts["redis_reconnects"] == 1
    assert set(_entries(redis_server, scraper.config.queue)) == good  # each exactly once
    counters = ArticleQueue(redis_server.client(), scraper.config.queue).counters()
    assert counters["queued"] == len(good) and counters["fetched"] == len(good)
    assert not redis_server.client().keys(f"{scraper.config.queue.dedupe_key}:batch:*")


def test_redis_unavailable_at_start_is_waited_for(
    make_wikipedia_api: MakeAPI, redis_server: RedisServer
) -> None:
    api = make_wikipedia_api(pages=_small_pool(40))
    redis_server.stop()
    scraper = _scraper(api, redis_server, limit=40)
    runner = Background(scraper.run)
    runner.start()
    time.sleep(0.8)
    assert runner.is_alive() and scraper.totals.counts["redis_reconnects"] >= 1
    redis_server.start()
    runner.finish(timeout=30)
    assert len(_entries(redis_server, scraper.config.queue)) == 40


def test_backpressure_stops_growth_and_scraping_resumes_when_drained(
    make_wikipedia_api: MakeAPI, redis_server: RedisServer
) -> None:
    api = make_wikipedia_api(pages=_small_pool(200))
    scraper = _scraper(api, redis_server, limit=200, stream_high_water=60, articles_per_request=25)
    queue = ArticleQueue(connect(redis_server.url), scraper.config.queue)
    runner = Background(scraper.run)
    runner.start()
    assert wait_until(lambda: queue.length() == 60, timeout=30)
    requests_at_mark = len(api.requests)
    lengths = []
    for _ in range(10):  # 1 s with no consumer: stuck at the mark, no more fetching
        time.sleep(0.1)
        lengths.append(queue.length())
    assert lengths == [60] * 10 and len(api.requests) == requests_at_mark
    assert runner.is_alive()
    consumed: list[str] = []
    deadline = time.monotonic() + 30
    while (runner.is_alive() or queue.length()) and time.monotonic() < deadline:
        entries = queue.read("drainer", 10, block_ms=50)
        consumed += [article.id for _, article in entries]
        queue.ack([entry for entry, _ in entries])
        assert queue.length() <= 60
    totals = runner.finish(timeout=5)
    assert sorted(consumed) == sorted(str(p.pageid) for p in api.good_pages())
    assert totals.counts["backpressure_waits"] >= 1 and totals.backpressure_wait_seconds >= 1.0
    assert queue.counters()["backpressure_waits"] >= 1


def test_two_scrapers_at_once_queue_no_duplicates(
    make_wikipedia_api: MakeAPI, redis_server: RedisServer
) -> None:
    pool = _small_pool(120)
    # Two API instances dealing the same pages in different orders, like random on the wiki.
    apis = [make_wikipedia_api(pages=pool, seed=seed) for seed in (1, 2)]
    scrapers = [_scraper(api, redis_server, limit=None, articles_per_request=10) for api in apis]
    runners = [Background(s.run) for s in scrapers]
    for runner in runners:
        runner.start()
    queue = ArticleQueue(connect(redis_server.url), scrapers[0].config.queue)
    assert wait_until(lambda: queue.seen() == 120, timeout=30)
    for scraper in scrapers:
        scraper.stop.set()
    totals = [runner.finish(timeout=30) for runner in runners]
    entries = _entries(redis_server, scrapers[0].config.queue)  # asserts no id twice
    assert len(entries) == 120
    assert sum(t.counts["queued"] for t in totals) == 120
    assert sum(t.counts["duplicates"] for t in totals) >= 1
    counters = queue.counters()
    assert counters["queued"] == 120
    assert counters["fetched"] == counters["queued"] + counters["duplicates"]


CLI = [sys.executable, "-c", "import sys; from service.cli import main; sys.exit(main())"]


def test_scrape_command_replays_a_jsonl_file(redis_server: RedisServer, tmp_path: Path) -> None:
    path = tmp_path / "articles.jsonl.gz"
    records = [
        {"id": str(i), "title": f"T{i}", "text": f"Words of article {i}."} for i in range(1, 31)
    ]
    records.insert(5, {"id": "99", "title": "R", "text": "#REDIRECT [[T1]]", "format": "wikitext"})
    with gzip.open(path, "wt") as out:
        out.write("\n".join(json.dumps(r) for r in records) + "\n{broken\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLDA_")}
    command = [
        *CLI,
        "scrape",
        "--source",
        f"jsonl:{path}",
        "--redis",
        redis_server.url,
        "--limit",
        "25",
    ]
    first = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert first.returncode == 0, first.stderr
    assert "batch 1: 25 fetched, 25 queued" in first.stderr
    assert "done: 25 fetched, 25 queued, 0 duplicates, 0 re-reads, 1 skipped (redirect 1)" in (
        first.stderr
    )
    # The second run starts after the 25th article's line: nothing is read twice.
    second = subprocess.run(command[:-2], capture_output=True, text=True, timeout=120, env=env)
    assert second.returncode == 0, second.stderr
    assert "resuming after 26 lines" in second.stderr
    assert "done: 5 fetched, 5 queued, 0 duplicates, 0 re-reads, 1 skipped" in second.stderr
    settings = fast_settings(redis_url=redis_server.url)
    assert stream_ids(redis_server.client(), settings.queue.stream) == [
        str(i) for i in range(1, 31)
    ]
    counters = ArticleQueue(redis_server.client(), settings.part(QueueConfig)).counters()
    assert counters["queued"] == 30 and counters.get("duplicates", 0) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source", "jsonl:/nonexistent.jsonl"], "no such file"),
        (["--source", "bogus"], "unknown source"),
        (["--limit", "0"], "--limit must be at least 1"),
        (["--redis", ""], "no Redis"),
        (["--rate", "0"], "rate"),
    ],
)
def test_scrape_command_user_errors_are_one_line(
    redis_server: RedisServer,
    args: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("STREAMLDA_REDIS_URL", raising=False)
    assert main(["scrape", "--redis", redis_server.url, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_scraper_replays_a_dump(redis_server: RedisServer, tmp_path: Path) -> None:
    path = tmp_path / "dump.xml.bz2"
    pages = "".join(
        f"<page><title>P{i}</title><ns>{0 if i % 3 else 1}</ns><id>{i}</id><revision><text>"
        f"'''P{i}''' is a [[thing]].{{{{Infobox|x=1}}}}</text></revision></page>"
        for i in range(1, 61)
    )
    path.write_bytes(bz2.compress(f"<mediawiki>{pages}</mediawiki>".encode()))
    settings = fast_settings(redis_url=redis_server.url, articles_per_request=15)
    totals = Scraper(
        scraper_config(settings), open_source(f"dump:{path}"), client=connect(settings.store)
    ).run()
    assert totals.counts["queued"] == 40 and totals.skipped == {"namespace": 20}
    assert totals.counts["batches"] == 3
    entries = _entries(redis_server, settings.part(QueueConfig))
    assert entries["2"]["text"] == "P2 is a thing." and entries["2"]["source"] == f"dump:{path}"


def test_sigterm_finishes_the_batch_in_hand_and_exits_cleanly(
    make_wikipedia_api: MakeAPI, redis_server: RedisServer
) -> None:
    api = make_wikipedia_api(pages=_small_pool(200))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLDA_")}
    process = subprocess.Popen(
        [*CLI, "scrape", "--redis", redis_server.url, "--api-url", api.url, "--rate", "4"],
        stderr=subprocess.PIPE,
        text=True,
        env={**env, "STREAMLDA_ARTICLES_PER_REQUEST": "10"},
    )
    try:
        assert process.stderr is not None
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            lines.append(line)
            if "batch 2:" in line or not line:
                break
        process.send_signal(signal.SIGTERM)
        _, rest = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 128 + signal.SIGTERM, "".join(lines) + rest  # stopped
    assert "stopping after the batch in hand" in rest and "done:" in rest
    queued = int(rest.split("done: ")[1].split(" fetched, ")[1].split(" queued")[0])
    assert queued >= 20 and len(_entries(redis_server, fast_settings().part(QueueConfig))) == queued


# Seconds a stopped scraper may take beyond the 2 s bound to tear the interpreter down.
EXIT_SLACK_S = 1.0


@pytest.mark.parametrize(
    ("waiting_in", "env", "ready"),
    [
        ("a Retry-After", {}, "retry 1/"),
        ("the rate limit", {"STREAMLDA_RATE": "0.01"}, "batch 1:"),
        ("an API backoff", {"STREAMLDA_RETRY_BACKOFF": "120"}, "retry 1/"),
        ("a Redis reconnect", {"STREAMLDA_REDIS_RETRY_FIRST": "60"}, "Redis unavailable while"),
    ],
)
def test_sigterm_ends_every_wait_within_two_seconds(
    make_wikipedia_api: MakeAPI,
    redis_server: RedisServer,
    waiting_in: str,
    env: dict[str, str],
    ready: str,
) -> None:
    api = make_wikipedia_api(pages=_small_pool(40), retry_after=600)
    if waiting_in == "a Retry-After":
        api.inject("429")  # asks for 600 s
    elif waiting_in == "an API backoff":
        api.inject("503")
    elif waiting_in == "a Redis reconnect":
        redis_server.stop()
    base = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLDA_")}
    process = subprocess.Popen(
        [*CLI, "scrape", "--redis", redis_server.url, "--api-url", api.url],
        stderr=subprocess.PIPE,
        text=True,
        env={**base, "STREAMLDA_ARTICLES_PER_REQUEST": "10", **env},
    )
    try:
        assert process.stderr is not None
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            lines.append(process.stderr.readline())
            if ready in lines[-1] or not lines[-1]:
                break
        assert ready in lines[-1], "".join(lines)
        process.send_signal(signal.SIGTERM)
        _, rest = process.communicate(timeout=2.0 + EXIT_SLACK_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output = "".join(lines) + rest
    assert process.returncode == 128 + signal.SIGTERM, output  # stopped, not finished
    assert "done: " in rest and " Redis retries" in rest, output
