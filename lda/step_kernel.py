"""SGRLD and split-SGRHMC steps fused into one pass over theta for the CPU (numba).

Same arithmetic as the torch closed forms in :mod:`lda.samplers` (which define them and are
tested against the recipe); these avoid a dozen whole-matrix temporaries per step.
Each returns the number of coordinates reflected (SGRLD) or stopped at a turning point.
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
    noise: np.ndarray,  # (K, W) float64 standard normal
    alpha: float,
    scale: float,
    eps: float,
) -> int:
    n_topics, n_words = theta.shape
    reflected = np.zeros(n_topics, dtype=np.int64)
    for k in numba.prange(n_topics):
        row_sum, topic_total = _row_totals(theta, topic_word, k)
        for w in range(n_words):
            t = theta[k, w]
            data = topic_word[k, w] - (t / row_sum) * topic_total
            new = (
                t
                + eps * (alpha - t + scale * data)
                + math.sqrt(2.0 * eps * max(t, 0.0)) * noise[k, w]
            )
            if new < 0.0:
                new = -new
                reflected[k] += 1
            theta[k, w] = new
    return int(reflected.sum())


@numba.njit(parallel=True, cache=True)
def sgrhmc_split_step(
    theta: np.ndarray,  # (K, W) float64, updated in place
    momentum: np.ndarray,  # (K, W) float64, updated in place
    topic_word: np.ndarray,  # (K, W) float64
    noise: np.ndarray,  # (K, W) float64 standard normal
    alpha: float,
    scale: float,
    eps: float,
) -> int:
    n_topics, n_words = theta.shape
    tiny = np.finfo(np.float64).tiny
    turned_count = np.zeros(n_topics, dtype=np.int64)
    for k in numba.prange(n_topics):
        row_sum, topic_total = _row_totals(theta, topic_word, k)
        lam = 1.0 + scale * topic_total / row_sum
        for w in range(n_words):
            t = theta[k, w]
            phi = math.sqrt(max(t, tiny))
            c = alpha - 0.5 + scale * topic_word[k, w]
            r = momentum[k, w] - eps * lam * phi
            decay = math.exp(-eps * t)
            r = decay * r + math.sqrt(max(1.0 - decay * decay, 0.0)) * noise[k, w]
            reach = eps * math.sqrt(abs(c) * (1.0 + math.log1p(eps * math.sqrt(abs(c)) / phi)))
            taylor = min(max(0.25 * eps * eps * c / phi, -reach), reach)
            moved = phi + 0.5 * eps * r + taylor
            crossing = moved < 0.0
            phi_1 = max(abs(moved), tiny)
            if crossing:
                direction = 1.0
            else:
                delta = moved - phi
                direction = 1.0 if delta > 0.0 else (-1.0 if delta < 0.0 else 0.0)
            log_phi = math.log(phi)
            energy = r * r + 4.0 * c * (math.log(phi_1) - log_phi)
            if (crossing and c > 0.0) or energy < 0.0:
                safe_c = 1.0 if c == 0.0 else c
                phi_new = math.exp(log_phi - r * r / (4.0 * safe_c))
                r_new = 0.0
                turned_count[k] += 1
            else:
                phi_new = phi_1
                r_new = direction * math.sqrt(max(energy, 0.0))
            theta[k, w] = phi_new * phi_new
            momentum[k, w] = r_new
    return int(turned_count.sum())
