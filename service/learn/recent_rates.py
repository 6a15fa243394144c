"""Documents learned a second, fresh and revisited apart, and how long fresh ones waited, over
the last minute of wall time; and since when the stream has been empty.

The learner's own docs/s (documents per second of its steps) says how fast it can learn; these
say what it does with the time it has: on a quiet stream a few fresh articles a second and the
rest of its time on revisits. A fresh article's wait runs from its arrival in the queue (its
stream entry id's time) to the end of the step that learned it: what revisits must not delay.
Once reads have found the stream empty long enough the worker says so once (rates 0 and
``idle_since``): the last rate shown for as long as it idled misled operators.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

WINDOW_S = 60.0


class RecentRates:
    """Fresh and revisited documents a second over the last ``window_s`` seconds."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self.started = time.monotonic()
        self.events: deque[tuple[float, int, int]] = deque()  # (when, fresh, revisited)
        self.waits: deque[tuple[float, float]] = deque()  # (when, a fresh document's wait)
        self.empty_since: float | None = None  # monotonic: when reads began finding nothing
        self.idle_since: float | None = None  # time.time() it was reported idle (rates 0)

    def read(self) -> None:
        """Entries came: the stream is not empty, the worker not idle."""
        self.empty_since = self.idle_since = None

    def stepping(self) -> None:
        """A fresh step begins: the worker is not idle."""
        self.idle_since = None

    def quiet_for(self, seconds: float) -> bool:
        """True once reads have found the stream empty for ``seconds`` (counted from the first
        call since entries last came)."""
        now = time.monotonic()
        if self.empty_since is None:
            self.empty_since = now
        return now - self.empty_since >= seconds

    def shown(self) -> dict[str, Any]:
        """The snapshot's fields of these figures (rates 0 and no waits while idle)."""
        idle = self.idle_since is not None
        fresh, revisited = (0.0, 0.0) if idle else self.rates()
        wait = None if idle else self.wait_quantiles()
        return {
            "fresh_docs_per_s": fresh,
            "revisit_docs_per_s": revisited,
            "fresh_wait_s": None if wait is None else wait[0],
            "fresh_wait_p95_s": None if wait is None else wait[1],
            "idle_since": self.idle_since,
        }

    def go_idle(self) -> bool:
        """Mark the worker idle since the stream went quiet; False if it already was."""
        if self.idle_since is not None:
            return False
        assert self.empty_since is not None
        self.idle_since = time.time() - (time.monotonic() - self.empty_since)
        return True

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
