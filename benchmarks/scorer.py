"""What a learner benchmark records and how it scores: a point per checkpoint, a run per system,
and the one held-out estimator every system's K x W topics are scored by (common random
numbers), with the NPMI of their top words."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from lda.config import Method, default_burn_in
from lda.evaluation.coherence import topic_quality
from lda.evaluation.perplexity import (
    HeldoutSet,
    PosteriorAverage,
    perplexity_from_probabilities,
    test_token_probabilities,
)
from lda.gibbs import GibbsConfig


@dataclass
class Point:
    """One checkpoint of one model."""

    docs: int
    tokens: int
    train_s: float
    s_per_100_docs: float
    tokens_per_s: float
    perplexity: float
    perplexity_avg: float
    perplexity_own: float
    perplexity_own_avg: float
    eval_s: float
    perplexity_mean: float | None = None  # streamlda's beta_mean (the served estimate)
    prep_s: float = 0.0  # tomotopy: add_doc and initialisation, not in train_s
    iterations: int | None = None  # tomotopy: Gibbs iterations behind this point
    npmi: float | None = None  # mean NPMI of the served estimate's top words (held-out documents)

    @property
    def served(self) -> float:
        """Perplexity of the estimate the system serves: beta_mean for streamlda, else beta."""
        return self.perplexity if self.perplexity_mean is None else self.perplexity_mean


@dataclass
class Run:
    """All checkpoints of one model, with its settings and warm-up time."""

    name: str
    settings: dict[str, Any]
    family: str = "streamlda"  # streamlda, gensim, sklearn or tomotopy
    sweeps: int | None = None  # passes over each training token (Gibbs sweeps or iterations)
    warmup_s: float = 0.0
    points: list[Point] = field(default_factory=list)
    curve: list[Point] = field(default_factory=list)  # tomotopy: the last model by iteration
    error: str | None = None
    device: str = "cpu"  # where the learner ran (the peers: the CPU)
    gpu_peak_mib: float | None = None  # a GPU run: torch's peak allocation (the kernel's too)


class Scorer:
    """Scores any K x W topic matrix on the held-out set, with common random numbers: held-out
    perplexity, and the NPMI coherence of its top words counted in the held-out documents."""

    def __init__(
        self,
        heldout: HeldoutSet,
        gamma: float,
        sweeps: int,
        method: Method,
        seed: int,
        reference: Sequence[Sequence[int]] = (),
    ) -> None:
        self.heldout = heldout
        self.reference = reference
        self.gamma = gamma
        self.sweeps = sweeps
        self.method = method
        self.seed = seed
        self.averages: dict[tuple[str, str], PosteriorAverage] = {}

    def _probabilities(self, beta: torch.Tensor, gamma: float, index: int) -> torch.Tensor:
        generator = torch.Generator().manual_seed(self.seed + 7919 * (index + 1))
        burn_in = default_burn_in(self.sweeps)
        # A uniform start: the estimator of the recorded peer tables, kept comparable.
        config = GibbsConfig(gamma, self.sweeps, burn_in, self.method, init="uniform")
        return test_token_probabilities(beta.double(), self.heldout, config, generator)

    def _fold(self, model: str, key: str, probabilities: torch.Tensor) -> tuple[float, float]:
        average = self.averages.setdefault((model, key), PosteriorAverage())
        return perplexity_from_probabilities(probabilities), average.add(probabilities)

    def score(
        self, model: str, beta: torch.Tensor, own_gamma: float, index: int
    ) -> tuple[float, float, float, float]:
        """(ppl, ppl_avg) at the common gamma and (ppl, ppl_avg) at the model's own gamma."""
        common = self._probabilities(beta, self.gamma, index)
        own = common if own_gamma == self.gamma else self._probabilities(beta, own_gamma, index)
        return self._fold(model, "common", common) + self._fold(model, "own", own)

    def npmi(self, beta: torch.Tensor) -> float | None:
        """Mean NPMI of the topics' top words in the reference documents (None without any)."""
        if not self.reference:
            return None
        return topic_quality(beta, self.reference).mean_coherence

    def score_common(self, model: str, beta: torch.Tensor, index: int) -> tuple[float, float]:
        """(ppl, ppl_avg) at the common gamma only: for second estimates and curve points."""
        return self._fold(model, "common", self._probabilities(beta, self.gamma, index))


def point_of(
    docs: int, tokens: int, train_s: float, scores: tuple[float, ...], eval_s: float
) -> Point:
    """A checkpoint's point from its counts, learner seconds and four perplexities (``score``'s
    order), its rates derived."""
    return Point(
        docs=docs,
        tokens=tokens,
        train_s=train_s,
        s_per_100_docs=100.0 * train_s / docs,
        tokens_per_s=tokens / train_s if train_s > 0 else math.inf,
        perplexity=scores[0],
        perplexity_avg=scores[1],
        perplexity_own=scores[2],
        perplexity_own_avg=scores[3],
        eval_s=eval_s,
    )


def progress(name: str, p: Point) -> None:
    """One line on stderr per scored checkpoint, as the runs go."""
    mean = "" if p.perplexity_mean is None else f"  mean {p.perplexity_mean:8.1f}"
    mean += "" if p.npmi is None else f"  npmi {p.npmi:+.3f}"
    print(
        f"  {name:12s} {p.docs:6d} docs  ppl {p.perplexity:8.1f}{mean}  avg {p.perplexity_avg:8.1f}"
        f"  {p.s_per_100_docs:.3f} s/100 docs  {p.tokens_per_s:9.0f} tok/s"
        f"  (eval {p.eval_s:.1f} s)",
        file=sys.stderr,
        flush=True,
    )
