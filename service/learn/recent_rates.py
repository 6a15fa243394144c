"""Documents learned a second, fresh and revisited apart, over the last minute of wall time.

The learner's own docs/s (documents per second of its steps) says how fast it can learn; these
say what it does with the time it has: on a quiet stream a few fresh articles a second and the
rest of its time on revisits.
"""

from __future__ import annotations

import time
from collections import deque

WINDOW_S = 60.0


class RecentRates:
    """Fresh and revisited documents a second over the last ``window_s`` seconds."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self.started = time.monotonic()
        self.events: deque[tuple[float, int, int]] = deque()  # (when, fresh, revisited)

    def add(self, fresh: int = 0, revisited: int = 0) -> None:
        self.events.append((time.monotonic(), fresh, revisited))

    def rates(self) -> tuple[float, float]:
        """(fresh, revisited) documents a second over the window, or since the start if later."""
        now = time.monotonic()
        while self.events and self.events[0][0] < now - self.window_s:
            self.events.popleft()
        span = max(min(self.window_s, now - self.started), 1e-9)
        fresh = sum(e[1] for e in self.events)
        revisited = sum(e[2] for e in self.events)
        return fresh / span, revisited / span
