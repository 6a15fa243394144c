"""The collapsed Gibbs sweep of Eq. S.19 compiled for the CPU (numba), parallel over documents.

Randomness comes in as pre-drawn uniforms, so results do not depend on the thread count and
equal the device-agnostic torch implementation draw for draw.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, fastmath=True)
def _total(weights: np.ndarray) -> float:
    """Sum of the conditional's weights (vectorised: the draw does not depend on its order)."""
    total = 0.0
    for k in range(weights.shape[0]):
        total += weights[k]
    return total


@numba.njit(parallel=True, cache=True, fastmath=False)
def collapsed_gibbs(
    words: np.ndarray,  # (T,) int64
    offsets: np.ndarray,  # (n+1,) int64
    order: np.ndarray,  # (n,) int64: documents longest first, for load balance
    beta_t: np.ndarray,  # (W, K) float64, beta transposed for contiguous rows
    gamma: float,
    z: np.ndarray,  # (T,) int64 initial assignments, updated in place
    uniforms: np.ndarray,  # (sweeps, T) float32
    burn_in: int,
    rao_blackwell: bool,
    out: np.ndarray,  # (T, K) float64 zeros: summed indicators (or conditionals) of kept sweeps
) -> None:
    n_topics = beta_t.shape[1]
    sweeps = uniforms.shape[0]
    for i in numba.prange(order.shape[0]):
        d = order[i]
        start = offsets[d]
        end = offsets[d + 1]
        counts = np.zeros(n_topics, dtype=np.float64)
        weights = np.empty(n_topics, dtype=np.float64)
        for j in range(start, end):
            counts[z[j]] += 1.0
        for s in range(sweeps):
            keep = s >= burn_in
            for j in range(start, end):
                row = beta_t[words[j]]
                counts[z[j]] -= 1.0
                for k in range(n_topics):
                    weights[k] = (gamma + counts[k]) * row[k]
                total = _total(weights)
                u = uniforms[s, j] * total
                # The first topic whose running sum exceeds u (as torch.searchsorted, right).
                k_new = n_topics - 1
                running = 0.0
                for k in range(n_topics - 1):
                    running += weights[k]
                    if running > u:
                        k_new = k
                        break
                z[j] = k_new
                counts[k_new] += 1.0
                if keep:
                    if rao_blackwell:
                        for k in range(n_topics):
                            out[j, k] += weights[k] / total
                    else:
                        out[j, k_new] += 1.0


@numba.njit(parallel=True, cache=True, fastmath=False)
def sparse_collapsed_gibbs(
    words: np.ndarray,  # (T,) int64
    offsets: np.ndarray,  # (n+1,) int64
    beta_t: np.ndarray,  # (W, K) float64
    smoothing: np.ndarray,  # (W,) float64: gamma * sum_k beta[k, w]
    gamma: float,
    z: np.ndarray,  # (T,) int64, updated in place
    uniforms: np.ndarray,  # (sweeps, T) float32
    burn_in: int,
    out: np.ndarray,  # (T, K) float64 zeros
) -> None:
    """The same conditional as :func:`collapsed_gibbs`, split in two buckets (SparseLDA).

    (gamma + n_dk) beta_kw = n_dk beta_kw + gamma beta_kw: the first bucket runs over the
    document's non-zero topics only; the second has a per-word total fixed for the whole
    minibatch (beta does not change) and is walked over all K only when the draw lands in it.
    Each draw has exactly the collapsed conditional's distribution; only the mapping from the
    uniform to the topic differs from the dense kernel.
    """
    n_docs = offsets.shape[0] - 1
    n_topics = beta_t.shape[1]
    sweeps = uniforms.shape[0]
    for d in numba.prange(n_docs):
        start = offsets[d]
        end = offsets[d + 1]
        counts = np.zeros(n_topics, dtype=np.int64)
        active = np.empty(n_topics, dtype=np.int64)  # the non-zero topics, unordered
        where = np.full(n_topics, -1, dtype=np.int64)  # position of a topic in ``active``
        n_active = 0
        for j in range(start, end):
            k = z[j]
            if counts[k] == 0:
                where[k] = n_active
                active[n_active] = k
                n_active += 1
            counts[k] += 1
        for s in range(sweeps):
            keep = s >= burn_in
            for j in range(start, end):
                w = words[j]
                row = beta_t[w]
                k_old = z[j]
                counts[k_old] -= 1
                if counts[k_old] == 0:
                    last = active[n_active - 1]
                    active[where[k_old]] = last
                    where[last] = where[k_old]
                    where[k_old] = -1
                    n_active -= 1
                dense_mass = 0.0
                for i in range(n_active):
                    k = active[i]
                    dense_mass += counts[k] * row[k]
                u = uniforms[s, j] * (dense_mass + smoothing[w])
                k_new = -1
                if u < dense_mass:
                    for i in range(n_active):
                        k = active[i]
                        u -= counts[k] * row[k]
                        if u < 0.0:
                            k_new = k
                            break
                    if k_new < 0:  # rounding at the bucket's edge
                        k_new = active[n_active - 1]
                else:
                    u -= dense_mass
                    k_new = n_topics - 1
                    for k in range(n_topics):
                        u -= gamma * row[k]
                        if u < 0.0:
                            k_new = k
                            break
                z[j] = k_new
                if counts[k_new] == 0:
                    where[k_new] = n_active
                    active[n_active] = k_new
                    n_active += 1
                counts[k_new] += 1
                if keep:
                    out[j, k_new] += 1.0


@numba.njit(cache=True)
def add_rows_by_word(words: np.ndarray, rows: np.ndarray, total: np.ndarray) -> None:
    """total[w] += rows[j] for every token j of word w (total is W x K)."""
    n_topics = rows.shape[1]
    for j in range(words.shape[0]):
        w = words[j]
        for k in range(n_topics):
            total[w, k] += rows[j, k]
