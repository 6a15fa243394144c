"""SGLD, SGHMC, SGRLD, SGRHMC and SCIR for expanded-mean LDA as closed-form steps.

The maths: docs/samplers.md.

Functional core: ``step(name, state, stats, hyper, step_size, generator)`` returns a new
:class:`SamplerState`. Each sampler is its D(z), Q(z) (:mod:`lda.sgmcmc.diffusions`) and the
Euler-Maruyama step of the complete recipe they imply, written out in closed form; both halves
of an HMC step use the state at time t. Positivity is kept by reflection (theta <- |theta|, the
momentum's sign flipped on reflected coordinates).

SCIR draws each step exactly from the transition law of the CIR process with SGRLD's D and Q
(:func:`lda.sgmcmc.scir.transition.scir_transition`, docs/samplers.md): its spec has a
``transition`` in place of an ``update``.

SGRHMC's direct step (:func:`sgrhmc_euler`) carries a drift (alpha - 1/2)/sqrt(theta) that
explodes on near-zero coordinates; the shipped SGRHMC integrates the same SDE by splitting
(:mod:`lda.sgmcmc.sgrhmc_split`), see its docstring and BENCHMARKS.md. A spec's ``fused`` step
is the same update compiled into one pass for float64 CPU tensors.

A learner steps these through a chain (:mod:`lda.sgmcmc.chain`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import get_args

import torch

from lda.config import DEFAULTS, Init, Method, SamplerDefaults, SamplerName
from lda.sgmcmc import diffusions
from lda.sgmcmc.gradient import MinibatchStatistics, log_posterior_gradient, safe
from lda.sgmcmc.hyper import (
    Hyper,  # its own module (no import circle); importers use it from here too
)
from lda.sgmcmc.recipe import MatrixField
from lda.sgmcmc.schedules import BatchScaling, StepSchedule
from lda.sgmcmc.scir.transition import scir_transition
from lda.sgmcmc.sgrhmc_split import fused_split_step, sgrhmc_split


class NonFiniteError(ArithmeticError):
    """A step produced a non-finite theta (a chain's step raises it; see its update)."""


@dataclass(frozen=True)
class SamplerState:
    """The chain: theta (K x W), the momentum r for HMC samplers, and the step counter t."""

    theta: torch.Tensor
    momentum: torch.Tensor | None = None
    step: int = 0


# A count a step made: an int, or a 0-d tensor on theta's device until someone reads it
# (int(count)): on a GPU, reading every count every step would stall the host once each.
Count = int | torch.Tensor


@dataclass(frozen=True)
class StepInfo:
    """What a step had to do to stay valid, for logs and metrics (read with int())."""

    reflected: Count  # coordinates reflected at zero
    # Coordinates exactly at zero where 1/theta was guarded (SCIR: raised to its floor, see
    # lda.sgmcmc.scir.transition.scir_transition).
    zero_guarded: Count
    turned: Count = 0  # SGRHMC split: coordinates stopped at a turning point


Update = Callable[
    [torch.Tensor, torch.Tensor | None, MinibatchStatistics, Hyper, float, torch.Tensor],
    tuple[torch.Tensor, torch.Tensor | None],
]
# (theta, momentum, stats, hyper, eps, noise) -> (theta, momentum, reflected, turned), new tensors
FusedStep = Callable[
    [torch.Tensor, torch.Tensor | None, MinibatchStatistics, Hyper, float, torch.Tensor],
    tuple[torch.Tensor, torch.Tensor | None, int, int],
]
# (theta, stats, hyper, step size, generator) -> (theta, coordinates guarded): a step drawn
# from an exact transition law rather than built from standard normal noise.
Transition = Callable[
    [torch.Tensor, MinibatchStatistics, Hyper, float, torch.Generator | None],
    tuple[torch.Tensor, Count],
]


# --- closed forms (before reflection) ------------------------------------------------------


def sgld_update(
    theta: torch.Tensor,
    r: torch.Tensor | None,
    stats: MinibatchStatistics,
    hyper: Hyper,
    eps: float,
    noise: torch.Tensor,
) -> tuple[torch.Tensor, None]:
    """theta + eps g + N(0, 2 eps)."""
    g = log_posterior_gradient(theta, stats, hyper.alpha_kw)
    return theta + eps * g + (2.0 * eps) ** 0.5 * noise, None


def sghmc_update(
    theta: torch.Tensor,
    r: torch.Tensor | None,
    stats: MinibatchStatistics,
    hyper: Hyper,
    eps: float,
    noise: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """theta + eps r ; r + eps g - eps C r + N(0, 2 eps C)."""
    assert r is not None, "SGHMC needs a momentum"
    g = log_posterior_gradient(theta, stats, hyper.alpha_kw)
    c = hyper.friction
    return theta + eps * r, r + eps * g - eps * c * r + (2.0 * eps * c) ** 0.5 * noise


def sgrld_update(
    theta: torch.Tensor,
    r: torch.Tensor | None,
    stats: MinibatchStatistics,
    hyper: Hyper,
    eps: float,
    noise: torch.Tensor,
) -> tuple[torch.Tensor, None]:
    """theta + eps (alpha - theta + (N/n) sum_d E[n_dkw - beta_kw n_dk.]) + N(0, 2 eps theta)."""
    beta = theta / theta.sum(dim=1, keepdim=True)
    data = stats.topic_word - beta * stats.topic_totals
    drift = hyper.alpha_kw - theta + stats.scale * data
    return theta + eps * drift + (2.0 * eps * theta.clamp_min(0)).sqrt() * noise, None


def sgrhmc_euler(
    theta: torch.Tensor,
    r: torch.Tensor | None,
    stats: MinibatchStatistics,
    hyper: Hyper,
    eps: float,
    noise: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The direct step: theta + eps sqrt(theta) r ;
    r + eps sqrt(theta) g + eps / (2 sqrt(theta)) - eps C theta r + N(0, 2 eps C theta)."""
    assert r is not None, "SGRHMC needs a momentum"
    root = safe(theta).sqrt()
    g = log_posterior_gradient(theta, stats, hyper.alpha_kw)
    c = hyper.friction
    new_r = r + eps * root * g + eps / (2.0 * root) - eps * c * theta * r
    new_r = new_r + (2.0 * eps * c * theta).sqrt() * noise
    return theta + eps * root * r, new_r


def _fused_sgrld(
    theta: torch.Tensor,
    r: torch.Tensor | None,
    stats: MinibatchStatistics,
    hyper: Hyper,
    eps: float,
    noise: torch.Tensor,
) -> tuple[torch.Tensor, None, int, int]:
    """:func:`sgrld_update` and the reflection in one pass (lda.sgmcmc.step_kernel)."""
    from lda.sgmcmc import step_kernel

    theta = theta.clone()
    reflected = step_kernel.sgrld_step(
        theta.numpy(),
        stats.topic_word.contiguous().numpy(),
        noise.contiguous().numpy(),
        hyper.alpha,
        stats.scale,
        eps,
    )
    return theta, None, reflected, 0


# --- the samplers --------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplerSpec:
    """A sampler: its diffusion (D, Q) and its closed-form step; its default settings are
    :data:`lda.config.DEFAULTS` (read through the properties below)."""

    name: str
    uses_momentum: bool
    diffusion: Callable[[int, Hyper], tuple[MatrixField, MatrixField]]
    update: Update | None  # None: the step is the ``transition``'s draw
    reflects_itself: bool = False
    noise_draws: int = 1  # standard normal (K, W) draws per step; > 1 stacks them
    # The same step in one compiled pass, for float64 CPU tensors (None: the closed form only).
    fused: FusedStep | None = None
    # A step drawn exactly from the generator (no normal noise, no reflection), or None.
    transition: Transition | None = None
    # Steps only the minibatch's columns on the CPU, the others brought up to date when next
    # touched or read (lda.sgmcmc.scir.lazy; exact transitions compose): SCIR.
    lazy: bool = False

    @property
    def defaults(self) -> SamplerDefaults:
        return DEFAULTS[self.name]

    @property
    def alpha(self) -> float:
        return self.defaults.alpha

    @property
    def gamma(self) -> float:
        return self.defaults.gamma

    @property
    def schedule(self) -> StepSchedule:
        return self.defaults.schedule

    @property
    def gibbs(self) -> Method:
        return self.defaults.gibbs

    @property
    def gibbs_init(self) -> Init:
        return self.defaults.gibbs_init

    @property
    def sweeps(self) -> int:
        return self.defaults.sweeps

    @property
    def batch_scaling(self) -> BatchScaling | None:
        return self.defaults.batch_scaling

    @property
    def mean_decay(self) -> float:
        return self.defaults.mean_decay


SAMPLERS: dict[str, SamplerSpec] = {
    "sgld": SamplerSpec(
        name="sgld",
        uses_momentum=False,
        diffusion=lambda d, h: diffusions.sgld(d),
        update=sgld_update,
    ),
    "sghmc": SamplerSpec(
        name="sghmc",
        uses_momentum=True,
        diffusion=lambda d, h: diffusions.sghmc(d, h.friction),
        update=sghmc_update,
    ),
    "sgrld": SamplerSpec(
        name="sgrld",
        uses_momentum=False,
        diffusion=lambda d, h: diffusions.sgrld(d),
        update=sgrld_update,
        fused=_fused_sgrld,
    ),
    "sgrhmc": SamplerSpec(
        name="sgrhmc",
        uses_momentum=True,
        diffusion=lambda d, h: diffusions.sgrhmc(d, h.friction),
        update=sgrhmc_split,
        reflects_itself=True,
        noise_draws=2,
        fused=fused_split_step,
    ),
    "scir": SamplerSpec(
        name="scir",
        uses_momentum=False,
        diffusion=lambda d, h: diffusions.sgrld(d),  # the same SDE; its transition is exact
        update=None,
        reflects_itself=True,
        transition=scir_transition,
        lazy=True,
    ),
}


assert set(get_args(SamplerName)) == set(SAMPLERS), "SamplerName names every sampler"


def init_state(
    name: str, n_topics: int, n_words: int, generator: torch.Generator, dtype: torch.dtype
) -> SamplerState:
    """theta ~ Gamma(1, 1) (exponential) and, for HMC samplers, r ~ N(0, 1)."""
    device = generator.device
    shape = (n_topics, n_words)
    # -log(1 - U) in U's own storage: one K x W allocation, not two, the same values.
    theta = torch.rand(shape, generator=generator, device=device, dtype=dtype)
    theta.neg_().log1p_().neg_()
    momentum = None
    if SAMPLERS[name].uses_momentum:
        momentum = torch.randn(shape, generator=generator, device=device, dtype=dtype)
    return SamplerState(theta=theta, momentum=momentum, step=0)


def reflect(
    theta: torch.Tensor, momentum: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor | None, Count]:
    """theta <- |theta|, flipping the momentum where theta was negative. On a CPU a step with
    nothing negative returns theta itself; on a GPU the reflection always runs (cheaper than
    a host read of whether it is needed) and the count stays on the device."""
    negative = theta < 0
    if theta.device.type == "cpu" and not bool(negative.any()):
        return theta, momentum, 0
    if momentum is not None:
        momentum = torch.where(negative, -momentum, momentum)
    return theta.abs(), momentum, negative.sum()


def step(
    name: str,
    state: SamplerState,
    stats: MinibatchStatistics,
    hyper: Hyper,
    step_size: float,
    generator: torch.Generator | None = None,
    noise: torch.Tensor | None = None,
) -> tuple[SamplerState, StepInfo]:
    """One step of sampler ``name`` from ``state`` with this minibatch's statistics."""
    spec = SAMPLERS[name]
    theta = state.theta
    if spec.transition is not None:
        if noise is not None:
            raise ValueError(f"{name} draws its step from the generator; it takes no noise")
        new_theta, guarded = spec.transition(theta, stats, hyper, step_size, generator)
        new_state = replace(state, theta=new_theta, step=state.step + 1)
        return new_state, StepInfo(reflected=0, zero_guarded=guarded)
    assert spec.update is not None, f"{name} has neither an update nor a transition"
    if noise is None:
        # float32 draws: torch's float64 normal sampler is much slower on the CPU
        # (docs/defaults.md, "Floating-point types"), and the noise needs no more precision.
        shape = theta.shape if spec.noise_draws == 1 else (spec.noise_draws, *theta.shape)
        noise = torch.randn(shape, generator=generator, device=theta.device, dtype=torch.float32)
    zeros = (theta == 0).sum()
    reflected: Count
    turned: Count
    if (
        spec.fused is not None and hyper.seeded is None and _fusable(theta, stats)
    ):  # float32 noise is read as it is
        new_theta, new_r, reflected, turned = spec.fused(
            theta, state.momentum, stats, hyper, step_size, noise
        )
        new_state = replace(state, theta=new_theta, momentum=new_r, step=state.step + 1)
        return new_state, StepInfo(reflected=reflected, zero_guarded=zeros, turned=turned)
    noise = noise.to(theta.dtype)
    new_theta, new_r = spec.update(theta, state.momentum, stats, hyper, step_size, noise)
    turned = reflected = 0
    if spec.reflects_itself:
        if new_r is not None:
            turned = (new_r == 0).sum()
    else:
        new_theta, new_r, reflected = reflect(new_theta, new_r)
    new_state = replace(state, theta=new_theta, momentum=new_r, step=state.step + 1)
    return new_state, StepInfo(reflected=reflected, zero_guarded=zeros, turned=turned)


def _fusable(theta: torch.Tensor, stats: MinibatchStatistics) -> bool:
    """The fused CPU kernels take float64 CPU tensors."""
    return (
        theta.device.type == "cpu"
        and theta.dtype == torch.float64
        and stats.topic_word.dtype == torch.float64
    )
