"""Which topics use a word: its rank and probability in each topic of the published beta.

A word's rank in topic k is one more than the number of words more probable in k. Counting
them for every topic reads the whole K x W beta, so the count runs over slices of words (a
bounded temporary), and the loaded model keeps the answer per word: asking again costs nothing
until the next model.
"""

from __future__ import annotations

import numpy as np

from service.store.published_model import PublishedModel

SLICE_WORDS = 4096  # words compared at a time: a K x SLICE_WORDS temporary
CACHED_WORDS = 1024  # words whose ranks a loaded model keeps

Ranked = tuple[np.ndarray, np.ndarray]  # (topics by the word's rank, ranks)


def word_ranks(beta: np.ndarray, word_id: int) -> np.ndarray:
    """(K,) the word's rank in each topic of ``beta`` (K x W), 1 for a topic's top word."""
    column = beta[:, word_id]
    above = np.zeros(beta.shape[0], dtype=np.int64)
    for start in range(0, beta.shape[1], SLICE_WORDS):
        above += np.count_nonzero(beta[:, start : start + SLICE_WORDS] > column[:, None], axis=1)
    return above + 1


def ranked(beta: np.ndarray, word_id: int, cache: dict[int, Ranked]) -> Ranked:
    """The topics by the word's rank (best first, ties by its probability) and its ranks,
    from ``cache`` when there (a bounded dict of the loaded model's)."""
    found = cache.get(word_id)
    if found is None:
        ranks = word_ranks(beta, word_id)
        found = np.lexsort((-beta[:, word_id], ranks)), ranks
        if len(cache) >= CACHED_WORDS:
            cache.clear()
        cache[word_id] = found
    return found


def word_topics(
    model: PublishedModel, word_id: int, top: int, words: int, cache: dict[int, Ranked]
) -> list[dict[str, object]]:
    """The ``top`` topics the word ranks highest in, each with the word's rank and probability
    and the topic's ``words`` most probable words."""
    order, ranks = ranked(model.beta, word_id, cache)
    out: list[dict[str, object]] = []
    for k in order[:top].tolist():
        row = model.beta[k]
        best = np.argpartition(-row, min(words, row.shape[0] - 1))[:words]
        best = best[np.lexsort((best, -row[best]))]
        out.append(
            {
                "topic": model.number(k),
                "rank": int(ranks[k]),
                "probability": float(row[word_id]),
                "top_words": [model.vocab[w] for w in best.tolist()],
            }
        )
    return out
