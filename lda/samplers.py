"""SGLD, SGHMC, SGRLD and SGRHMC for expanded-mean LDA as closed-form steps (DESIGN §2).

Functional core: ``step(name, state, stats, hyper, step_size, generator)`` returns a new
:class:`SamplerState`. Each sampler is its D(z), Q(z) (:mod:`lda.diffusions`) and the
Euler-Maruyama step of the complete recipe they imply, written out in closed form; both halves
of an HMC step use the state at time t. Positivity is kept by reflection (theta <- |theta|, the
momentum's sign flipped on reflected coordinates).

SGRHMC's direct step (:func:`sgrhmc_euler`) carries a drift (alpha - 1/2)/sqrt(theta) that
explodes on near-zero coordinates; the shipped SGRHMC integrates the same SDE by splitting
(:func:`sgrhmc_split`), see its docstring and BENCHMARKS.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from lda import diffusions
from lda.gibbs import Method
from lda.gradient import MinibatchStatistics, log_posterior_gradient, safe
from lda.recipe import MatrixField
from lda.schedules import StepSchedule


@dataclass(frozen=True)
class SamplerState:
    """The chain: theta (K x W), the momentum r for HMC samplers, and the step counter t."""

    theta: torch.Tensor
    momentum: torch.Tensor | None = None
    step: int = 0


@dataclass(frozen=True)
class Hyper:
    """Model and sampler constants: priors alpha (topics) and gamma (documents), friction C."""

    alpha: float
    gamma: float
    friction: float = 1.0


@dataclass(frozen=True)
class StepInfo:
    """What a step had to do to stay valid, for logs and metrics."""

    reflected: int  # coordinates reflected at zero
    zero_guarded: int  # coordinates exactly at zero where 1/theta was guarded
    turned: int = 0  # SGRHMC split: coordinates stopped at a turning point


Update = Callable[
    [torch.Tensor, torch.Tensor | None, MinibatchStatistics, Hyper, float, torch.Tensor],
    tuple[torch.Tensor, torch.Tensor | None],
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
    g = log_posterior_gradient(theta, stats, hyper.alpha)
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
    g = log_posterior_gradient(theta, stats, hyper.alpha)
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
    drift = hyper.alpha - theta + stats.scale * data
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
    g = log_posterior_gradient(theta, stats, hyper.alpha)
    c = hyper.friction
    new_r = r + eps * root * g + eps / (2.0 * root) - eps * c * theta * r
    new_r = new_r + (2.0 * eps * c * theta).sqrt() * noise
    return theta + eps * root * r, new_r


def sgrhmc_split(
    theta: torch.Tensor,
    r: torch.Tensor | None,
    stats: MinibatchStatistics,
    hyper: Hyper,
    eps: float,
    noise: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """SGRHMC integrated by splitting its drift into three parts, the singular one exactly.

    With phi = sqrt(theta) the SDE's drift is, per coordinate,
      d phi = r/2,  dr = c/phi - lambda phi - C theta r  (+ noise sqrt(2 C theta) dW),
    c = alpha - 1/2 + (N/n) E[n_kw], lambda = 1 + (N/n) E[n_k.]/theta_k.  (the expanded SGRHMC
    drift of DESIGN §2). One step, with theta_k., c and lambda fixed at time t:
      1. r <- exp(-eps C theta) r + sqrt(1 - exp(-2 eps C theta)) xi  (friction, noise: exact OU)
      2. r -= eps/2 lambda phi                                     (smooth force, half kick)
      3. the singular flow phi' = r/2, r' = c/phi for time eps (:func:`singular_flow`): exact
         near zero where c < 0 (no data: the posterior piles up at zero on every scale), a
         Taylor move closed by its conserved energy elsewhere and where c >= 0 (data repel
         from zero; no mass there).
      4. r -= eps/2 lambda_new phi_new                 (second half kick, lambda at the new theta)
    The kicks sit between the friction and the move, so both forces reach the position even
    where eps C theta >> 1 (large counts): there the step is Euler-Maruyama for the overdamped
    limit in phi, phi += eps^2/4 (c/phi - lambda phi) + eps/2 xi, which keeps the target (with
    friction applied after a full kick, that kick was erased and theta lost its restoring force).
    ``noise`` is (2, K, W): xi, and the draw :func:`singular_flow` needs. Each part preserves
    its piece of the target (steps 2 and 3 exactly near zero), so the composition is a
    first-order integrator of the same SDE whose error does not grow near zero.
    Returns the reflected state directly.
    """
    assert r is not None, "SGRHMC needs a momentum"
    friction_noise, phase_noise = noise[0], noise[1]
    phi = safe(theta).sqrt()
    c = hyper.alpha - 0.5 + stats.scale * stats.topic_word
    lam = 1.0 + stats.scale * stats.topic_totals / safe(theta.sum(dim=1, keepdim=True))
    decay = torch.exp(-eps * hyper.friction * theta)
    r = decay * r + (1.0 - decay * decay).clamp_min(0).sqrt() * friction_noise
    r = r - 0.5 * eps * lam * phi
    new_phi, new_r = singular_flow(phi, r, c, eps, phase_noise)
    new_theta = new_phi * new_phi
    lam = 1.0 + stats.scale * stats.topic_totals / safe(new_theta.sum(dim=1, keepdim=True))
    return new_theta, new_r - 0.5 * eps * lam * new_phi


SMOOTH = 0.2  # singular_flow's exact solution is used where eps (|r| + sqrt|c|) > SMOOTH phi


def singular_flow(
    phi: torch.Tensor, r: torch.Tensor, c: torch.Tensor, eps: float, z: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Move (phi, r) along phi' = r/2, r' = c/phi for time eps; z ~ N(0, 1) of the same shape.

    Both cases conserve the energy r^2/4 - c ln phi.
    c = -a < 0, near zero (eps (|r| + sqrt a) > SMOOTH phi): the orbit falls to zero, bounces
      (theta <- |theta| flips r) and rises to
      phi_max = phi exp(x^2/2), x = |r|/sqrt(2a). The time since (or until) the bounce is
      T erfc(x/sqrt 2) with T = phi_max sqrt(pi/a), linear in time, so the exact position
      after eps is one inverse normal CDF away. An orbit whose period 2T is shorter than eps
      is put at a uniformly drawn time of its orbit instead (x = |z|, r's sign that of z):
      either move keeps the flow's invariant density phi^(2c) exp(-r^2/2) on every energy
      shell, so neither biases the target, however close to zero phi is. Farther out, where a
      step moves phi by under SMOOTH/2 of itself, the Taylor move below (uncapped) is accurate
      and costs a third as much.
    c >= 0: second-order Taylor move phi + eps r/2 + eps^2 c/(4 phi), capped at
      eps sqrt(c (1 + log(1 + eps sqrt(c)/phi))) (the distance the exact flow covers from rest
      near zero), then r from the energy; a particle that cannot reach its new position stops
      at its turning point, one that would cross zero stops there too (the 1/phi force repels).
    """
    tiny = torch.finfo(phi.dtype).tiny
    attracted = c < 0
    # --- c < 0: exact.
    a = (-c).clamp_min(tiny)
    x = r.abs() / (2.0 * a).sqrt()
    log_max = phi.log() + 0.5 * x * x
    rate = (a / torch.pi).sqrt()
    since = phi / rate * torch.special.erfcx(x / 2.0**0.5)  # time since/until the bounce
    half_period = torch.exp(log_max) / rate
    s = torch.where(r > 0, since, -since) + eps
    s = torch.where(s > half_period, s - 2.0 * half_period, s)
    # erfc(x'/sqrt 2) = |s| / half_period, in logs: fast orbits overflow exp(log_max).
    log_fraction = (s.abs().clamp_min(tiny).log() + rate.log() - log_max).clamp_max(0.0)
    x_exact = inverse_log_erfc(log_fraction)
    r_exact = torch.where(s >= 0, 1.0, -1.0) * (2.0 * a).sqrt() * x_exact
    drawn = eps >= 2.0 * half_period
    x_new = torch.where(drawn, z.abs(), x_exact)
    r_attracted = torch.where(drawn, (2.0 * a).sqrt() * z, r_exact)
    phi_attracted = torch.exp(log_max - 0.5 * x_new * x_new)
    # ... except far from zero, where the step is small against the orbit and Taylor suffices.
    glide = phi + 0.5 * eps * r - 0.25 * eps * eps * a / phi
    glide_energy = r * r - 4.0 * a * torch.log1p((glide - phi) / phi)
    smooth = (eps * (r.abs() + a.sqrt()) <= SMOOTH * phi) & (glide_energy >= 0)
    phi_attracted = torch.where(smooth, glide, phi_attracted)
    r_attracted = torch.where(
        smooth, (glide - phi).sign() * glide_energy.clamp_min(0).sqrt(), r_attracted
    )
    # --- c >= 0: Taylor move closed by the energy.
    cp = c.clamp_min(0)
    reach = eps * (cp * (1.0 + torch.log1p(eps * cp.sqrt() / phi))).sqrt()
    taylor = (0.25 * eps * eps * cp / phi).clamp(max=reach)
    moved = phi + 0.5 * eps * r + taylor
    phi_1 = moved.clamp_min(tiny)
    energy = r * r + 4.0 * cp * (phi_1.log() - phi.log())
    free = cp == 0  # c = 0 exactly: free flight, reflected at zero
    turned = ~free & ((moved <= 0) | (energy < 0))
    safe_c = torch.where(free, torch.ones_like(cp), cp)
    turning_point = torch.exp(phi.log() - r * r / (4.0 * safe_c))
    direction = (moved - phi).sign()
    phi_repelled = torch.where(turned, turning_point, phi_1)
    r_repelled = torch.where(turned, torch.zeros_like(r), direction * energy.clamp_min(0).sqrt())
    phi_repelled = torch.where(free, moved.abs().clamp_min(tiny), phi_repelled)
    r_repelled = torch.where(free, torch.where(moved < 0, -r, r), r_repelled)
    return (
        torch.where(attracted, phi_attracted, phi_repelled),
        torch.where(attracted, r_attracted, r_repelled),
    )


def inverse_log_erfc(log_y: torch.Tensor) -> torch.Tensor:
    """x >= 0 with log erfc(x / sqrt 2) = log_y <= 0 (twice the upper normal tail), for any log_y.

    ndtri down to log_y = -600 (float64; -74 in float32, before exp underflows); below, the
    asymptotic tail, refined by Newton in log space.
    """
    tail = max(_LOG_TAIL, 0.85 * math.log(torch.finfo(log_y.dtype).tiny))  # float32: -74
    direct = -torch.special.ndtri(0.5 * torch.exp(log_y.clamp_min(tail)))
    deep = log_y.clamp_max(tail)
    x = (-2.0 * deep).sqrt()
    for _ in range(3):
        x = (-2.0 * deep - 2.0 * (x * (torch.pi / 2.0) ** 0.5).log()).sqrt()
    for _ in range(2):
        scaled = torch.special.erfcx(x / 2.0**0.5)
        x = x + (scaled.log() - 0.5 * x * x - deep) * scaled * (torch.pi / 2.0) ** 0.5
    return torch.where(log_y > tail, direct, x)


_LOG_TAIL = -600.0


# --- the samplers --------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplerSpec:
    """A sampler: its diffusion (D, Q), its closed-form step, and its default settings (the
    paper's, except where the benchmark found better: step sizes, SGRLD's gamma, the Gibbs)."""

    name: str
    uses_momentum: bool
    diffusion: Callable[[int, Hyper], tuple[MatrixField, MatrixField]]
    update: Update
    alpha: float
    gamma: float
    schedule: StepSchedule
    reflects_itself: bool = False
    noise_draws: int = 1  # standard normal (K, W) draws per step; > 1 stacks them
    # 6 Rao-Blackwellised sweeps (3 kept) gave SGRLD as good held-out topics at 10k documents
    # as 50 exact ones, at a fifth of the cost (issue 9, BENCHMARKS.md).
    gibbs: Method = "rao-blackwell"
    sweeps: int = 6


SAMPLERS: dict[str, SamplerSpec] = {
    "sgld": SamplerSpec(
        "sgld", False, lambda d, h: diffusions.sgld(d), sgld_update, 0.01, 0.1, StepSchedule(0.01)
    ),
    "sghmc": SamplerSpec(
        "sghmc",
        True,
        lambda d, h: diffusions.sghmc(d, h.friction),
        sghmc_update,
        0.01,
        0.1,
        StepSchedule(0.1),
    ),
    "sgrld": SamplerSpec(
        "sgrld",
        False,
        lambda d, h: diffusions.sgrld(d),
        sgrld_update,
        1e-4,
        0.03,  # paper 0.01; 0.03 with eps 0.03 and n = 100 documents (issue 9, BENCHMARKS.md)
        StepSchedule(0.03, 1000.0, 0.55),  # paper 0.01: a larger step mixes the mean better
    ),
    "sgrhmc": SamplerSpec(
        "sgrhmc",
        True,
        lambda d, h: diffusions.sgrhmc(d, h.friction),
        sgrhmc_split,
        1e-4,
        0.01,
        StepSchedule(0.2),  # paper 0.02; 0.1 at n = 50, 0.2 at n = 100 (BENCHMARKS.md)
        reflects_itself=True,
        noise_draws=2,
        # Exact indicator counts: Rao-Blackwellised ones make c = alpha - 1/2 + (N/n) E[n_kw]
        # slightly positive on every word of the minibatch, where the split flow stops a
        # coordinate at its (exponentially deep) turning point; with alpha = 0.5 that failed
        # tests/lda/test_recovery.py (TV 0.21 against 0.08).
        gibbs="exact",
        sweeps=50,
    ),
}


def init_state(
    name: str, n_topics: int, n_words: int, generator: torch.Generator, dtype: torch.dtype
) -> SamplerState:
    """theta ~ Gamma(1, 1) (exponential) and, for HMC samplers, r ~ N(0, 1)."""
    device = generator.device
    shape = (n_topics, n_words)
    uniform = torch.rand(shape, generator=generator, device=device, dtype=dtype)
    theta = -torch.log1p(-uniform)
    momentum = None
    if SAMPLERS[name].uses_momentum:
        momentum = torch.randn(shape, generator=generator, device=device, dtype=dtype)
    return SamplerState(theta=theta, momentum=momentum, step=0)


def reflect(
    theta: torch.Tensor, momentum: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor | None, int]:
    """theta <- |theta|, flipping the momentum where theta was negative."""
    negative = theta < 0
    count = int(negative.sum())
    if count == 0:
        return theta, momentum, 0
    if momentum is not None:
        momentum = torch.where(negative, -momentum, momentum)
    return theta.abs(), momentum, count


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
    if noise is None:
        # float32 draws: torch's float64 normal sampler is ~20x slower on the CPU, and the
        # injected noise needs no more than single precision.
        shape = theta.shape if spec.noise_draws == 1 else (spec.noise_draws, *theta.shape)
        noise = torch.randn(shape, generator=generator, device=theta.device, dtype=torch.float32)
    zeros = int((theta == 0).sum())
    if _fusable(name, theta, stats):  # the kernels read float32 noise as it is
        return _fused_step(name, state, stats, hyper, step_size, noise, zeros)
    noise = noise.to(theta.dtype)
    new_theta, new_r = spec.update(theta, state.momentum, stats, hyper, step_size, noise)
    turned = 0
    if spec.reflects_itself:
        reflected = 0
        if new_r is not None:
            turned = int((new_r == 0).sum())
    else:
        new_theta, new_r, reflected = reflect(new_theta, new_r)
    new_state = replace(state, theta=new_theta, momentum=new_r, step=state.step + 1)
    return new_state, StepInfo(reflected=reflected, zero_guarded=zeros, turned=turned)


def _fusable(name: str, theta: torch.Tensor, stats: MinibatchStatistics) -> bool:
    """The fused CPU kernels cover SGRLD and SGRHMC on float64 CPU tensors."""
    return (
        name in ("sgrld", "sgrhmc")
        and theta.device.type == "cpu"
        and theta.dtype == torch.float64
        and stats.topic_word.dtype == torch.float64
    )


def _fused_step(
    name: str,
    state: SamplerState,
    stats: MinibatchStatistics,
    hyper: Hyper,
    step_size: float,
    noise: torch.Tensor,
    zeros: int,
) -> tuple[SamplerState, StepInfo]:
    """The same step as the closed form, in one pass over theta (lda.step_kernel)."""
    from lda import step_kernel

    theta = state.theta.clone()
    topic_word = stats.topic_word.contiguous().numpy()
    noise_np = noise.contiguous().numpy()
    if name == "sgrld":
        reflected = step_kernel.sgrld_step(
            theta.numpy(), topic_word, noise_np, hyper.alpha, stats.scale, step_size
        )
        info = StepInfo(reflected=reflected, zero_guarded=zeros)
        return replace(state, theta=theta, step=state.step + 1), info
    assert state.momentum is not None, "SGRHMC needs a momentum"
    momentum = state.momentum.clone()
    turned = step_kernel.sgrhmc_split_step(
        theta.numpy(),
        momentum.numpy(),
        topic_word,
        noise_np,
        hyper.alpha,
        stats.scale,
        step_size,
        hyper.friction,
        SMOOTH,
    )
    info = StepInfo(reflected=0, zero_guarded=zeros, turned=turned)
    return replace(state, theta=theta, momentum=momentum, step=state.step + 1), info
