"""The model and sampler constants every step takes (:class:`Hyper`), in a module of its own so
that the samplers and the integrators they use (:mod:`lda.sgmcmc.sgrhmc_split`) import it without
importing each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Hyper:
    """Model and sampler constants: priors alpha (topics) and gamma (documents), friction C."""

    alpha: float
    gamma: float
    friction: float = 1.0
