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
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lda.relevance import marginal as word_marginal
from lda.relevance import most_relevant
from service.store.published_model import PublishedModel
from service.store.snapshot import WordWeight

CACHED_LAMBDAS = 8  # rankings a loaded model keeps (lam rounded to 2 decimals)


def rounded(lam: float) -> float:
    """``lam`` as rankings are cached and bodies say it: to 2 decimals."""
    return round(lam, 2)


def marginal(model: PublishedModel) -> np.ndarray:
    """(W,) p(w) of ``model``: its stream's word frequencies, or beta's column mean."""
    stream = model.stream
    return word_marginal(model.beta, None if stream is None else stream.term_frequency)


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


def rank(
    model: PublishedModel, lam: float, n: int, pace: Callable[[], None] | None = None
) -> Ranking:
    """The :class:`Ranking` of ``model`` at ``lam``, ``n`` words a topic, ties by probability.

    relevance = log beta - (1 - lam) log p(w), computed over blocks of topics of the word-major
    beta (a block's values are contiguous per word); ``pace`` is called between blocks."""
    beta = model.beta
    ids = most_relevant(beta, marginal(model), lam, n, pace)
    weights = np.take_along_axis(beta, ids, axis=1).astype(np.float32)
    return Ranking(model.version, rounded(lam), ids, weights, model.vocab)


class Rankings:
    """A loaded model's rankings by lam (rounded), ``n`` words a topic, each computed once."""

    def __init__(self, model: PublishedModel, n: int) -> None:
        self.model = model
        self.n = n
        self._lock = threading.Lock()
        self._by_lambda: OrderedDict[float, Ranking] = OrderedDict()

    def get(self, lam: float, pace: Callable[[], None] | None = None) -> Ranking:
        """The ranking at ``lam`` rounded to 2 decimals (computed on the first ask; the least
        recently asked of CACHED_LAMBDAS goes, so cycling through many lambdas does not evict
        the page's)."""
        lam = rounded(lam)
        with self._lock:
            found = self._by_lambda.get(lam)
            if found is None:
                found = rank(self.model, lam, self.n, pace)
                if len(self._by_lambda) >= CACHED_LAMBDAS:
                    self._by_lambda.popitem(last=False)
                self._by_lambda[lam] = found
            self._by_lambda.move_to_end(lam)
            return found
