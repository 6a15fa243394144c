"""SGRLD and split-SGRHMC steps fused into one pass over theta for the CPU (numba).

Same arithmetic as the torch closed forms in :mod:`lda.sgmcmc.samplers` (which define them and
are tested against the recipe); these avoid a dozen whole-matrix temporaries per step. Each
returns the number of coordinates reflected (SGRLD) or stopped at a turning point.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, inline="always")
def _row_totals(theta: np.ndarray, topic_word: np.ndarray, k: int) -> tuple[float, float]:
    """(theta_k., E[n_k.]): the row sums both steps read at time t."""
    row_sum = 0.0
    topic_total = 0.0
    for w in range(theta.shape[1]):
        row_sum += theta[k, w]
        topic_total += topic_word[k, w]
    return row_sum, topic_total


@numba.njit(parallel=True, cache=True)
def sgrld_step(
    theta: np.ndarray,  # (K, W) float64, updated in place
    topic_word: np.ndarray,  # (K, W) float64
    noise: np.ndarray,  # (K, W) standard normal, float32 or float64
    alpha: float,
    scale: float,
    eps: float,
) -> int:
    n_topics, n_words = theta.shape
    reflected = np.zeros(n_topics, dtype=np.int64)
    root_two_eps = math.sqrt(2.0 * eps)
    for k in numba.prange(n_topics):
        row_sum, topic_total = _row_totals(theta, topic_word, k)
        share = topic_total / row_sum  # beta_kw E[n_k.] = theta_kw share
        count = 0
        # Branch-free so the loop vectorises (reflecting in an if kept it scalar).
        for w in range(n_words):
            t = theta[k, w]
            data = topic_word[k, w] - t * share
            new = (
                t
                + eps * (alpha - t + scale * data)
                + root_two_eps * math.sqrt(max(t, 0.0)) * noise[k, w]
            )
            count += new < 0.0
            theta[k, w] = abs(new)
        reflected[k] = count
    return int(reflected.sum())


@numba.njit(parallel=True, cache=True)
def sgrhmc_split_step(
    theta: np.ndarray,  # (K, W) float64, updated in place
    momentum: np.ndarray,  # (K, W) float64, updated in place
    topic_word: np.ndarray,  # (K, W) float64
    noise: np.ndarray,  # (2, K, W) standard normal (float32 or 64): friction, then the flow
    alpha: float,
    scale: float,
    eps: float,
    friction: float,
    # lda.sgmcmc.sgrhmc_split.SMOOTH (an argument: numba's cache would freeze a global)
    smooth: float,
) -> int:
    n_topics, n_words = theta.shape
    tiny = np.finfo(np.float64).tiny
    turned_count = np.zeros(n_topics, dtype=np.int64)
    for k in numba.prange(n_topics):
        row_sum, topic_total = _row_totals(theta, topic_word, k)
        lam = 1.0 + scale * topic_total / max(row_sum, tiny)
        new_sum = 0.0
        for w in range(n_words):
            t = theta[k, w]
            phi = math.sqrt(max(t, tiny))
            c = alpha - 0.5 + scale * topic_word[k, w]
            decay = math.exp(-eps * friction * t)
            r = decay * momentum[k, w] + math.sqrt(max(1.0 - decay * decay, 0.0)) * noise[0, k, w]
            r -= 0.5 * eps * lam * phi
            phi_new, r_new, turned = _singular_flow(phi, r, c, eps, noise[1, k, w], tiny, smooth)
            turned_count[k] += turned
            theta[k, w] = phi_new * phi_new
            momentum[k, w] = r_new
            new_sum += theta[k, w]
        lam = 1.0 + scale * topic_total / max(new_sum, tiny)
        for w in range(n_words):
            momentum[k, w] -= 0.5 * eps * lam * math.sqrt(theta[k, w])
    return int(turned_count.sum())


@numba.njit(cache=True, inline="always")
def _singular_flow(
    phi: float, r: float, c: float, eps: float, z: float, tiny: float, smooth: float
) -> tuple[float, float, int]:
    """lda.sgmcmc.sgrhmc_split.singular_flow for one coordinate: (phi, r, 1 if stopped at a
    turn)."""
    if c < 0.0:
        a = -c
        if eps * (abs(r) + math.sqrt(a)) <= smooth * phi:
            glide = phi + 0.5 * eps * r - 0.25 * eps * eps * a / phi
            energy = r * r - 4.0 * a * math.log1p((glide - phi) / phi)
            if energy >= 0.0:
                delta = glide - phi
                direction = 1.0 if delta > 0.0 else (-1.0 if delta < 0.0 else 0.0)
                return glide, direction * math.sqrt(energy), 0
        x = abs(r) / math.sqrt(2.0 * a)
        log_max = math.log(phi) + 0.5 * x * x
        rate = math.sqrt(a / math.pi)
        since = phi / rate * _erfcx(x / math.sqrt(2.0))
        half_period = math.exp(log_max) / rate
        if eps >= 2.0 * half_period:
            x_new = abs(z)
            r_new = math.sqrt(2.0 * a) * z
        else:
            s = (since if r > 0.0 else -since) + eps
            if s > half_period:
                s -= 2.0 * half_period
            log_fraction = min(math.log(max(abs(s), tiny)) + math.log(rate) - log_max, 0.0)
            x_new = _inverse_log_erfc(log_fraction)
            r_new = (1.0 if s >= 0.0 else -1.0) * math.sqrt(2.0 * a) * x_new
        return math.exp(log_max - 0.5 * x_new * x_new), r_new, 0
    reach = eps * math.sqrt(c * (1.0 + math.log1p(eps * math.sqrt(c) / phi)))
    taylor = min(0.25 * eps * eps * c / phi, reach)
    moved = phi + 0.5 * eps * r + taylor
    if c == 0.0:  # free flight, reflected at zero
        return max(abs(moved), tiny), (-r if moved < 0.0 else r), 0
    phi_1 = max(moved, tiny)
    log_phi = math.log(phi)
    energy = r * r + 4.0 * c * (math.log(phi_1) - log_phi)
    if moved <= 0.0 or energy < 0.0:
        return math.exp(log_phi - r * r / (4.0 * c)), 0.0, 1
    delta = moved - phi
    direction = 1.0 if delta > 0.0 else (-1.0 if delta < 0.0 else 0.0)
    return phi_1, direction * math.sqrt(energy), 0


@numba.njit(cache=True)
def _inverse_log_erfc(log_y: float) -> float:
    """lda.sgmcmc.sgrhmc_split.inverse_log_erfc for one value."""
    if log_y > _LOG_TAIL:
        return -_ndtri(0.5 * math.exp(log_y))
    x = math.sqrt(-2.0 * log_y)
    for _ in range(3):
        x = math.sqrt(-2.0 * log_y - 2.0 * math.log(x * math.sqrt(math.pi / 2.0)))
    for _ in range(2):
        scaled = _erfcx(x / math.sqrt(2.0))
        x = x + (math.log(scaled) - 0.5 * x * x - log_y) * scaled * math.sqrt(math.pi / 2.0)
    return x


_LOG_TAIL = -600.0


@numba.njit(cache=True)
def _erfcx(x: float) -> float:
    """exp(x^2) erfc(x) for x >= 0, without overflow (asymptotic series beyond 26)."""
    if x < 26.0:
        return math.exp(x * x) * math.erfc(x)
    inv = 1.0 / (2.0 * x * x)
    total, term = 1.0, 1.0
    for n in range(1, 6):
        term *= -(2.0 * n - 1.0) * inv
        total += term
    return total / (x * math.sqrt(math.pi))


# Coefficients of P. J. Acklam's rational approximation to the inverse normal CDF (rel. error
# 1.15e-9 before the Halley step).
_A = (
    -39.69683028665376,
    220.9460984245205,
    -275.9285104469687,
    138.3577518672690,
    -30.66479806614716,
    2.506628277459239,
)
_B = (
    -54.47609879822406,
    161.5858368580409,
    -155.6989798598866,
    66.80131188771972,
    -13.28068155288572,
)
_C = (
    -7.784894002430293e-03,
    -3.223964580411365e-01,
    -2.400758277161838,
    -2.549732539343734,
    4.374664141464968,
    2.938163982698783,
)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996, 3.754408661907416)


@numba.njit(cache=True)
def _ndtri(p: float) -> float:
    """Inverse standard normal CDF for 0 < p <= 1/2 (Acklam's approximation, one Halley step)."""
    if p < 0.02425:
        q = math.sqrt(-2.0 * math.log(p))
        x = (((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5]) / (
            (((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1.0
        )
    else:
        q = p - 0.5
        t = q * q
        x = (
            (((((_A[0] * t + _A[1]) * t + _A[2]) * t + _A[3]) * t + _A[4]) * t + _A[5])
            * q
            / (((((_B[0] * t + _B[1]) * t + _B[2]) * t + _B[3]) * t + _B[4]) * t + 1.0)
        )
    error = 0.5 * math.erfc(-x / math.sqrt(2.0)) - p
    u = error * math.sqrt(2.0 * math.pi) * math.exp(0.5 * x * x)
    return x - u / (1.0 + 0.5 * x * u)
