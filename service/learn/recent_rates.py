"""Documents learned a second, fresh and revisited apart, and how long fresh ones waited, over
the last minute of wall time.

The learner's own docs/s (documents per second of its steps) says how fast it can learn; these
say what it does with the time it has: on a quiet stream a few fresh articles a second and the
rest of its time on revisits. A fresh article's wait runs from its arrival in the queue (its
stream entry id's time) to the end of the step that learned it: what revisits must not delay.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Iterable

WINDOW_S = 60.0


class RecentRates:
    """Fresh and revisited documents a second over the last ``window_s`` seconds."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self.started = time.monotonic()
        self.events: deque[tuple[float, int, int]] = deque()  # (when, fresh, revisited)
        self.waits: deque[tuple[float, float]] = deque()  # (when, a fresh document's wait)

    def add(self, fresh: int = 0, revisited: int = 0) -> None:
        self.events.append((time.monotonic(), fresh, revisited))

    def learned(self, arrived: Iterable[float]) -> None:
        """Fresh documents learned now that arrived at these unix times."""
        now, wall = time.monotonic(), time.time()
        self.waits.extend((now, max(0.0, wall - at)) for at in arrived)

    def wait_quantiles(self) -> tuple[float, float] | None:
        """(median, 95th percentile) seconds fresh documents waited over the window; None
        when none was learned in it."""
        now = time.monotonic()
        while self.waits and self.waits[0][0] < now - self.window_s:
            self.waits.popleft()
        if not self.waits:
            return None
        ordered = sorted(w for _, w in self.waits)
        if len(ordered) == 1:
            return ordered[0], ordered[0]
        cuts = statistics.quantiles(ordered, n=20, method="inclusive")
        return statistics.median(ordered), cuts[18]

    def rates(self) -> tuple[float, float]:
        """(fresh, revisited) documents a second over the window, or since the start if later."""
        now = time.monotonic()
        while self.events and self.events[0][0] < now - self.window_s:
            self.events.popleft()
        span = max(min(self.window_s, now - self.started), 1e-9)
        fresh = sum(e[1] for e in self.events)
        revisited = sum(e[2] for e in self.events)
        return fresh / span, revisited / span
