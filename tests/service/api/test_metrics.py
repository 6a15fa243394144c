"""``GET /metrics`` is valid Prometheus text with the service's numbers, Redis up or down."""

from __future__ import annotations

import dataclasses
import re

import pytest
import redis
from fastapi.testclient import TestClient

from service.store.snapshot import publish_snapshot
from tests.service.conftest import Published

pytestmark = pytest.mark.slow

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> Samples:
    """Samples by (name, labels), with prometheus_client's parser when it is installed."""
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        samples: Samples = {}
        for line in text.splitlines():
            if line.startswith("#") or not line:
                continue
            match = _LINE.match(line)
            assert match, f"not an exposition line: {line!r}"
            labels = frozenset(_LABEL.findall(match.group(2) or ""))
            samples[(match.group(1), labels)] = float(match.group(3))
        return samples
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_report_the_published_state(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    redis_client.hset(
        "streamlda:scraper:counters",
        mapping={
            "fetched": 9,
            "retries": 2,
            "skipped:short": 3,
            "error:http": 1,
            "backpressure_wait_seconds": 1.5,
            "updated_at": 1700000000.25,
        },
    )
    redis_client.xadd("streamlda:docs", {"id": "1"})
    response = api.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = parse(response.text)
    assert all(name.startswith("streamlda_") for name, _ in samples)
    assert samples[("streamlda_redis_up", frozenset())] == 1
    assert samples[("streamlda_docs_seen", frozenset())] == 3000
    assert samples[("streamlda_docs_per_second", frozenset())] == 12.5
    assert samples[("streamlda_queue_length", frozenset())] == 1
    assert samples[("streamlda_perplexity", frozenset({("estimate", "sample")}))] == 2300
    assert samples[("streamlda_perplexity", frozenset({("estimate", "averaged")}))] == 2400
    assert samples[("streamlda_scrape_errors_total", frozenset({("kind", "short")}))] == 3
    assert samples[("streamlda_scrape_errors_total", frozenset({("kind", "error:http")}))] == 1
    assert samples[("streamlda_scraper_fetched_total", frozenset())] == 9
    assert samples[("streamlda_scraper_backpressure_wait_seconds_total", frozenset())] == 1.5
    updated = ("streamlda_scraper_last_update_timestamp_seconds", frozenset())
    assert samples[updated] == 1700000000.25
    assert samples[("streamlda_worker_updates_total", frozenset())] == 60
    assert samples[("streamlda_model_published", frozenset())] == 1


def test_the_vocabulary_version_is_in_stats_and_metrics(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    """The worker's vocabulary version, 0 for the first, as the snapshot says it."""
    assert parse(api.get("/metrics").text)[("streamlda_vocab_version", frozenset())] == 0
    refreshed = dataclasses.replace(published.snapshot, vocab_version=2)
    publish_snapshot(redis_client, refreshed)
    assert parse(api.get("/metrics").text)[("streamlda_vocab_version", frozenset())] == 2
    assert api.get("/stats").json()["vocab_version"] == 2


def test_metrics_before_anything_is_published(api: TestClient) -> None:
    samples = parse(api.get("/metrics").text)
    assert samples[("streamlda_redis_up", frozenset())] == 1
    assert samples[("streamlda_model_published", frozenset())] == 0
    assert ("streamlda_docs_seen", frozenset()) not in samples
    assert ("streamlda_vocab_version", frozenset()) not in samples


def test_metrics_report_redis_down(down_api: TestClient) -> None:
    response = down_api.get("/metrics")
    assert response.status_code == 200
    assert parse(response.text) == {("streamlda_redis_up", frozenset()): 0}


def test_metrics_time_requests_by_route_template(api: TestClient, published: Published) -> None:
    for path in ("/healthz", "/healthz", "/topics/1", "/topics/2", "/no-such-page"):
        api.get(path)
    samples = parse(api.get("/metrics").text)
    count = "streamlda_http_request_duration_seconds_count"

    def requests(route: str) -> float:
        return samples[(count, frozenset({("route", route), ("method", "GET")}))]

    assert requests("/healthz") == 2
    assert requests("/topics/{topic_id}") == 2  # one series per template, not per id
    assert requests("unmatched") == 1
    infinite = frozenset({("route", "/healthz"), ("method", "GET"), ("le", "+Inf")})
    assert samples[("streamlda_http_request_duration_seconds_bucket", infinite)] == 2


def test_fresh_articles_wait_is_served_by_quantile(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    """A fresh article's wait to be learned: in /stats and as one gauge per quantile, and no
    sample at all while the worker learned none in the last minute."""
    assert not any(
        name == "streamlda_fresh_wait_seconds" for name, _ in parse(api.get("/metrics").text)
    )
    assert api.get("/stats").json()["fresh_wait_s"] is None
    waited = dataclasses.replace(published.snapshot, fresh_wait_s=1.5, fresh_wait_p95_s=3.25)
    publish_snapshot(redis_client, waited)
    samples = parse(api.get("/metrics").text)
    assert samples[("streamlda_fresh_wait_seconds", frozenset({("quantile", "0.5")}))] == 1.5
    assert samples[("streamlda_fresh_wait_seconds", frozenset({("quantile", "0.95")}))] == 3.25
    stats = api.get("/stats").json()
    assert (stats["fresh_wait_s"], stats["fresh_wait_p95_s"]) == (1.5, 3.25)
