"""The /infer fixed point compiled (numba), one document after another, without the GIL.

For each document, pi_k <- (pi_k sum_j w_j beta_kj / (pi . beta_j) + gamma_k) / (n + gamma_0)
over its distinct words j (counts w_j), from the uniform pi, until no pi_k moves by
``tolerance`` or after ``iterations`` (``lda.inference.infer_topics``' iteration). A document
of L distinct words costs 2 L K multiply-adds an iteration and no allocation, where a batch of
torch operations pays the overhead of many small library calls an iteration, most of its time
at this size.

Each document's arithmetic is its own, in a fixed order (no reassociation), so its answer is the
same bit for bit in any batch, and alone. Its columns are widened to float64 before use.
"""

from __future__ import annotations

import numba
import numpy as np

TINY = float(np.finfo(np.float64).tiny)


@numba.njit(cache=True, nogil=True)
def _document(
    columns: np.ndarray,
    ids: np.ndarray,
    gamma: np.ndarray,
    gamma_total: float,
    iterations: int,
    tolerance: float,
    rows: np.ndarray,
    words: np.ndarray,
    lengths: np.ndarray,
    scratch: np.ndarray,
    out: np.ndarray,
) -> None:
    """pi of one document (``ids`` sorted) into ``out``. Workspace of at least its size:
    ``rows`` (L x K) and ``words`` (K x L) its columns both ways, ``lengths`` (2 x L) its counts
    and each iteration's ratios, ``scratch`` (3 x K)."""
    k = columns.shape[1]
    weights, ratios = lengths[0], lengths[1]
    distinct = 0
    n = 0.0
    i = 0
    while i < ids.shape[0]:  # distinct ids and counts; a word no topic emits is dropped
        word = ids[i]
        count = 0
        while i < ids.shape[0] and ids[i] == word:
            count += 1
            i += 1
        column = 0.0
        for t in range(k):
            value = np.float64(columns[word, t])
            rows[distinct, t] = value
            words[t, distinct] = value
            column += value
        if column > 0.0:
            weights[distinct] = count
            n += count
            distinct += 1
    scale = 1.0 / (n + gamma_total)
    pi, new, sums = scratch[0], scratch[1], scratch[2]
    pi[:] = 1.0 / k
    for _ in range(iterations):
        # ratio_j = w_j / sum_t pi_t beta_tj: topic by topic, so the loop over words vectorises
        ratios[:distinct] = 0.0
        for t in range(k):
            share = pi[t]
            for j in range(distinct):
                ratios[j] += share * words[t, j]
        for j in range(distinct):
            ratios[j] = weights[j] / max(ratios[j], TINY)
        # sum_j ratio_j beta_tj: word by word, so the loop over topics vectorises
        sums[:] = 0.0
        for j in range(distinct):
            ratio = ratios[j]
            for t in range(k):
                sums[t] += ratio * rows[j, t]
        moved = 0.0
        for t in range(k):
            value = (sums[t] * pi[t] + gamma[t]) * scale
            moved = max(moved, abs(value - pi[t]))
            new[t] = value
        pi, new = new, pi
        if moved < tolerance:
            break
    total = pi.sum()
    for t in range(k):
        out[t] = pi[t] / total


@numba.njit(cache=True, nogil=True)
def fixed_points(
    columns: np.ndarray,
    ids: np.ndarray,
    starts: np.ndarray,
    gamma: np.ndarray,
    gamma_total: float,
    iterations: int,
    tolerance: float,
    out: np.ndarray,
) -> None:
    """pi (each row sums to 1) of documents ``ids[starts[d]:starts[d + 1]]`` into ``out``
    (D x K float64), under ``columns`` (W x K: a word's column a row) and the prior ``gamma``
    ((K,) float64; ``gamma_total`` its sum, K gamma exactly when symmetric: lda.gamma)."""
    k = columns.shape[1]
    longest = 0
    for d in range(starts.shape[0] - 1):
        longest = max(longest, starts[d + 1] - starts[d])
    size = max(longest, 1)
    rows, words = np.empty((size, k)), np.empty((k, size))
    lengths, scratch = np.empty((2, size)), np.empty((3, k))
    for d in range(starts.shape[0] - 1):
        document = np.sort(ids[starts[d] : starts[d + 1]])
        _document(
            columns, document, gamma, gamma_total, iterations, tolerance, rows, words, lengths,
            scratch, out[d],
        )  # fmt: skip
