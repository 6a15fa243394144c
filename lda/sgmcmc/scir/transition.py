"""The exact transition of the Cox-Ingersoll-Ross (CIR) process, SCIR's step (docs/samplers.md):

    d theta = (a - theta) dt + sqrt(2 theta) dW.

Over a time h > 0, with c = 1 - e^-h (Cox, Ingersoll & Ross 1985; Baker et al. 2018):

    P ~ Poisson(theta e^-h / c),   theta' = c Gamma(a + P, 1).

Exact for every h, not only as h -> 0: Gamma(a, 1) is the stationary law whatever h, and as the
process is Markov and time-homogeneous, a transition over h1 then one over h2 (the same a) is
one over h1 + h2 in law, so steps that leave a coordinate's a unchanged can be taken at once.
Elementwise on tensors of any shape and device; the randomness comes from ``generator``.
:func:`scir_transition` is SCIR's dense step (lda.sgmcmc.samplers); the lazy chain steps only
a minibatch's columns (lda.sgmcmc.scir.lazy).
"""

from __future__ import annotations

import math

import torch

from lda.draws import standard_gamma
from lda.sgmcmc.gradient import MinibatchStatistics
from lda.sgmcmc.hyper import Hyper


def _decay(h: float) -> tuple[float, float]:
    """(e^-h, c = 1 - e^-h) for a step h > 0 (c without cancellation for small h)."""
    if not h > 0.0:
        raise ValueError(f"a CIR step needs h > 0, got {h}")
    return math.exp(-h), -math.expm1(-h)


def cir_transition(
    theta: torch.Tensor, a: torch.Tensor, h: float, generator: torch.Generator | None
) -> torch.Tensor:
    """One exact draw of theta after time h from ``theta`` (>= 0), shapes a (> 0) broadcast.

    torch's Gamma sampler returns at least the dtype's smallest normal number, so theta' is
    never exactly 0: below c * tiny (shapes a << 1 put most of their mass there, ~93% at
    a = 1e-4 in float64) the draw stands for the whole underflowing tail, as any float would."""
    decay, c = _decay(h)
    mixing = torch.poisson(theta * (decay / c), generator=generator)
    return c * standard_gamma(a + mixing, generator)


def beta_floor(dtype: torch.dtype) -> float:
    """The least beta SCIR hands out in ``dtype``: the square root of its smallest normal
    number (1.5e-154 in float64, 1.1e-19 in float32). Gamma(alpha << 1) puts most coordinates
    below the dtype's range; a word every topic underflowed on must still give Gibbs a
    distribution, and products of two floored numbers stay normal (subnormal arithmetic is
    slow; docs/samplers.md, "Numerics", has the measurement)."""
    return float(torch.finfo(dtype).tiny) ** 0.5


def scir_transition(
    theta: torch.Tensor,
    stats: MinibatchStatistics,
    hyper: Hyper,
    h: float,
    generator: torch.Generator | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """SCIR's dense step: the exact CIR transition over h with a_kw = alpha + (N/n) E[n_kw]
    (docs/samplers.md).

    Each coordinate is then raised to sqrt(tiny) * max(1, theta'_k.) (tiny: the smallest
    normal number), which puts beta_kw >= ~sqrt(tiny) (:func:`beta_floor`) and moves it by at
    most sqrt(tiny) / min(1, theta'_k.): beta stays positive where every topic's draw for a
    word underflowed (alpha << 1 puts most of Gamma(alpha)'s mass below tiny), so no Gibbs
    conditional sums to 0, and products of two such numbers stay normal (a floor at tiny left
    subnormal beta, which slowed held-out scoring: docs/samplers.md). Returns how many
    coordinates were raised (a 0-d tensor on theta's device).
    """
    a = hyper.alpha_kw + stats.scale * stats.topic_word
    drawn = cir_transition(theta, a, h, generator)
    floor = beta_floor(drawn.dtype) * drawn.sum(dim=1, keepdim=True).clamp_min(1.0)
    raised = drawn < floor
    return torch.where(raised, floor, drawn), raised.sum()


def cir_mean(theta: torch.Tensor, a: torch.Tensor | float, h: float) -> torch.Tensor:
    """E[theta' | theta] = a c + theta e^-h."""
    decay, c = _decay(h)
    return a * c + theta * decay


def cir_variance(theta: torch.Tensor, a: torch.Tensor | float, h: float) -> torch.Tensor:
    """Var[theta' | theta] = c^2 a + 2 c theta e^-h (the Poisson mixing adds half of the second
    term: a Gamma(a + P) with P at its mean would have c^2 a + c theta e^-h)."""
    decay, c = _decay(h)
    return c * c * a + 2.0 * c * theta * decay
