"""Each topic's words ranked by relevance (Sievert & Shirley, 2014; pyLDAvis' ranking).

``relevance(w|k) = lam * log(beta[k, w]) + (1 - lam) * log(beta[k, w] / p(w))``: ``lam = 1``
is plain probability, lower values favour words peculiar to the topic over words frequent
everywhere. ``p(w)`` is the word's share of the stream's tokens (the published model's
``term_frequency``); a model without the stream's figures (an older worker) uses the mean of
beta's columns, every topic weighted alike, since it carries no topic sizes either. How it is
computed: docs/topics.md#relevance.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from service.store.snapshot import PublishedModel, WordWeight

# Sievert & Shirley's users found topics easiest to read near this lam; suggested names use it.
SUGGESTED_LAMBDA = 0.6
SUGGESTED_WORDS = 3
SUGGESTED_JOIN = " · "
TOPICS_PER_BLOCK = 32  # topics ranked at a time: a W x TOPICS_PER_BLOCK temporary
CACHED_LAMBDAS = 8  # rankings a loaded model keeps (lam rounded to 2 decimals)


def rounded(lam: float) -> float:
    """``lam`` as rankings are cached and bodies say it: to 2 decimals."""
    return round(lam, 2)


def marginal(model: PublishedModel) -> np.ndarray:
    """(W,) p(w): the stream's word frequencies, or beta's column mean without them. A word
    never counted gets half a count, so that its log stays finite."""
    stream = model.stream
    if stream is not None and float(stream.term_frequency.sum()) > 0:
        counts = np.maximum(stream.term_frequency.astype(np.float64), 0.5)
        return counts / float(stream.term_frequency.sum())
    return model.beta.mean(axis=0, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class Ranking:
    """Each topic's ``n`` most relevant words at ``lam`` (ids and probabilities, most relevant
    first), of the model ``version``. Compared by identity: the cache hands out one per lam."""

    version: str
    lam: float
    ids: np.ndarray  # (K, n) int64
    weights: np.ndarray  # (K, n) float32, beta[k, ids]
    vocab: list[str]

    def words(self, k: int, top: int) -> list[WordWeight]:
        """Topic ``k``'s ``top`` most relevant words, each with its probability as weight."""
        return [
            WordWeight(self.vocab[w], p)
            for w, p in zip(self.ids[k, :top].tolist(), self.weights[k, :top].tolist(), strict=True)
        ]

    def suggested_name(self, k: int) -> str:
        """Topic ``k``'s first words by relevance, joined."""
        return SUGGESTED_JOIN.join(w.word for w in self.words(k, SUGGESTED_WORDS))


def rank(
    model: PublishedModel, lam: float, n: int, pace: Callable[[], None] | None = None
) -> Ranking:
    """The :class:`Ranking` of ``model`` at ``lam``, ``n`` words a topic, ties by probability.

    relevance = log beta - (1 - lam) log p(w), computed over blocks of topics of the word-major
    beta (a block's values are contiguous per word); ``pace`` is called between blocks."""
    beta = model.beta
    k_all, w_all = beta.shape
    n = min(n, w_all)
    shift = (1.0 - lam) * np.log(marginal(model))
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
    weights = np.take_along_axis(beta, ids, axis=1).astype(np.float32)
    return Ranking(model.version, rounded(lam), ids, weights, model.vocab)


class Rankings:
    """A loaded model's rankings by lam (rounded), ``n`` words a topic, each computed once."""

    def __init__(self, model: PublishedModel, n: int) -> None:
        self.model = model
        self.n = n
        self._lock = threading.Lock()
        self._by_lambda: dict[float, Ranking] = {}

    def get(self, lam: float, pace: Callable[[], None] | None = None) -> Ranking:
        """The ranking at ``lam`` rounded to 2 decimals (computed on the first ask)."""
        lam = rounded(lam)
        with self._lock:
            found = self._by_lambda.get(lam)
            if found is None:
                found = rank(self.model, lam, self.n, pace)
                if len(self._by_lambda) >= CACHED_LAMBDAS:
                    self._by_lambda.clear()
                self._by_lambda[lam] = found
            return found
