"""The pipeline's figures: the article stream's length and its consumer group's pending count,
and the scrapers' counters (each as a number).

The stream's keys are settings (``stream``, ``group``, ``counters_key``); the scrapers write the
counters and the queue's add script counts what it queued (see docs/service.md, "Ingest").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import redis

from service.keys import DEFAULT_COUNTERS_KEY
from service.store.redis_values import text


@dataclass(frozen=True)
class QueueStats:
    """Length of the article stream and entries delivered to workers but not acknowledged."""

    length: int
    pending: int


def read_queue(client: redis.Redis, stream: str, group: str) -> QueueStats:
    """XLEN and the consumer group's pending count (0 before the group exists)."""
    length = int(client.xlen(stream))
    try:
        summary: Any = client.xpending(stream, group)
    except redis.ResponseError as exc:
        if "NOGROUP" not in str(exc):
            raise
        return QueueStats(length=length, pending=0)
    return QueueStats(length=length, pending=int(summary["pending"]))


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
