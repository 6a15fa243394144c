"""What ``/stats`` and ``/metrics`` report, read from Redis at every refresh of the view.

Heartbeat, control, queue, scraper counters and the model summary are a few small reads, so the
refresher takes them every ``api_refresh_s``; the bodies are rendered then, once per refresh.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import redis

from lda.config import CHANGED_BITS
from service.api.http.prometheus import Metric, metric_name
from service.api.schemas import QueueOut, SourceOut, StatsOut, timestamp
from service.store.control import Control, read_control
from service.store.counters import (
    SCRAPER_SECONDS,
    SCRAPER_TOTALS,
    SKIP_REASONS,
    WORKER_COUNTERS,
    WORKER_LIVE_COUNTERS,
)
from service.store.heartbeat import read_heartbeat
from service.store.perplexity import PerplexityPoint
from service.store.pipeline_figures import QueueStats, read_queue, read_scraper_counters
from service.store.published_model import read_model_summary
from service.store.snapshot import Snapshot
from service.store.source_status import SourceStatus, read_source_status

# Scraper counters "<kind>:<what>" of these kinds are articles or requests lost.
_ERROR_KINDS = ("skipped", "error", "errors")
_SCRAPER_UPDATED = "updated_at"


@dataclass(frozen=True)
class StreamKeys:
    """Where the live values are: the article stream, its consumer group, the scrapers'
    counters hash (the settings stream, group and counters_key)."""

    stream: str
    group: str
    counters_key: str


@dataclass(frozen=True)
class LiveValues:
    """The small, fast-changing values, read at ``at`` (unix time)."""

    at: float
    heartbeat: float | None
    control: Control
    queue: QueueStats
    scraper: dict[str, int | float]
    model: tuple[str, int] | None  # (version, docs_seen) of the model /infer uses
    sources: list[SourceStatus] = field(default_factory=list)  # reported unreachable


def read_live_values(client: redis.Redis, sources: StreamKeys, at: float) -> LiveValues:
    """Every live value, read now."""
    return LiveValues(
        at=at,
        heartbeat=read_heartbeat(client),
        control=read_control(client),
        queue=read_queue(client, sources.stream, sources.group),
        scraper=read_scraper_counters(client, sources.counters_key),
        model=read_model_summary(client),
        sources=read_source_status(client),
    )


def _utc(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def silent_since(snapshot: Snapshot | None, live: LiveValues, bound_s: float) -> float | None:
    """The last heartbeat of a worker silent for more than ``bound_s`` seconds (None while it
    beats, or before it ever did): a killed or hung worker leaves its last snapshot behind."""
    if snapshot is None or live.heartbeat is None or live.at - live.heartbeat <= bound_s:
        return None
    return live.heartbeat


def _fresh_wait(snapshot: Snapshot) -> Metric:
    """A fresh article's wait to be learned over the last minute, by quantile (none when no
    fresh article was learned in it)."""
    metric = Metric(
        "streamlda_fresh_wait_seconds",
        "Seconds from a fresh article's arrival in the queue to the step that learned it, "
        "over the last minute",
    )
    for quantile, value in (("0.5", snapshot.fresh_wait_s), ("0.95", snapshot.fresh_wait_p95_s)):
        if value is not None:
            metric.add(value, quantile=quantile)
    return metric


def silenced(snapshot: Snapshot) -> Snapshot:
    """What a silent worker's snapshot says now: its rates are 0, not the last ones it had."""
    return replace(
        snapshot,
        docs_per_s=0.0,
        tokens_per_s=0.0,
        fresh_docs_per_s=0.0,
        revisit_docs_per_s=0.0,
        fresh_wait_s=None,
        fresh_wait_p95_s=None,
        rank_docs_per_s=[0.0] * len(snapshot.rank_docs_per_s),
    )


def worker_state(
    snapshot: Snapshot | None, control: Control, silent: float | None = None
) -> str | None:
    """What the worker is doing, in words: learning, paused, idle since when, or not
    responding since its last heartbeat (``silent``)."""
    if snapshot is None:
        return None
    if silent is not None:
        return f"not responding since {_utc(silent)}"
    if control.paused:
        return "paused"
    if snapshot.idle_since is not None:
        return f"idle, queue empty since {_utc(snapshot.idle_since)}"
    return "learning"


def _source(status: SourceStatus) -> SourceOut:
    return SourceOut(
        source=status.source,
        host=status.host,
        state="unreachable",
        since=datetime.fromtimestamp(status.since, UTC),
        cause=status.cause,
        message=status.message,
    )


def stats(
    snapshot: Snapshot | None,
    live: LiveValues,
    sources: StreamKeys,
    silent: float | None = None,
) -> StatsOut:
    """The body of ``/stats`` (worker fields are null before the first snapshot; a ``silent``
    worker's rates are 0)."""
    s = snapshot if snapshot is None or silent is None else silenced(snapshot)
    return StatsOut(
        docs_seen=0 if s is None else s.docs_seen,
        docs_per_s=None if s is None else s.docs_per_s,
        worker_state=worker_state(s, live.control, silent),
        world_size=1 if s is None else s.world_size,
        rank_docs_per_s=[] if s is None else (s.rank_docs_per_s or [s.docs_per_s]),
        tokens_per_s=None if s is None else s.tokens_per_s,
        fresh_docs_per_s=None if s is None else s.fresh_docs_per_s,
        revisit_docs_per_s=None if s is None else s.revisit_docs_per_s,
        fresh_wait_s=None if s is None else s.fresh_wait_s,
        fresh_wait_p95_s=None if s is None else s.fresh_wait_p95_s,
        reservoir_articles=None if s is None else s.reservoir_articles,
        reservoir_passes=None if s is None else s.reservoir_passes,
        sampler=None if s is None else s.sampler,
        step_size=None if s is None else s.step_size,
        device=None if s is None else s.device,
        topics=None if s is None else s.n_topics,
        vocab_size=None if s is None else s.vocab_size,
        vocab_version=None if s is None else s.vocab_version,
        updated_at=None if s is None else timestamp(s.updated_at),
        heartbeat_at=timestamp(live.heartbeat),
        heartbeat_age_s=None if live.heartbeat is None else max(0.0, live.at - live.heartbeat),
        checkpoint_at=None if s is None else timestamp(s.checkpoint_at),
        paused=live.control.paused,
        checkpoint_seq=live.control.checkpoint_seq,
        worker={} if s is None else s.counters,
        queue=QueueOut(
            stream=sources.stream,
            group=sources.group,
            length=live.queue.length,
            pending=live.queue.pending,
        ),
        scraper=live.scraper,
        sources=[_source(status) for status in live.sources],
    )


def redis_up(up: bool) -> Metric:
    """``streamlda_redis_up``: 1 when the API's last read of Redis worked."""
    return Metric("streamlda_redis_up", "1 when the API can read Redis").add(int(up))


def _scraper_metrics(published: dict[str, int | float]) -> list[Metric]:
    """streamlda_scrape_errors_total{kind} plus one streamlda_scraper_<name>_total per counter;
    every known counter and skip reason is there from the start, at 0."""
    errors = Metric(
        "streamlda_scrape_errors_total", "Articles or requests lost, by kind", "counter"
    )
    metrics = [errors]
    counters: dict[str, int | float] = dict.fromkeys((*SCRAPER_TOTALS, *SCRAPER_SECONDS), 0)
    counters.update({f"skipped:{reason}": 0 for reason in SKIP_REASONS})
    counters.update(published)
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


def metrics(
    snapshot: Snapshot | None,
    point: PerplexityPoint | None,
    live: LiveValues,
    silent: float | None = None,
) -> list[Metric]:
    """Every metric family of ``/metrics`` while Redis answers (a ``silent`` worker's rates
    are 0)."""
    if snapshot is not None and silent is not None:
        snapshot = silenced(snapshot)
    families = [
        redis_up(True),
        Metric("streamlda_queue_length", "Entries in the article stream").add(live.queue.length),
        Metric("streamlda_queue_pending", "Entries delivered and not acknowledged").add(
            live.queue.pending
        ),
        Metric("streamlda_worker_paused", "1 while an operator paused the worker").add(
            int(live.control.paused)
        ),
        Metric("streamlda_model_published", "1 once a model is available to /infer").add(
            int(live.model is not None)
        ),
        Metric(
            "streamlda_worker_responding",
            "1 while the worker's heartbeat is recent (0 once silent past worker_silent_after_s)",
        ).add(int(snapshot is not None and silent is None)),
    ]
    if snapshot is not None:
        families += [
            Metric("streamlda_docs_seen", "Documents trained on").add(snapshot.docs_seen),
            Metric("streamlda_docs_per_second", "Training throughput").add(snapshot.docs_per_s),
            Metric(
                "streamlda_fresh_docs_per_second",
                "Fresh articles learned a second over the last minute",
            ).add(snapshot.fresh_docs_per_s),
            Metric(
                "streamlda_revisit_docs_per_second",
                "Articles learned again a second over the last minute (revisits)",
            ).add(snapshot.revisit_docs_per_s),
            _fresh_wait(snapshot),
            Metric("streamlda_reservoir_articles", "Articles held for revisits").add(
                snapshot.reservoir_articles
            ),
            Metric("streamlda_reservoir_passes", "Revisits per held article so far").add(
                snapshot.reservoir_passes
            ),
            Metric("streamlda_world_size", "Worker ranks learning one model").add(
                snapshot.world_size
            ),
            _rank_rates(snapshot),
            Metric("streamlda_tokens_per_second", "Training throughput").add(snapshot.tokens_per_s),
            Metric("streamlda_step_size", "Current sampler step size").add(snapshot.step_size),
            Metric("streamlda_topics", "Number of topics K").add(snapshot.n_topics),
            Metric("streamlda_vocabulary_size", "Vocabulary size W").add(snapshot.vocab_size),
            Metric(
                "streamlda_vocab_version",
                "Version of the worker's vocabulary (0 the first, one more at each refresh)",
            ).add(snapshot.vocab_version),
            Metric("streamlda_last_update_timestamp_seconds", "Unix time of the last update").add(
                snapshot.updated_at
            ),
        ]
        families += _topic_metrics(snapshot)
    worker = dict.fromkeys((*WORKER_COUNTERS, *WORKER_LIVE_COUNTERS), 0)
    worker.update({} if snapshot is None else snapshot.counters)  # 0 before the first snapshot
    for name, value in worker.items():
        family = metric_name("streamlda", "worker", name, "total")
        families.append(Metric(family, f"Worker counter {name}", "counter").add(value))
    if live.heartbeat is not None:
        families.append(
            Metric("streamlda_heartbeat_age_seconds", "Seconds since the worker's heartbeat").add(
                max(0.0, live.at - live.heartbeat)
            )
        )
    if point is not None:
        families.append(
            Metric("streamlda_perplexity", "Latest held-out perplexity")
            .add(point.perplexity, estimate="sample")
            .add(point.perplexity_avg, estimate="averaged")
        )
        families.append(
            Metric("streamlda_perplexity_docs_seen", "Documents seen at the latest evaluation").add(
                point.docs_seen
            )
        )
        if point.coherence is not None:
            families.append(
                Metric(
                    "streamlda_topic_coherence", "Mean NPMI of the topics' top 10 words (held out)"
                ).add(point.coherence)
            )
        if point.diversity is not None:
            families.append(
                Metric("streamlda_topic_diversity", "Distinct share of the topics' top 25").add(
                    point.diversity
                )
            )
    return families + _scraper_metrics(live.scraper)


def _topic_metrics(snapshot: Snapshot) -> list[Metric]:
    """How far the topics moved at the latest evaluation, and how many changed much."""
    drift = snapshot.topic_drift
    if not drift:
        return []
    return [
        Metric(
            "streamlda_topic_drift_bits",
            "Jensen-Shannon divergence of the topics since the evaluation before (matched)",
        )
        .add(sum(drift) / len(drift), stat="mean")
        .add(max(drift), stat="max"),
        Metric(
            "streamlda_topics_changed",
            f"Topics that moved more than {CHANGED_BITS} bits at the latest evaluation",
        ).add(sum(d > CHANGED_BITS for d in drift)),
    ]


def _rank_rates(snapshot: Snapshot) -> Metric:
    """Each rank's documents per second (one sample, rank 0, for a single worker)."""
    metric = Metric("streamlda_rank_docs_per_second", "Training throughput of each worker rank")
    for rank, rate in enumerate(snapshot.rank_docs_per_s or [snapshot.docs_per_s]):
        metric.add(rate, rank=str(rank))
    return metric
