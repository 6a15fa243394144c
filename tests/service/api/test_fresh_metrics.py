"""Every counter family is on /metrics from a fresh start, at 0 and with its labels, so a
dashboard's panels show 0 rather than "No data" before the first scrape error or snapshot."""

from __future__ import annotations

import urllib.request

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from service.api.app import create_app
from service.settings import Settings
from service.store.counters import SCRAPER_TOTALS, SKIP_REASONS, WORKER_COUNTERS
from tests.service.api.test_monitoring import dashboard, metric_names, queries
from tests.service.conftest import serve

pytestmark = pytest.mark.slow


def exposition(settings: Settings) -> str:
    with (
        serve(create_app(settings)) as url,
        urllib.request.urlopen(url + "metrics", timeout=10) as response,
    ):
        return str(response.read().decode())


def test_every_counter_is_exported_at_zero_on_an_empty_redis(
    redis_client: redis.Redis, settings: Settings
) -> None:
    families = {f.name: f for f in text_string_to_metric_families(exposition(settings))}
    counters = {name: f for name, f in families.items() if f.type == "counter"}
    queried = {
        n.removesuffix("_total")
        for _title, expr in queries(dashboard())
        for n in metric_names(expr)
        if n.endswith("_total")
    }
    assert queried, "the dashboard queries no counter"
    for name in sorted(queried):
        assert name in counters, f"{name}_total is not exported on a fresh start"
        samples = counters[name].samples
        assert samples and all(s.value == 0 for s in samples), (name, samples)
    for name in WORKER_COUNTERS:
        assert f"streamlda_worker_{name}" in counters, name
    for name in SCRAPER_TOTALS:
        assert f"streamlda_scraper_{name}" in counters, name
    kinds = {s.labels["kind"] for s in counters["streamlda_scrape_errors"].samples}
    assert set(SKIP_REASONS) <= kinds


def test_counters_keep_their_values_once_they_happen(
    redis_client: redis.Redis, settings: Settings
) -> None:
    redis_client.hset(settings.queue.counters_key, mapping={"fetched": 7, "skipped:redirect": 2})
    families = {f.name: f for f in text_string_to_metric_families(exposition(settings))}
    (fetched,) = families["streamlda_scraper_fetched"].samples
    assert fetched.value == 7
    errors = {s.labels["kind"]: s.value for s in families["streamlda_scrape_errors"].samples}
    assert errors["redirect"] == 2 and errors["empty"] == 0
