"""The collapsed Gibbs sweep of Eq. S.19 compiled for the CPU (numba), parallel over documents.

Randomness comes in as pre-drawn uniforms, so results do not depend on the thread count and
equal the device-agnostic torch implementation draw for draw.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(parallel=True, cache=True, fastmath=False)
def collapsed_gibbs(
    words: np.ndarray,  # (T,) int64
    offsets: np.ndarray,  # (n+1,) int64
    beta_t: np.ndarray,  # (W, K) float64, beta transposed for contiguous rows
    gamma: float,
    z: np.ndarray,  # (T,) int64 initial assignments, updated in place
    uniforms: np.ndarray,  # (sweeps, T) float32
    burn_in: int,
    rao_blackwell: bool,
    out: np.ndarray,  # (T, K) float64 zeros: summed indicators (or conditionals) of kept sweeps
) -> None:
    n_docs = offsets.shape[0] - 1
    n_topics = beta_t.shape[1]
    sweeps = uniforms.shape[0]
    for d in numba.prange(n_docs):
        start = offsets[d]
        end = offsets[d + 1]
        counts = np.zeros(n_topics, dtype=np.float64)
        cumulative = np.empty(n_topics, dtype=np.float64)
        for j in range(start, end):
            counts[z[j]] += 1.0
        for s in range(sweeps):
            keep = s >= burn_in
            for j in range(start, end):
                row = beta_t[words[j]]
                counts[z[j]] -= 1.0
                total = 0.0
                for k in range(n_topics):
                    total += (gamma + counts[k]) * row[k]
                    cumulative[k] = total
                u = uniforms[s, j] * total
                k_new = 0
                while k_new < n_topics - 1 and cumulative[k_new] <= u:
                    k_new += 1
                z[j] = k_new
                counts[k_new] += 1.0
                if keep:
                    if rao_blackwell:
                        previous = 0.0
                        for k in range(n_topics):
                            out[j, k] += (cumulative[k] - previous) / total
                            previous = cumulative[k]
                    else:
                        out[j, k_new] += 1.0
