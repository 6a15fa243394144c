"""Each closed-form LDA step equals one generic-recipe step (docs/samplers.md) given the same noise.

K=3, W=5, theta well away from zero (no reflection); the oracle computes Gamma by automatic
differentiation from the samplers' D(z), Q(z) in lda.sgmcmc.diffusions.
"""

from __future__ import annotations

from dataclasses import astuple

import pytest
import torch

from lda.sgmcmc import samplers
from lda.sgmcmc.gradient import MinibatchStatistics, log_posterior_gradient
from lda.sgmcmc.recipe import recipe_step
from lda.sgmcmc.samplers import SAMPLERS, Hyper, SamplerState, sgrhmc_euler, step
from lda.sgmcmc.sgrhmc_split import sgrhmc_split

K, W = 3, 5
DIM = K * W


@pytest.fixture
def problem() -> tuple[torch.Tensor, torch.Tensor, MinibatchStatistics, Hyper]:
    g = torch.Generator().manual_seed(11)
    theta = 0.5 + 2.0 * torch.rand(K, W, generator=g, dtype=torch.float64)
    momentum = torch.randn(K, W, generator=g, dtype=torch.float64)
    counts = torch.randint(0, 6, (K, W), generator=g).to(torch.float64)
    return theta, momentum, MinibatchStatistics(counts, scale=7.0), Hyper(0.3, 0.1, friction=1.7)


def _grad_H(stats: MinibatchStatistics, hyper: Hyper, with_momentum: bool):
    def grad(z: torch.Tensor) -> torch.Tensor:
        theta = z[:DIM].reshape(K, W)
        grad_u = -log_posterior_gradient(theta, stats, hyper.alpha).reshape(-1)
        return torch.cat([grad_u, z[DIM:]]) if with_momentum else grad_u

    return grad


@pytest.mark.parametrize("name", ["sgld", "sghmc", "sgrld", "sgrhmc"])
def test_closed_form_equals_recipe(problem, name):
    theta, momentum, stats, hyper = problem
    spec = SAMPLERS[name]
    eps = 0.013
    noise_r = torch.randn(K, W, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    update = sgrhmc_euler if name == "sgrhmc" else spec.update
    r = momentum if spec.uses_momentum else None
    new_theta, new_r = update(theta, r, stats, hyper, eps, noise_r)

    D, Q = spec.diffusion(DIM, hyper)
    if spec.uses_momentum:
        z = torch.cat([theta.reshape(-1), momentum.reshape(-1)])
        # D's theta block is zero, so the theta half of the noise is never used.
        noise = torch.cat([torch.randn(DIM, dtype=torch.float64), noise_r.reshape(-1)])
    else:
        z, noise = theta.reshape(-1), noise_r.reshape(-1)
    z_new = recipe_step(z, _grad_H(stats, hyper, spec.uses_momentum), D, Q, eps, noise)

    torch.testing.assert_close(new_theta.reshape(-1), z_new[:DIM], rtol=1e-10, atol=1e-10)
    if spec.uses_momentum:
        assert new_r is not None
        torch.testing.assert_close(new_r.reshape(-1), z_new[DIM:], rtol=1e-10, atol=1e-10)


def test_recipe_with_wrong_gamma_sign_differs(problem):
    """The oracle is sharp: SGRLD's +Gamma (=1 per coordinate) is what makes them agree."""
    theta, _, stats, hyper = problem
    eps = 0.013
    noise = torch.zeros(K, W, dtype=torch.float64)
    closed, _ = SAMPLERS["sgrld"].update(theta, None, stats, hyper, eps, noise)
    wrong = theta + eps * (theta * log_posterior_gradient(theta, stats, hyper.alpha) - 1.0)
    assert (closed - wrong).abs().min() > 1.9 * eps * 0.99


@pytest.mark.parametrize("friction", [1.0, 1.7])
def test_split_sgrhmc_is_a_consistent_integrator(problem, friction):
    """Without noise, the split step and the direct step differ by O(eps^2) per step."""
    theta, momentum, stats, hyper = problem
    hyper = Hyper(hyper.alpha, hyper.gamma, friction)
    zero = torch.zeros(K, W, dtype=torch.float64)
    assert (stats.topic_word == 0).any() and (stats.topic_word > 0).any()  # c < 0 and c > 0
    gaps = []
    for eps in (1e-2, 1e-3):
        split = torch.cat(
            [
                t.reshape(-1)
                for t in sgrhmc_split(theta, momentum, stats, hyper, eps, torch.stack([zero, zero]))
            ]
        )
        euler = torch.cat(
            [t.reshape(-1) for t in sgrhmc_euler(theta, momentum, stats, hyper, eps, zero)]
        )
        gaps.append(float((split - euler).abs().max()))
    # A tenfold smaller step shrinks a second-order gap about 100x (first order would be 10x).
    assert gaps[0] / gaps[1] > 50, gaps
    assert gaps[0] < 1e-2 * friction**2, gaps  # the OU part's gap grows like (eps C theta)^2


def test_step_reflects_and_flips_momentum():
    theta = torch.tensor([[1e-3, 2.0]], dtype=torch.float64)
    momentum = torch.tensor([[-5.0, 0.0]], dtype=torch.float64)
    stats = MinibatchStatistics(torch.zeros(1, 2, dtype=torch.float64), scale=1.0)
    state, info = step(
        "sghmc",
        SamplerState(theta, momentum),
        stats,
        Hyper(1.0, 0.1),
        0.01,
        noise=torch.zeros(1, 2, dtype=torch.float64),
    )
    assert info.reflected == 1
    assert (state.theta >= 0).all()
    assert state.momentum is not None and state.momentum[0, 0] > 0
    assert state.step == 1


@pytest.mark.parametrize("name", ["sgrld", "sgrhmc"])
def test_fused_cpu_step_equals_closed_form(name, monkeypatch):
    """The numba step (used on float64 CPU tensors) computes the torch closed form, and counts
    what the torch path (a GPU's: its counts stay on the device until read) counts."""
    g = torch.Generator().manual_seed(4)
    theta = torch.rand(4, 30, generator=g, dtype=torch.float64) ** 4  # many tiny coordinates
    theta[0, :3] = 0.0
    momentum = torch.randn(4, 30, generator=g, dtype=torch.float64)
    counts = (torch.rand(4, 30, generator=g) < 0.3).to(torch.float64) * 2.0
    stats = MinibatchStatistics(counts, scale=50.0)
    hyper = Hyper(1e-4, 0.01)
    draws = SAMPLERS[name].noise_draws
    noise = torch.randn(draws, 4, 30, generator=g, dtype=torch.float64).squeeze(0)
    r = momentum if SAMPLERS[name].uses_momentum else None
    fused, info = step(name, SamplerState(theta, r), stats, hyper, 0.02, noise=noise)
    monkeypatch.setattr(samplers, "_fusable", lambda theta, stats: False)
    _, torch_info = step(name, SamplerState(theta, r), stats, hyper, 0.02, noise=noise)
    counts = [(int(a), int(b)) for a, b in zip(astuple(info), astuple(torch_info), strict=True)]
    assert counts[1] == (3, 3)  # zero_guarded: theta[0, :3]
    assert all(a == b for a, b in counts), counts
    assert name != "sgrld" or counts[0][0] > 0  # the reflections were counted, not skipped
    expected_theta, expected_r = SAMPLERS[name].update(theta, r, stats, hyper, 0.02, noise)
    if name == "sgrld":
        expected_theta = expected_theta.abs()
    torch.testing.assert_close(fused.theta, expected_theta, rtol=1e-9, atol=1e-300)
    if expected_r is not None:
        assert fused.momentum is not None
        torch.testing.assert_close(fused.momentum, expected_r, rtol=1e-9, atol=1e-12)
