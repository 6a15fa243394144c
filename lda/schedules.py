"""Step-size schedules: constant, and eps_t = a (1 + t/b)^-c (Patterson & Teh)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StepSchedule:
    """eps_t = a (1 + t/b)^-c; constant when b is None."""

    a: float
    b: float | None = None
    c: float = 0.55

    def __call__(self, t: int) -> float:
        if self.b is None:
            return self.a
        return self.a * (1.0 + t / self.b) ** (-self.c)
