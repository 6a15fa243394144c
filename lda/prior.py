"""The asymmetric document-topic prior gamma_k, learned from the stream (docs/model.md, "The
learned document-topic prior").

Minka's fixed point for a Dirichlet-multinomial (Minka 2000; Wallach, Mimno & McCallum 2009),

    gamma_k <- gamma_k sum_d [psi(n_dk + gamma_k) - psi(gamma_k)]
                       / sum_d [psi(n_d + gamma_0) - psi(gamma_0)],

made stochastic: each minibatch's sums (documents' expected counts E[n_dk], from the learner's
Gibbs sweeps) move log gamma_k by a Robbins-Monro step rho_t times the fixed point's relative
change, linearised, (num_k - den) / den_bar. Its root is exactly the fixed point's
(E[num_k] = E[den]); den_bar (a running mean of den) only scales the step. Pure maths: no global
state, no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from lda.gamma import Gamma

# gamma_k never falls below this: a topic nobody uses keeps a little prior mass, so that a
# document can still move onto it (and the kernels never divide by zero).
GAMMA_FLOOR = 1e-4


@dataclass(frozen=True)
class PriorSchedule:
    """When and how fast gamma learns: ``burn_in`` minibatches first (the topics mean little
    yet), then steps rho_t = (1 + t / tau)^-kappa (t counted from the burn-in's end, so the
    first step is a whole fixed-point step), each log change clipped to +-``max_log_step``."""

    burn_in: int = 20
    tau: float = 10.0
    kappa: float = 0.6
    floor: float = GAMMA_FLOOR
    max_log_step: float = 1.0
    # False: only the shape gamma / gamma_0 is learned, the total gamma_0 stays at the start's
    # K gamma. True (the default, Minka's estimator): the total is learned too.
    learn_total: bool = True

    def rho(self, t: int) -> float:
        """The step of the t-th update after the burn-in (t = 0, 1, ...)."""
        return float((1.0 + t / self.tau) ** -self.kappa)


def minka_sums(counts: torch.Tensor, gamma: torch.Tensor) -> tuple[torch.Tensor, float, int]:
    """The fixed point's sums over the documents of ``counts`` ((n, K) E[n_dk]) at ``gamma``
    ((K,)): (num (K,), den, documents), empty documents left out."""
    counts = counts.to(torch.float64)
    gamma = gamma.to(torch.float64)
    lengths = counts.sum(dim=1)
    counts = counts[lengths > 0]
    lengths = lengths[lengths > 0]
    n = int(lengths.numel())
    if n == 0:
        return torch.zeros_like(gamma), 0.0, 0
    digamma = torch.special.digamma
    num = (digamma(counts + gamma) - digamma(gamma)).sum(dim=0)
    total = gamma.sum()
    den = float((digamma(lengths + total) - digamma(total)).sum())
    return num, den, n


def fixed_point(
    counts: torch.Tensor, gamma: torch.Tensor, iterations: int = 200, floor: float = GAMMA_FLOOR
) -> torch.Tensor:
    """Minka's batch fixed point on a whole set of documents (the exact estimator the stream
    approximates; the tests' oracle)."""
    gamma = gamma.to(torch.float64).clone()
    for _ in range(iterations):
        num, den, n = minka_sums(counts, gamma)
        if n == 0 or den <= 0:
            break
        gamma = (gamma * num / den).clamp_min(floor)
    return gamma


class LearnedPrior:
    """gamma (K,) and the running scale of the stochastic fixed point. ``learn`` False keeps the
    symmetric start for ever (``--fixed-gamma``)."""

    def __init__(
        self,
        start: float,
        n_topics: int,
        learn: bool,
        schedule: PriorSchedule | None = None,
    ):
        if not start > 0:
            raise ValueError(f"gamma must be positive, got {start}")
        self.learn = learn
        self.schedule = schedule or PriorSchedule()
        self.gamma = torch.full((n_topics,), float(start), dtype=torch.float64)
        self.total = float(start) * n_topics  # gamma_0 at the start
        self.observed = 0  # minibatches seen
        self.updates = 0  # steps taken after the burn-in
        self.den_bar = 0.0  # running mean of den per document

    @property
    def value(self) -> Gamma:
        """What the kernels take: the scalar while symmetric (the exact old path), else the
        vector as a tuple."""
        first = float(self.gamma[0])
        if bool((self.gamma == first).all()):
            return first
        return tuple(float(g) for g in self.gamma)

    def observe(self, num: torch.Tensor, den: float, documents: int) -> None:
        """One minibatch's :func:`minka_sums` (summed over a group's ranks by the caller):
        after the burn-in, one stochastic fixed-point step."""
        if not self.learn or documents == 0:
            return
        self.observed += 1
        if self.observed <= self.schedule.burn_in or den <= 0:
            return
        rho = self.schedule.rho(self.updates)
        per_doc = den / documents
        if not self.schedule.learn_total:
            # The total held: stationary where num_k is the same for every k, so each num_k is
            # measured against their gamma-weighted mean instead of den.
            shape = self.gamma / self.gamma.sum()
            per_doc = float((shape * num.to(torch.float64)).sum()) / documents
        self.den_bar = per_doc if self.updates == 0 else (1 - rho) * self.den_bar + rho * per_doc
        self.updates += 1
        change = ((num.to(torch.float64) / documents - per_doc) / self.den_bar).clamp(
            -self.schedule.max_log_step, self.schedule.max_log_step
        )
        gamma = self.gamma * torch.exp(rho * change)
        if not self.schedule.learn_total:
            gamma = gamma * (self.total / gamma.sum())
        self.gamma = gamma.clamp_min(self.schedule.floor)

    def sums(self, counts: torch.Tensor) -> tuple[torch.Tensor, float, int]:
        """The fixed point's sums of one (n, K) block of expected counts E[n_dk], rounded to
        whole counts first: an average over sweeps spreads a document over more topics than
        any one sample does, and psi(E[n] + g) > E[psi(n + g)] would push gamma up (with the
        averages themselves the learned total came out 16 times the symmetric one)."""
        return minka_sums(counts.to(torch.float64).round(), self.gamma)

    def observe_counts(self, counts: torch.Tensor) -> None:
        """:meth:`observe` on one (n, K) block of expected counts (a single learner)."""
        if self.learn:
            self.observe(*self.sums(counts))

    def state_dict(self) -> dict[str, Any]:
        return {
            "learn": self.learn,
            "gamma": self.gamma.clone(),
            "observed": self.observed,
            "updates": self.updates,
            "den_bar": self.den_bar,
        }

    @classmethod
    def from_state_dict(
        cls, state: dict[str, Any] | None, start: float, n_topics: int, learn: bool
    ) -> LearnedPrior:
        """The saved prior, or (a checkpoint from before it: ``state`` None) the symmetric start.
        ``learn`` is the configuration's now (a restart may switch learning on or off)."""
        prior = cls(start, n_topics, learn)
        if state is None:
            return prior
        gamma = torch.as_tensor(state["gamma"], dtype=torch.float64).reshape(-1)
        if gamma.numel() != n_topics:
            raise ValueError(f"the saved gamma has {gamma.numel()} values for {n_topics} topics")
        prior.gamma = gamma.clone()
        prior.observed = int(state.get("observed", 0))
        prior.updates = int(state.get("updates", 0))
        prior.den_bar = float(state.get("den_bar", 0.0))
        return prior
