"""Each topic's words ranked by relevance (Sievert & Shirley, 2014; pyLDAvis' ranking), in numpy
so that the API (which loads no torch) and the worker rank alike (docs/topics.md, "Relevance").

``relevance(w|k) = lam * log(beta[k, w]) + (1 - lam) * log(beta[k, w] / p(w))``: ``lam = 1``
is plain probability, lower values favour words peculiar to the topic over words frequent
everywhere.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# Sievert & Shirley's users found topics easiest to read near this lam; suggested names use it.
SUGGESTED_LAMBDA = 0.6
SUGGESTED_WORDS = 3
SUGGESTED_JOIN = " · "
TOPICS_PER_BLOCK = 32  # topics ranked at a time: a W x TOPICS_PER_BLOCK temporary


def stream_marginal(term_frequency: np.ndarray) -> np.ndarray:
    """(W,) p(w) from the stream's word counts (some counted). A word never counted gets half a
    count, so that its log stays finite."""
    counts = np.maximum(term_frequency.astype(np.float64), 0.5)
    return counts / float(term_frequency.sum())


def marginal(beta: np.ndarray, term_frequency: np.ndarray | None) -> np.ndarray:
    """(W,) p(w): the stream's word frequencies, or beta's column mean without them (every
    topic weighted alike)."""
    if term_frequency is not None and float(term_frequency.sum()) > 0:
        return stream_marginal(term_frequency)
    return np.asarray(beta).mean(axis=0, dtype=np.float64)


def most_relevant(
    beta: np.ndarray,
    p: np.ndarray,
    lam: float,
    n: int,
    pace: Callable[[], None] | None = None,
) -> np.ndarray:
    """(K, n) each topic's ``n`` most relevant word ids at ``lam``, ties to the more probable.

    relevance = log beta - (1 - lam) log p(w), computed over blocks of topics (of a word-major
    beta, a block's values are contiguous per word); ``pace`` is called between blocks."""
    k_all, w_all = beta.shape
    n = min(n, w_all)
    shift = (1.0 - lam) * np.log(p)
    tiny = np.finfo(np.float32).tiny
    ids = np.empty((k_all, n), dtype=np.int64)
    for start in range(0, k_all, TOPICS_PER_BLOCK):
        block = beta[start : start + TOPICS_PER_BLOCK].T  # (W, b)
        relevance = np.log(np.maximum(block, tiny), dtype=np.float64) - shift[:, None]
        best = np.argpartition(-relevance, n - 1, axis=0)[:n] if n < w_all else None
        for j in range(block.shape[1]):
            column = relevance[:, j]
            candidates = np.arange(w_all) if best is None else best[:, j]
            order = np.lexsort((-block[candidates, j], -column[candidates]))
            ids[start + j] = candidates[order]
        if pace is not None:
            pace()
    return ids


def suggested_names(ids: np.ndarray, vocab: list[str]) -> list[str]:
    """Each topic's name suggested by its first words in ``ids`` (most relevant first)."""
    return [SUGGESTED_JOIN.join(vocab[w] for w in row[:SUGGESTED_WORDS]) for row in ids.tolist()]


def rerank(ids: np.ndarray, weights: np.ndarray, p: np.ndarray, lam: float) -> np.ndarray:
    """(K, n) the candidate word ``ids`` (K, n) of each topic, with their probabilities
    ``weights``, reordered by relevance at ``lam`` (ties to the more probable): the ranking
    among a topic's most probable words, at a cost of K x n."""
    relevance = np.log(np.maximum(weights, np.finfo(np.float32).tiny)) - (1.0 - lam) * np.log(
        p[ids]
    )
    order = np.lexsort((-weights, -relevance), axis=1)
    return np.take_along_axis(ids, order, axis=1)
