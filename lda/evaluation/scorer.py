"""Held-out scoring as a state of its own: a generator and a posterior average, fed any beta.

:meth:`StreamingLDA.evaluate` scores the model's beta_mean (or its current sample) with its
evaluation generator and average; a :class:`HeldoutScorer` does the same for betas handed to
it (e.g. by the worker to a scoring process), so a run scored elsewhere gives the same numbers,
draw for draw, and its state can be saved between points (``state_dict``) to resume exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from lda.config import Method
from lda.evaluation.perplexity import (
    HeldoutSet,
    PosteriorAverage,
    perplexity_from_probabilities,
    test_token_probabilities,
)
from lda.gamma import Gamma
from lda.gibbs import GibbsConfig

# Burn-in is 1/BURN_IN_SHARE of the held-out sweeps: with chains started from beta the
# estimate's remaining bias is its Monte Carlo noise (the log of a noisy pi_hat), so kept sweeps
# are worth more than burn-in ones (docs/defaults.md, "The held-out estimator", has the
# measurements).
BURN_IN_SHARE = 5


@dataclass(frozen=True)
class ScorerConfig:
    """The held-out estimator's knobs (docs/heldout.md): the prior, the sweeps and the sampler."""

    gamma: Gamma  # a scalar or one value per topic (lda.gamma)
    sweeps: int
    method: Method = "exact"

    @property
    def burn_in(self) -> int:
        """A fifth: the chains start from p(k | w) ∝ beta_kw, near their stationary law."""
        return self.sweeps // BURN_IN_SHARE

    @property
    def gibbs(self) -> GibbsConfig:
        """The estimator's sweeps: a start drawn from beta, the document sums only."""
        return GibbsConfig(
            gamma=self.gamma,
            sweeps=self.sweeps,
            burn_in=self.burn_in,
            method=self.method,
            init="beta",
            need_topic_word=False,
        )


class HeldoutScorer:
    """(perplexity, posterior-averaged perplexity) of successive betas on one held-out set."""

    def __init__(
        self,
        config: ScorerConfig,
        generator: torch.Generator,
        average: PosteriorAverage | None = None,
    ) -> None:
        self.config = config
        self.generator = generator
        self.average = average if average is not None else PosteriorAverage()

    def score(self, beta: torch.Tensor, heldout: HeldoutSet) -> tuple[float, float]:
        """Score ``beta`` (K x W, rows sum to 1) and fold it into the posterior average."""
        probabilities = test_token_probabilities(beta, heldout, self.config.gibbs, self.generator)
        averaged = self.average.add(probabilities)
        return perplexity_from_probabilities(probabilities), averaged

    def state_dict(self) -> dict[str, Any]:
        """The generator's state and the average (on the CPU): everything a next score uses."""
        average = self.average.state_dict()
        total = average["total"]
        if isinstance(total, torch.Tensor):
            average["total"] = total.detach().to("cpu").clone()
        return {"generator": self.generator.get_state(), "posterior_average": average}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a :meth:`state_dict` (the average moves to the generator's device)."""
        self.generator.set_state(state["generator"])
        average = dict(state["posterior_average"])
        if isinstance(average.get("total"), torch.Tensor):
            average["total"] = average["total"].to(self.generator.device)
        self.average.load_state_dict(average)
