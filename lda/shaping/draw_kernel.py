"""The window's topic draw in one parallel pass over its tokens (lda.shaping.evidence.draw):
each token's topic among its document's candidates, with probability proportional to the
candidate's weight times beta at the token's word, from a uniform the caller drew (so the
draw is the caller's generator's, whatever the threads)."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(parallel=True, cache=True)
def draw_topics(
    token_doc: np.ndarray,  # (T,) int64 each token's document
    token_word: np.ndarray,  # (T,) int64 each token's row of ``beta``
    candidates: np.ndarray,  # (D, M) int64 each document's candidate topics
    weight: np.ndarray,  # (D, M) float64 their weights, E[n_dk] + gamma_k
    beta: np.ndarray,  # (U, L) float64 the topics' beta at the window's words
    uniforms: np.ndarray,  # (T,) float64 in [0, 1)
    out: np.ndarray,  # (T,) int64 the topic drawn
) -> None:
    """out[t]: the first candidate whose running sum of weight x beta reaches uniforms[t] times
    the whole sum (the last one if rounding leaves none)."""
    n_candidates = candidates.shape[1]
    for t in numba.prange(token_doc.shape[0]):
        d, w = token_doc[t], token_word[t]
        row = beta[w]
        total = 0.0
        for j in range(n_candidates):
            total += weight[d, j] * row[candidates[d, j]]
        target = uniforms[t] * total
        running = 0.0
        pick = n_candidates - 1
        for j in range(n_candidates):
            running += weight[d, j] * row[candidates[d, j]]
            if running >= target:
                pick = j
                break
        out[t] = candidates[d, pick]
