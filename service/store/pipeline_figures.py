"""The pipeline's figures, read one way by the queue and the API: the article stream's length
and its consumer group's pending count, and the scrapers' counters (each as a number).

The stream's keys are settings (``stream``, ``group``, ``counters_key``); the scrapers write the
counters and the queue's add script counts what it queued (see docs/service.md, "Ingest").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import redis

from service.keys import DEFAULT_COUNTERS_KEY
from service.store.redis_values import text


@dataclass(frozen=True)
class QueueStats:
    """Length of the article stream and entries delivered to workers but not acknowledged."""

    length: int
    pending: int

    @property
    def unread(self) -> int:
        """Entries queued and not yet delivered to a worker: what the high-water mark bounds."""
        return max(0, self.length - self.pending)


def read_queue(client: redis.Redis, stream: str, group: str) -> QueueStats:
    """XLEN and the consumer group's pending count, read together in one MULTI (no pending
    entries before the stream and its group exist)."""
    pipe = client.pipeline(transaction=True)
    pipe.xlen(stream)
    pipe.xpending(stream, group)
    length, summary = pipe.execute(raise_on_error=False)
    if isinstance(length, Exception):
        raise length
    if isinstance(summary, Exception):
        if not isinstance(summary, redis.ResponseError) or "NOGROUP" not in str(summary):
            raise summary
        return QueueStats(length=int(length), pending=0)
    return QueueStats(length=int(length), pending=int(summary["pending"]))


def read_scraper_counters(
    client: redis.Redis, key: str = DEFAULT_COUNTERS_KEY
) -> dict[str, int | float]:
    """The scrapers' counters (fetched, queued, skipped:<reason>, updated_at, ...) as numbers,
    by name (a value that is no number is left out)."""
    raw: Mapping[bytes | str, bytes | str] = client.hgetall(key)
    counters: dict[str, int | float] = {}
    for name, value in raw.items():
        number = text(value)
        try:
            counters[text(name)] = int(number) if number.lstrip("-").isdigit() else float(number)
        except ValueError:
            continue
    return dict(sorted(counters.items()))
