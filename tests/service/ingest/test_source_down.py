"""An unreachable source is told to the operator: every retry names the host and the cause, and
after ``source_down_after_s`` without a document it is an ERROR and a status on /stats."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.ingest.command import scraper_config
from service.ingest.scraper import Scraper
from service.ingest.sources import SourceError
from service.ingest.sources.wikipedia import WikipediaConfig, WikipediaSource
from service.settings import Settings
from service.store.redis_client import connect
from service.store.source_status import read_source_status
from tests.service.ingest.helpers import Background, fast_settings, wait_until
from tests.support.redis_server import RedisServer, free_port
from tests.support.wikipedia_api import FakeWikipediaAPI

pytestmark = pytest.mark.slow

DOWN_AFTER_S = 0.5
# The bound, with room for a loaded 2-core machine (the first report needs no retry to land).
REPORTED_WITHIN_S = DOWN_AFTER_S + 2.0


def offline_settings(redis_url: str, api_url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "redis_url": redis_url,
        "wikipedia_api_url": api_url,
        "source_down_after_s": DOWN_AFTER_S,
        "max_retries": 1000,
        "retry_backoff": 0.05,
        "retry_backoff_max": 0.4,
    }
    return fast_settings(**{**values, **overrides})


def stats(settings: Settings) -> dict[str, object]:
    with TestClient(create_app(settings)) as client:
        assert client.app.state.view.wait_fresh(10)  # type: ignore[attr-defined]
        body: dict[str, object] = client.get("/stats").json()
        return body


def test_a_closed_port_is_reported_in_time_with_host_and_cause(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="service")
    host = f"127.0.0.1:{free_port()}"  # nothing listens: every connection is refused
    settings = offline_settings(redis_server.url, f"http://{host}/w/api.php")
    client = connect(settings.store)
    source = WikipediaSource(settings.part(WikipediaConfig))
    scraper = Scraper(scraper_config(settings), source, client=client)
    task = Background(scraper.run)
    started = time.monotonic()
    task.start()
    try:
        assert wait_until(lambda: bool(read_source_status(client)), timeout=10)
        assert time.monotonic() - started < REPORTED_WITHIN_S
        retries = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
        assert retries and host in retries[0] and "refused" in retries[0].lower(), retries
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1, errors
        assert host in errors[0] and "refused" in errors[0].lower()
        assert "unreachable since" in errors[0]
        (status,) = read_source_status(client)
        assert status.host == host and "refused" in status.cause.lower()
        assert status.since <= time.time()
        body = stats(settings)
        (shown,) = body["sources"]  # type: ignore[misc]
        assert shown["state"] == "unreachable" and shown["host"] == host
        assert shown["message"].startswith("source unreachable since ")
        assert host in shown["message"] and "refused" in shown["message"].lower()
    finally:
        source.stop.set()
        totals = task.finish()
    # The summary counts what was tried, not what succeeded.
    assert totals.counts["requests"] >= 2 and totals.counts["failures"] >= 2
    assert totals.counts["retries"] >= 1
    done = [r.getMessage() for r in caplog.records if r.getMessage().startswith("done:")]
    assert done and "0 requests" not in done[-1] and " failures" in done[-1]


def test_a_source_that_answers_again_clears_its_status(
    redis_server: RedisServer,
    make_wikipedia_api: Callable[..., FakeWikipediaAPI],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="service")
    api = make_wikipedia_api()
    api.inject(*["reset"] * 12)  # a real server that drops every connection for a while
    settings = offline_settings(redis_server.url, api.url, retry_backoff_max=0.15)
    client = connect(settings.store)
    source = WikipediaSource(settings.part(WikipediaConfig))
    scraper = Scraper(scraper_config(settings), source, client=client, limit=20)
    task = Background(scraper.run)
    task.start()
    try:
        assert wait_until(lambda: bool(read_source_status(client)), timeout=10)
        totals = task.finish()
    finally:
        source.stop.set()
    assert totals.counts["queued"] == 20
    assert read_source_status(client) == []
    assert stats(settings)["sources"] == []
    messages = [r.getMessage() for r in caplog.records]
    assert any("reachable again" in m for m in messages), messages


def test_giving_up_counts_every_request_in_the_summary(redis_server: RedisServer) -> None:
    host = f"127.0.0.1:{free_port()}"
    settings = offline_settings(redis_server.url, f"http://{host}/w/api.php", max_retries=2)
    source = WikipediaSource(settings.part(WikipediaConfig))
    scraper = Scraper(scraper_config(settings), source, client=connect(settings.store))
    with pytest.raises(SourceError, match="gave up after 3 attempts"):
        scraper.run()
    counts = scraper.totals.counts
    assert (counts["requests"], counts["retries"], counts["failures"]) == (3, 2, 3)
    summary = scraper.totals.summary()
    assert "3 requests, 2 retries, 3 failures" in summary
