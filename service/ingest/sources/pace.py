"""A file source at a given pace: articles no faster than ``rate`` a second, never in bursts.

Replays a live stream offline (the live source brings tens of articles a second), for benchmarks
and demos: the worker then meets the same quiet gaps it meets on live Wikipedia.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from service.ingest.sources.base import Article, SkipCounter, Source, SourceStopped


class Paced:
    """``source``'s articles, the n-th not before ``n / rate`` seconds after the first read. A
    reader that falls behind gets no burst to catch up: the schedule restarts from now."""

    def __init__(
        self,
        source: Source,
        rate: float,
        stop: threading.Event | None = None,
    ) -> None:
        if not rate > 0:
            raise ValueError(f"a pace must be a positive number of articles a second, got {rate}")
        self.source = source
        self.name = source.name
        self.skipped: SkipCounter = source.skipped  # the same counter: skips are the file's
        self.rate = rate
        self.stop = stop or threading.Event()

    def __iter__(self) -> Iterator[Article]:
        gap = 1.0 / self.rate
        due = time.monotonic()
        for article in self.source:
            now = time.monotonic()
            if due > now and self.stop.wait(due - now):
                raise SourceStopped(f"{self.name} stopped while pacing")
            yield article
            due = max(due, time.monotonic() - gap) + gap
