"""The compiled exact CIR transition (lda.sgmcmc.scir.transition_kernel): its Poisson and Gamma
draws, its one-step
moments, its stationary law Gamma(a, 1) at any step size, and composition of steps.

Sample sizes are 200,000 independent coordinates (fixed keys); a KS statistic of a correct
sampler is ~0.002-0.003 there, so the bound 0.006 leaves a margin while the mutants below land
at 0.02 or more.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from scipy import stats

from lda.sgmcmc.scir import transition_kernel as cir_kernel

M = 200_000
KS_BOUND = 0.006


def _transition(theta: float, a: float, h: float, key: int, m: int = M) -> np.ndarray:
    x = np.full(m, theta)
    cir_kernel.cir_array(x, np.full(m, a), h, np.uint64(key))
    return x


@numba.njit(parallel=True)
def _draw_poisson(lam: float, key: np.uint64, out: np.ndarray) -> None:
    for i in numba.prange(out.shape[0]):
        out[i], _ = cir_kernel.poisson(lam, cir_kernel.stream(key, i))


@numba.njit(parallel=True)
def _draw_gamma(shape: float, key: np.uint64, out: np.ndarray) -> None:
    for i in numba.prange(out.shape[0]):
        out[i], _ = cir_kernel.gamma(shape, cir_kernel.stream(key, i))


@numba.njit(parallel=True)
def _draw_normal(key: np.uint64, out: np.ndarray) -> None:
    for i in numba.prange(out.shape[0]):
        out[i], _ = cir_kernel._normal(cir_kernel.stream(key, i))


@pytest.mark.slow
def test_ziggurat_normal_matches_its_cdf_and_tails():
    """The Gamma draws' normal: KS over 1,000,000 draws, and the mass beyond 2, beyond the base
    strip's edge R = 3.44 (drawn by the tail method) and beyond 4, each within 5 standard
    errors. A layer table off by one, or a tail drawn from the wrong side of R, fails here."""
    n = 1_000_000
    draws = np.empty(n)
    _draw_normal(np.uint64(17), draws)
    assert stats.kstest(draws, stats.norm.cdf).statistic < 0.003
    for edge in (2.0, 3.442619855899, 4.0):
        p = 2 * stats.norm.sf(edge)
        observed = float((np.abs(draws) > edge).mean())
        assert abs(observed - p) < 5 * math.sqrt(p * (1 - p) / n), edge
    assert abs(float((draws > 3.442619855899).mean()) - stats.norm.sf(3.442619855899)) < 5 * (
        math.sqrt(stats.norm.sf(3.442619855899) / n)
    )


@pytest.mark.parametrize("lam", [0.3, 4.0, 9.9, 10.0, 37.5, 2_500.0])
def test_poisson_matches_its_pmf(lam):
    draws = np.empty(M)
    _draw_poisson(lam, np.uint64(11), draws)
    values, counts = np.unique(draws, return_counts=True)
    expected = stats.poisson(lam).pmf(values) * M
    keep = expected > 20  # chi-square cells with enough mass
    chi2 = float((((counts - expected) ** 2) / expected)[keep].sum())
    dof = int(keep.sum()) - 1
    assert stats.chi2(dof).sf(chi2) > 1e-4, (lam, chi2, dof)
    assert abs(draws.mean() - lam) < 5 * math.sqrt(lam / M)


@pytest.mark.parametrize("shape", [0.05, 0.5, 1.0, 3.7, 250.0])
def test_gamma_matches_its_cdf(shape):
    draws = np.empty(M)
    _draw_gamma(shape, np.uint64(5), draws)
    assert stats.kstest(draws, stats.gamma(shape).cdf).statistic < KS_BOUND


def test_tiny_shapes_keep_their_law_in_log_space():
    # Gamma(1e-3): log X ~ log Gamma(1 + a) + log(U) / a, mostly below float64's range. What
    # survives must be the upper tail of the law: P(X > 1e-300) = P(U > 1e-300^a / ...), ~0.50.
    shape = 1e-3
    draws = np.empty(M)
    _draw_gamma(shape, np.uint64(9), draws)
    for threshold in (1e-300, 1e-100, 1e-10):
        expected = stats.gamma(shape).sf(threshold)
        assert abs((draws > threshold).mean() - expected) < 0.005, threshold


@pytest.mark.parametrize(
    ("theta", "a", "h"),
    [(3.0, 0.5, 0.05), (0.1, 2.0, 1.0), (5_000.0, 1e-4, 0.03), (20.0, 30.0, 0.03), (0.0, 3.0, 5.0)],
)
def test_one_step_mean_and_variance(theta, a, h):
    x = _transition(theta, a, h, key=3)
    c = -math.expm1(-h)
    mean = a * c + theta * math.exp(-h)
    var = c * c * a + 2 * c * theta * math.exp(-h)
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / M)
    assert abs(x.var() / var - 1) < 0.02


@pytest.mark.parametrize(
    ("a", "h", "steps"),
    [pytest.param(0.7, 0.05, 400, marks=pytest.mark.slow), (0.7, 3.0, 10), (5.0, 0.3, 60)],
)
def test_stationary_law_is_gamma_at_any_step(a, h, steps):
    x = np.full(M, 1.0)
    for t in range(steps):
        cir_kernel.cir_array(x, np.full(M, a), h, np.uint64(1_000 + t))
    assert stats.kstest(x, stats.gamma(a).cdf).statistic < KS_BOUND


@numba.njit(parallel=True)
def _mutant_without_mixing(x: np.ndarray, a: float, h: float, key: np.uint64) -> None:
    """c Gamma(a + lambda): the Poisson replaced by its mean (the one-step mean is kept)."""
    c = -math.expm1(-h)
    for i in numba.prange(x.shape[0]):
        g, _ = cir_kernel.gamma(a + x[i] * math.exp(-h) / c, cir_kernel.stream(key, i))
        x[i] = c * g


@pytest.mark.slow
def test_a_transition_without_the_poisson_mixing_fails_the_same_bound():
    # At a small step the mixing carries half the transition's variance: the mutant's stationary
    # law is far too narrow.
    x = np.full(M, 1.0)
    for t in range(400):
        _mutant_without_mixing(x, 0.7, 0.05, np.uint64(50 + t))
    statistic = stats.kstest(x, stats.gamma(0.7).cdf).statistic
    assert statistic > 3 * KS_BOUND, statistic


def test_two_steps_equal_one_of_their_summed_time():
    """The property the lazy step rests on: an untouched column's skipped steps are one draw."""
    two = _transition(2.5, 0.3, 0.2, key=21)
    cir_kernel.cir_array(two, np.full(M, 0.3), 0.5, np.uint64(22))
    one = _transition(2.5, 0.3, 0.7, key=23)
    assert stats.ks_2samp(two, one).statistic < 1.5 * KS_BOUND


@pytest.mark.parametrize(
    ("theta", "a", "h"), [(3.0, 0.5, 0.05), (40.0, 0.01, 0.3), (0.2, 7.0, 2.0)]
)
def test_the_kernel_draws_the_torch_transitions_law(theta, a, h):
    """The compiled transition and lda.sgmcmc.scir.transition's torch one (the dense SCIR step's)
    agree in law."""
    import torch

    from lda.sgmcmc.scir.transition import cir_transition

    reference = cir_transition(
        torch.full((M,), theta, dtype=torch.float64),
        torch.full((M,), a, dtype=torch.float64),
        h,
        torch.Generator().manual_seed(31),
    ).numpy()
    compiled = _transition(theta, a, h, key=32)
    assert stats.ks_2samp(compiled, reference).statistic < 1.5 * KS_BOUND
