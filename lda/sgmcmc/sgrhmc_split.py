"""SGRHMC's split integrator (:func:`sgrhmc_split`) and its exact singular flow.

The shipped SGRHMC step (docs/samplers.md, "SGRHMC: the split integrator"; its checks in
BENCHMARKS.md): the drift split in three, the 1/phi part integrated exactly.
:mod:`lda.sgmcmc.step_kernel` holds its fused numba twin (:func:`fused_split_step` runs it),
which tests compare with these tensor forms.
"""

from __future__ import annotations

import math

import torch

from lda.sgmcmc.gradient import MinibatchStatistics, safe
from lda.sgmcmc.hyper import Hyper


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
    drift of docs/samplers.md). One step, with theta_k., c and lambda fixed at time t:
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
    c = hyper.alpha_kw - 0.5 + stats.scale * stats.topic_word
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
      (theta <- |theta| flips r) and rises to phi_max = phi exp(x^2/2), x = |r|/sqrt(2a). The
      time since (or until) the bounce is T erfc(x/sqrt 2) with T = phi_max sqrt(pi/a), linear
      in time, so the exact position after eps is one inverse normal CDF away. An orbit whose
      period 2T is shorter than eps is put at a uniformly drawn time of its orbit instead
      (x = |z|, r's sign that of z): either move keeps the flow's invariant density
      phi^(2c) exp(-r^2/2) on every energy shell, so neither biases the target, however close
      to zero phi is. Farther out, where a step moves phi by under SMOOTH/2 of itself, the
      Taylor move below (uncapped) is accurate and costs a third as much.
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


def fused_split_step(
    theta: torch.Tensor,
    r: torch.Tensor | None,
    stats: MinibatchStatistics,
    hyper: Hyper,
    eps: float,
    noise: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, int, int]:
    """:func:`sgrhmc_split` in one pass over float64 CPU tensors: (theta, r, reflected 0,
    coordinates stopped at a turning point)."""
    from lda.sgmcmc import step_kernel

    assert r is not None, "SGRHMC needs a momentum"
    theta, r = theta.clone(), r.clone()
    turned = step_kernel.sgrhmc_split_step(
        theta.numpy(),
        r.numpy(),
        stats.topic_word.contiguous().numpy(),
        noise.contiguous().numpy(),
        hyper.alpha,
        stats.scale,
        eps,
        hyper.friction,
        SMOOTH,
    )
    return theta, r, 0, turned
