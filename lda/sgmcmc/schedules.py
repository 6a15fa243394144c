"""Step-size schedules: constant, and eps_t = a (1 + t/b)^-c (Patterson & Teh); and how a
sampler's defaults follow a larger minibatch (:class:`BatchScaling`)."""

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


@dataclass(frozen=True)
class BatchScaling:
    """How a sampler's default step schedule and mean decay, tuned at ``reference`` documents
    per step, carry over to minibatches of n >= reference: a * (n/reference)^power, b in steps
    * reference/n (the same decay in documents), mean decay^(n/reference) (beta_mean's window
    the same in documents). Larger minibatches mean fewer steps per document; with the
    reference's values the samplers served worse topics at n = 1,000 (docs/defaults.md,
    "Minibatch size and batch scaling")."""

    reference: int
    power: float

    def factor(self, n: int) -> float:
        """n over the reference (1 below it: the rule was measured upwards only)."""
        return max(1.0, n / self.reference)

    def schedule(self, schedule: StepSchedule, n: int) -> StepSchedule:
        """The schedule for minibatches of ``n``."""
        f = self.factor(n)
        b = None if schedule.b is None else schedule.b / f
        return StepSchedule(schedule.a * f**self.power, b, schedule.c)

    def mean_decay(self, decay: float, n: int) -> float:
        """The exponential mean's decay per step for minibatches of ``n``."""
        return float(decay ** self.factor(n))
