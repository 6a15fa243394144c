"""The scraper: moves articles from a source into the Redis stream, without loss.

One log line per batch with its counts and the running totals (fetched, queued, duplicates,
skipped by reason, requests, retries, backpressure waits); the totals are also added to the
shared counters hash (see :mod:`service.ingest.queue`; queued, duplicates and re-reads are
counted there by the script that queues each batch, so a scraper killed before it publishes
never leaves them short). When Redis is unavailable, at start or in the middle of a run, the
scraper keeps the batch it holds and retries with exponential
backoff (:class:`service.store.redis_retry.RedisRetry`, counted as ``redis_reconnects``) until
Redis is back; only a stop request ends that wait, and then it says how many fetched articles it
did not queue. Each batch is added under its own token, so when Redis dies after queueing it but
before replying, the retry counts those articles as queued rather than as duplicates. Several
scrapers can run at once; the queue's atomic de-duplication keeps every page id to one entry.

A file source (``jsonl:``, ``dump:``) has a position in Redis, moved by the same script that
queues each batch: a scraper starts where its file's scrapers got to, and the seen ids it reads
again before that position count as re-reads (``rereads``), not as duplicates.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import redis

from service.ingest.bounded_clean import CleaningStopped
from service.ingest.queue import ADD_COUNTERS, ArticleQueue, QueueConfig, new_batch_token
from service.ingest.source_health import SourceHealth
from service.ingest.sources import Article, Source, SourceStopped, file_source
from service.store.counters import SCRAPER_TOTALS
from service.store.redis_retry import RedisGaveUp, RedisRetry, RetryConfig
from service.store.source_status import (
    SourceStatus,
    publish_source_status,
    read_source_status,
)

log = logging.getLogger(__name__)

# Totals published to the counters hash (skipped reasons are added as "skipped:<reason>").
TOTAL_NAMES = SCRAPER_TOTALS


@dataclass
class Totals:
    """Running totals of one scraper process."""

    counts: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    backpressure_wait_seconds: float = 0.0

    def as_counters(self) -> dict[str, float]:
        """Flat name -> number, as stored in the counters hash."""
        flat: dict[str, float] = {name: self.counts[name] for name in TOTAL_NAMES}
        flat["skipped"] = sum(self.skipped.values())
        flat.update({f"skipped:{reason}": n for reason, n in self.skipped.items()})
        flat["backpressure_wait_seconds"] = self.backpressure_wait_seconds
        return flat

    def summary(self) -> str:
        """One readable line of the totals."""
        c = self.counts
        reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(self.skipped.items()))
        return (
            f"{c['fetched']} fetched, {c['queued']} queued, {c['duplicates']} duplicates, "
            f"{c['rereads']} re-reads, "
            f"{sum(self.skipped.values())} skipped"
            + (f" ({reasons})" if reasons else "")
            + f", {c['requests']} requests, {c['retries']} retries, {c['failures']} failures, "
            f"{c['backpressure_waits']} backpressure waits "
            f"({self.backpressure_wait_seconds:.1f} s), {c['redis_reconnects']} Redis retries"
        )


@dataclass(frozen=True)
class ScraperConfig:
    """The scraper's part of the settings: the stream, the Redis backoff, the batch size."""

    queue: QueueConfig
    retry: RetryConfig
    articles_per_request: int


class Scraper:
    """Moves batches of articles from a source into the queue until a limit, the end, or stop."""

    def __init__(
        self,
        config: ScraperConfig,
        source: Source,
        *,
        client: redis.Redis,
        limit: int | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.config = config
        self.source = source
        self.client = client
        self.queue = ArticleQueue(client, config.queue)
        self.limit = limit
        source_stop = getattr(source, "stop", None)  # the live source's waits end on it
        if stop is None:
            stop = source_stop if isinstance(source_stop, threading.Event) else threading.Event()
        self.stop = stop
        # Waits out Redis outages; gives up (with the batch in hand) once ``stop`` is set.
        self.redis = RedisRetry(config.retry, self.stop, on_retry=self._count_reconnect)
        self.totals = Totals()
        self._published: dict[str, float] = {}
        self.unqueued: list[Article] = []
        # The live source's tracker of failures: its reports go to Redis for the API.
        health = getattr(source, "health", None)
        self.health: SourceHealth | None = health if isinstance(health, SourceHealth) else None
        if self.health is not None:
            self.health.on_change = self._publish_status
        # A file's identity: the key of its position (None: a source without one).
        self.file = file_source(source)
        self.identity = None if self.file is None else self.file.identity()

    def run(self) -> Totals:
        """Scrape until ``limit`` articles are queued, the source ends, or ``stop`` is set."""
        failed = False
        try:
            self.redis("creating the consumer group", self.queue.ensure_group)
            self._adopt_status()
            self._resume()
            for batch in self._batches():
                self._queue_batch(batch)
                if self.unqueued or self._done():
                    break
        except RedisGaveUp as exc:
            log.warning("%s: up to %d fetched articles not queued", exc, len(self.unqueued))
        except SourceStopped as exc:
            log.info("source %s", exc)
        except CleaningStopped:  # the live source: its request in hand is dropped, not queued
            log.warning("stopped while cleaning a page: the articles of that request not queued")
        except BaseException:
            failed = True  # a restarted scraper takes the source's report over
            raise
        finally:
            self._count_source()  # what was tried, even when no batch came of it
            self._publish()
            log.info("done: %s", self.totals.summary())
            if not failed and self.health is not None and self.health.reported is not None:
                self._publish_status(None)  # stopped on purpose: nobody is left to update it
        return self.totals

    def _done(self) -> bool:
        if self.stop.is_set():
            return True
        return self.limit is not None and self.totals.counts["queued"] >= self.limit

    def _remaining(self) -> int:
        most = self.config.articles_per_request
        if self.limit is None:
            return most
        return max(1, min(most, self.limit - self.totals.counts["queued"]))

    def _batches(self) -> Iterator[list[Article]]:
        """Batches of at most ``_remaining()`` articles: one API request, or a slice of a file."""
        fetch: Callable[[int], list[Article]] | None = getattr(self.source, "fetch_batch", None)
        if fetch is not None:
            while not self._done():
                yield fetch(self._remaining())
            return
        articles = iter(self.source)
        while not self._done():
            batch: list[Article] = []
            try:
                for article in itertools.islice(articles, self._remaining()):
                    batch.append(article)
            except CleaningStopped:
                # The page in the cleaner is abandoned, not counted: the position moves only
                # with what is queued, so a file's next run reads that page again.
                log.warning(
                    "stopped while cleaning a page: queueing the %d articles before it; "
                    "the page is left for the next run",
                    len(batch),
                )
                if batch:
                    yield batch
                return
            if not batch:
                return
            yield batch

    def _queue_batch(self, batch: list[Article]) -> None:
        fetched_at = time.time()
        token = new_batch_token()  # one for all retries: what an unanswered try queued counts
        try:
            result = self.redis(
                "queueing a batch",
                lambda: self.queue.add(
                    batch, fetched_at=fetched_at, stop=self.stop, batch=token, source=self.identity
                ),
            )
        except RedisGaveUp:
            self.unqueued = batch
            raise
        counts = self.totals.counts
        skipped_before = sum(self.totals.skipped.values())
        self.totals.skipped = Counter(self.source.skipped.counts)
        counts["titles_truncated"] = self.source.skipped.truncated["title"]
        counts["batches"] += 1
        counts["fetched"] += len(batch)
        counts["queued"] += result.queued
        counts["duplicates"] += result.duplicates
        counts["rereads"] += result.rereads
        counts["backpressure_waits"] += result.backpressure_waits
        self._count_source()
        self.totals.backpressure_wait_seconds += result.waited_s
        self.unqueued = result.unqueued
        if result.unqueued:
            log.warning(
                "stopped while the stream was full: %d fetched articles not queued",
                len(result.unqueued),
            )
        log.info(
            "batch %d: %d fetched, %d queued, %d duplicates, %d re-reads, %d skipped | total: %s",
            counts["batches"],
            len(batch),
            result.queued,
            result.duplicates,
            result.rereads,
            sum(self.totals.skipped.values()) - skipped_before,
            self.totals.summary(),
        )
        self._publish()

    def _count_source(self) -> None:
        """The source's own counts of what it tried: requests, retries and failed attempts."""
        counts = self.totals.counts
        counts["requests"] = int(getattr(self.source, "requests", 0))
        counts["retries"] = int(getattr(self.source, "retries", 0))
        counts["failures"] = sum(getattr(self.source, "failures", {}).values())

    def _publish(self) -> None:
        """Add what changed since the last publication to the shared counters hash, except
        what the queue's add script counted there already."""
        current = self.totals.as_counters()
        deltas = {
            name: value - self._published.get(name, 0)
            for name, value in current.items()
            if name not in ADD_COUNTERS
        }
        try:
            self.redis("publishing counters", lambda: self.queue.publish_counters(deltas))
        except RedisGaveUp:
            log.warning("stopped while Redis was unavailable: the last counters are not published")
            return
        self._published = current

    def _resume(self) -> None:
        """Start a file source where its scrapers got to (the position queued with a batch)."""
        file, identity = self.file, self.identity
        if file is None or identity is None:
            return
        position = self.redis(
            "reading the source's position", lambda: self.queue.position(identity)
        )
        if position is None:
            log.info("%s: no position recorded, reading from the start", file.name)
            return
        file.resume_from(position)
        log.info(
            "%s: resuming after %d %s (decompressed byte %d)",
            file.name,
            position.count,
            "pages" if file.kind == "dump" else "lines",
            position.offset,
        )

    def _adopt_status(self) -> None:
        """Carry on an outage of this source that an earlier scraper reported."""
        if self.health is None:
            return
        reported = self.redis(
            "reading the sources' status", lambda: read_source_status(self.client)
        )
        for status in reported:
            if status.source == self.health.source:
                self.health.adopt(status)

    def _publish_status(self, status: SourceStatus | None) -> None:
        """Tell the API this source is unreachable (or no longer); advisory, never fatal."""
        if self.health is None:
            return
        try:
            publish_source_status(self.client, self.health.source, status)
        except (redis.RedisError, OSError) as exc:
            log.warning("could not publish the source's status: %s", exc)

    def _count_reconnect(self) -> None:
        self.totals.counts["redis_reconnects"] += 1
