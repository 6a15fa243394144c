"""The model and sampler constants every step takes (:class:`Hyper`), in a module of its own so
that the samplers and the integrators they use (:mod:`lda.sgmcmc.sgrhmc_split`) import it without
importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # lda.config imports this module, and loads no torch
    import torch


@dataclass(frozen=True)
class Hyper:
    """Model and sampler constants: priors alpha (topics) and gamma (documents), friction C;
    ``seeded``, the (K, W) excess s_kw of seed words' priors over alpha, or None without
    seeds (lda.sgmcmc.seeds)."""

    alpha: float
    gamma: float
    friction: float = 1.0
    seeded: torch.Tensor | None = None

    @property
    def alpha_kw(self) -> float | torch.Tensor:
        """Each coordinate's prior shape alpha + s_kw: alpha itself without seeds."""
        return self.alpha if self.seeded is None else self.alpha + self.seeded
