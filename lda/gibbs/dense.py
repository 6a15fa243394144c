"""The collapsed Gibbs sweep of Eq. S.19 compiled for the CPU (numba), parallel over documents.

Randomness comes in as pre-drawn uniforms, so results do not depend on the thread count and
equal the device-agnostic torch implementation draw for draw.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, fastmath=True)
def weight_total(weights: np.ndarray) -> float:
    """Sum of the conditional's weights (vectorised: the draw does not depend on its order)."""
    total = 0.0
    for k in range(weights.shape[0]):
        total += weights[k]
    return total


@numba.njit(parallel=True, cache=True, fastmath=False)
def collapsed_gibbs(
    words: np.ndarray,  # (T,) int64
    offsets: np.ndarray,  # (n+1,) int64
    schedule: np.ndarray,  # (n,) int64: documents grouped by thread (see balanced_schedule)
    bounds: np.ndarray,  # (threads+1,) int64: thread b runs schedule[bounds[b]:bounds[b+1]]
    beta_t: np.ndarray,  # (W, K) float64, beta transposed for contiguous rows
    gamma: np.ndarray,  # (K,) float64 gamma_k (lda.gamma.gamma_vector)
    z: np.ndarray,  # (T,) int64 initial assignments, updated in place
    uniforms: np.ndarray,  # (sweeps, T) float32
    burn_in: int,
    rao_blackwell: bool,
    out: np.ndarray,  # (T, K) zeros: kept-sweep indicator counts (uint16) or conditionals (float)
) -> None:
    for b in numba.prange(bounds.shape[0] - 1):
        for i in range(bounds[b], bounds[b + 1]):
            _sample_document(
                words, offsets, schedule[i], beta_t, gamma, z, uniforms, burn_in, rao_blackwell, out
            )


@numba.njit(cache=True)
def balanced_schedule(lengths: np.ndarray, threads: int) -> tuple[np.ndarray, np.ndarray]:
    """Documents in ``threads`` groups of near-equal token counts, longest first, each to the
    lightest group. numba's prange hands out iterations statically (its chunk size setting did
    not change that here), so one group per thread is how the load gets balanced. Compiled:
    in Python the loop cost a noticeable share of a minibatch."""
    n = lengths.shape[0]
    loads = np.zeros(threads, dtype=np.int64)
    group = np.empty(n, dtype=np.int64)
    sizes = np.zeros(threads, dtype=np.int64)
    order = np.argsort(-lengths, kind="mergesort")  # stable: ties keep document order
    for i in range(n):
        d = order[i]
        b = int(np.argmin(loads))
        group[i] = b
        sizes[b] += 1
        loads[b] += lengths[d]
    bounds = np.zeros(threads + 1, dtype=np.int64)
    for b in range(threads):
        bounds[b + 1] = bounds[b] + sizes[b]
    fill = bounds[:-1].copy()
    schedule = np.empty(n, dtype=np.int64)
    for i in range(n):
        b = group[i]
        schedule[fill[b]] = order[i]
        fill[b] += 1
    return schedule, bounds


@numba.njit(cache=True, inline="always")
def _sample_document(
    words: np.ndarray,
    offsets: np.ndarray,
    d: int,
    beta_t: np.ndarray,
    gamma: np.ndarray,
    z: np.ndarray,
    uniforms: np.ndarray,
    burn_in: int,
    rao_blackwell: bool,
    out: np.ndarray,
) -> None:
    """All sweeps of document d (inlined into the parallel loop: as a call it ran slower)."""
    n_topics = beta_t.shape[1]
    sweeps = uniforms.shape[0]
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
            k_old = z[j]
            counts[k_old] -= 1.0
            for k in range(n_topics):
                weights[k] = (gamma[k] + counts[k]) * row[k]
            total = weight_total(weights)
            u = uniforms[s, j] * total
            # Inverse CDF with the current topic first: most tokens keep their topic, and then
            # one comparison replaces the walk. Then the first other topic whose running sum
            # exceeds the rest of u (as torch.searchsorted, right). Exact either way.
            w_old = weights[k_old]
            if u < w_old:
                k_new = k_old
            else:
                u -= w_old
                weights[k_old] = 0.0
                k_new = n_topics - 1
                running = 0.0
                for k in range(n_topics - 1):
                    running += weights[k]
                    if running > u:
                        k_new = k
                        break
                weights[k_old] = w_old
            z[j] = k_new
            counts[k_new] += 1.0
            if keep:
                if rao_blackwell:
                    for k in range(n_topics):
                        out[j, k] += weights[k] / total
                else:
                    out[j, k_new] += 1


@numba.njit(cache=True)
def add_by_word(words: np.ndarray, summed: np.ndarray, kept: int, out: np.ndarray) -> None:
    """out[k, w] += summed[j, k] / kept over the tokens j of word w, in token order."""
    for j in range(words.shape[0]):
        w = words[j]
        for k in range(summed.shape[1]):
            if summed[j, k] != 0:
                out[k, w] += summed[j, k] / kept


@numba.njit(parallel=True, cache=True)
def draw_by_word(words: np.ndarray, cdf_t: np.ndarray, uniforms: np.ndarray, z: np.ndarray) -> None:
    """z[j] = the first k with u_j < cdf_t[w_j, k] (cdf_t's rows end at 1): a binary search
    per token, the same k as torch.searchsorted(cdf_t[words], u, right=True)."""
    last = cdf_t.shape[1] - 1
    for j in numba.prange(words.shape[0]):
        row = cdf_t[words[j]]
        u = uniforms[j]
        lo, hi = 0, last
        while lo < hi:
            mid = (lo + hi) // 2
            if row[mid] <= u:
                lo = mid + 1
            else:
                hi = mid
        z[j] = lo


@numba.njit(parallel=True, cache=True)
def draw_by_word_unnormalised(
    words: np.ndarray, cdf_t: np.ndarray, uniforms: np.ndarray, z: np.ndarray
) -> None:
    """:func:`draw_by_word` on running sums that do not end at 1: each comparison divides by
    the row's total, so the topics equal those drawn from the normalised rows (the same
    division), without a normalised (W_b, K) copy."""
    last = cdf_t.shape[1] - 1
    for j in numba.prange(words.shape[0]):
        row = cdf_t[words[j]]
        total = row[last]
        u = uniforms[j]
        lo, hi = 0, last
        while lo < hi:
            mid = (lo + hi) // 2
            if row[mid] / total <= u:
                lo = mid + 1
            else:
                hi = mid
        z[j] = lo


@numba.njit(cache=True)
def add_by_document(offsets: np.ndarray, summed: np.ndarray, kept: int, out: np.ndarray) -> None:
    """out[d, k] += summed[j, k] / kept over the tokens j of document d, in token order."""
    for d in range(offsets.shape[0] - 1):
        for j in range(offsets[d], offsets[d + 1]):
            for k in range(summed.shape[1]):
                out[d, k] += summed[j, k] / kept
