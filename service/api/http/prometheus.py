"""Prometheus exposition through prometheus-client: the service's families and request latency.

:mod:`service.api.reads.pipeline_status` describes the state as :class:`Metric` families (gauges
and counters with labelled samples); :func:`render` hands them to prometheus-client as a custom
collector, so the text format is the library's. :class:`RequestLatency` is a histogram per route
template and method, observed by :class:`LatencyMiddleware`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.core import Metric as Family
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4  # what generate_latest writes
_INVALID = re.compile(r"[^a-zA-Z0-9_]")
# Seconds: polling answers take milliseconds, /infer up to seconds (BENCHMARKS.md, "The
# service"), so the buckets run from a millisecond to ten seconds.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)


def metric_name(*parts: str) -> str:
    """A valid metric name from free-form parts (anything else becomes ``_``)."""
    return _INVALID.sub("_", "_".join(p for p in parts if p))


@dataclass
class Metric:
    """One metric family: its name, help, type and labelled samples."""

    name: str
    help: str
    type: Literal["gauge", "counter"] = "gauge"
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def add(self, value: float, **labels: str) -> Metric:
        self.samples.append((labels, value))
        return self


class _Families(Collector):
    """The families of one state, for one exposition."""

    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Family]:
        for metric in self.metrics:
            if not metric.samples:
                continue
            labels = sorted({name for sample_labels, _ in metric.samples for name in sample_labels})
            family: CounterMetricFamily | GaugeMetricFamily
            if metric.type == "counter":  # the library appends _total to the samples
                name = metric.name.removesuffix("_total")
                family = CounterMetricFamily(name, metric.help, labels=labels)
            else:
                family = GaugeMetricFamily(metric.name, metric.help, labels=labels)
            for sample_labels, value in metric.samples:
                family.add_metric([sample_labels.get(k, "") for k in labels], value)
            yield family


def render(metrics: list[Metric]) -> str:
    """The exposition text of ``metrics`` (families without samples are left out)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(metrics))
    return generate_latest(registry).decode()


class RequestLatency:
    """Seconds per request, by route template (``/topics/{topic_id}``) and method."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.histogram = Histogram(
            "streamlda_http_request_duration_seconds",
            "Time to answer an HTTP request, by route template and method",
            ["route", "method"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)


class LatencyMiddleware:
    """Observes every HTTP request's time into a :class:`RequestLatency` (pure ASGI: no
    per-request objects beyond the timer). Paths no route matched count as ``unmatched``."""

    def __init__(self, app: Any, latency: RequestLatency) -> None:
        self.app = app
        self.latency = latency

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            self.latency.histogram.labels(template, scope.get("method", "")).observe(
                time.perf_counter() - started
            )
