"""``GET /metrics``: Prometheus text, every name prefixed ``streamlda_``.

Answers 200 even when Redis is down (``streamlda_redis_up 0``), so dashboards see the outage
instead of a failed scrape.
"""

from __future__ import annotations

import time

import redis
from fastapi import APIRouter, Response

from service.api.deps import RedisDep, SettingsDep
from service.api.prometheus import CONTENT_TYPE, Metric, metric_name, render
from service.settings import Settings
from service.snapshot import (
    latest_perplexity,
    read_control,
    read_heartbeat,
    read_model_summary,
    read_queue,
    read_scraper_counters,
    read_snapshot,
)

router = APIRouter(tags=["metrics"])

# Scraper counters "<kind>:<what>" of these kinds are articles or requests lost.
_ERROR_KINDS = ("skipped", "error", "errors")
_SCRAPER_UPDATED = "updated_at"


def _scraper_metrics(counters: dict[str, int | float]) -> list[Metric]:
    """streamlda_scrape_errors_total{kind} plus one streamlda_scraper_<name>_total per counter."""
    errors = Metric(
        "streamlda_scrape_errors_total", "Articles or requests lost, by kind", "counter"
    )
    metrics = [errors]
    for name, value in counters.items():
        kind, _, what = name.partition(":")
        if name == _SCRAPER_UPDATED:
            metrics.append(
                Metric(
                    "streamlda_scraper_last_update_timestamp_seconds",
                    "Unix time the scrapers last published their counters",
                ).add(value)
            )
        elif what and kind in _ERROR_KINDS:
            errors.add(value, kind=what if kind == "skipped" else name)
        elif not what:
            family = metric_name("streamlda", "scraper", name, "total")
            metrics.append(Metric(family, f"Scraper counter {name}", "counter").add(value))
    return metrics


def collect(client: redis.Redis, settings: Settings) -> list[Metric]:
    """Every metric read from Redis now."""
    now = time.time()
    snapshot = read_snapshot(client)
    point = latest_perplexity(client)
    heartbeat = read_heartbeat(client)
    queue = read_queue(client, settings.stream, settings.group)
    model = read_model_summary(client)
    metrics = [
        Metric("streamlda_redis_up", "1 when the API can read Redis").add(1),
        Metric("streamlda_queue_length", "Entries in the article stream").add(queue.length),
        Metric("streamlda_queue_pending", "Entries delivered and not acknowledged").add(
            queue.pending
        ),
        Metric("streamlda_worker_paused", "1 while an operator paused the worker").add(
            int(read_control(client).paused)
        ),
        Metric("streamlda_model_published", "1 once a model is available to /infer").add(
            int(model is not None)
        ),
    ]
    if snapshot is not None:
        metrics += [
            Metric("streamlda_docs_seen", "Documents trained on").add(snapshot.docs_seen),
            Metric("streamlda_docs_per_second", "Training throughput").add(snapshot.docs_per_s),
            Metric("streamlda_tokens_per_second", "Training throughput").add(snapshot.tokens_per_s),
            Metric("streamlda_step_size", "Current sampler step size").add(snapshot.step_size),
            Metric("streamlda_topics", "Number of topics K").add(snapshot.num_topics),
            Metric("streamlda_vocabulary_size", "Vocabulary size W").add(snapshot.vocab_size),
            Metric("streamlda_last_update_timestamp_seconds", "Unix time of the last update").add(
                snapshot.updated_at
            ),
        ]
        for name, value in snapshot.counters.items():
            family = metric_name("streamlda", "worker", name, "total")
            metrics.append(Metric(family, f"Worker counter {name}", "counter").add(value))
    if heartbeat is not None:
        metrics.append(
            Metric("streamlda_heartbeat_age_seconds", "Seconds since the worker's heartbeat").add(
                max(0.0, now - heartbeat)
            )
        )
    if point is not None:
        metrics.append(
            Metric("streamlda_perplexity", "Latest held-out perplexity")
            .add(point.perplexity, estimate="sample")
            .add(point.perplexity_avg, estimate="averaged")
        )
        metrics.append(
            Metric("streamlda_perplexity_docs_seen", "Documents seen at the latest evaluation").add(
                point.docs_seen
            )
        )
    return metrics + _scraper_metrics(read_scraper_counters(client, settings.counters_key))


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE: {}}}})
def metrics(client: RedisDep, settings: SettingsDep) -> Response:
    """Prometheus text exposition of the service's state."""
    try:
        families = collect(client, settings)
    except redis.RedisError:
        families = [Metric("streamlda_redis_up", "1 when the API can read Redis").add(0)]
    return Response(render(families), media_type=CONTENT_TYPE)
