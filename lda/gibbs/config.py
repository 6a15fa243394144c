"""What a Gibbs call needs besides beta, the data and its randomness: one frozen value that every
backend reads, in place of a train of arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from lda.config import Backend, Init, Kernel, LearnerConfig, Method
from lda.gamma import Gamma


@dataclass(frozen=True)
class GibbsConfig:
    """The sweeps of one call: the prior, how many sweeps and how many discarded, the method,
    where they run (``backend``, ``kernel``: see :data:`lda.config.Backend` and
    :data:`lda.config.Kernel`), the start, and which sums the caller will read."""

    gamma: Gamma  # a scalar (symmetric) or one value per topic (lda.gamma)
    sweeps: int
    burn_in: int
    method: Method = "exact"
    backend: Backend = "auto"
    init: Init = "uniform"
    kernel: Kernel = "auto"
    # False lets the CUDA and sparse kernels skip the word sums (the held-out scorer) ...
    need_topic_word: bool = True
    # ... and the sparse CPU kernel the document sums (the learner's step).
    need_document_topic: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.burn_in < self.sweeps:
            raise ValueError(
                f"need 0 <= burn_in < sweeps, got burn_in={self.burn_in}, sweeps={self.sweeps}"
            )
        for name, kind in (
            ("method", Method),
            ("backend", Backend),
            ("init", Init),
            ("kernel", Kernel),
        ):
            value = getattr(self, name)
            if value not in get_args(kind):
                raise ValueError(f"unknown {name} {value!r}: choose from {get_args(kind)}")

    @property
    def kept(self) -> int:
        """Sweeps summed after the burn-in."""
        return self.sweeps - self.burn_in

    @property
    def rao_blackwell(self) -> bool:
        """Sum the conditional probabilities rather than the 0/1 indicators."""
        return self.method == "rao-blackwell"

    @classmethod
    def from_learner(cls, config: LearnerConfig) -> GibbsConfig:
        """The learner's sweeps per minibatch; its step reads the word sums only."""
        assert config.gamma is not None and config.sweeps is not None
        assert config.burn_in is not None
        assert config.gibbs is not None and config.gibbs_init is not None
        return cls(
            gamma=config.gamma,
            sweeps=config.sweeps,
            burn_in=config.burn_in,
            method=config.gibbs,
            backend=config.gibbs_backend,
            init=config.gibbs_init,
            kernel=config.gibbs_kernel,
            need_document_topic=False,
        )
