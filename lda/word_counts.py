"""How many documents of a stream each word is in, in bounded memory, and the vocabulary they
choose (docs/model.md, "When the vocabulary changes").

A Misra-Gries summary of document frequencies: at most ``2 x capacity`` words are counted;
when more are, the ``capacity + 1``-th largest count is taken from every count and the words
left at zero or less go. Each such cut takes as much from at least ``capacity + 1`` counts, so
the total cut (``floor``) is at most the document-word pairs seen over ``capacity + 1``: a
count is low by at most ``floor``, and a word counted more than ``floor`` times is still there.
Taking the same amount from every count keeps their order, so the words that lose rank are only
those that came in after a cut. The first vocabulary (:func:`lda.vocab.build_vocabulary`) and
every later one are chosen from these counts by the same rule, :meth:`WordCounts.top`.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from lda.tokens import fold


class WordCounts:
    """Document frequencies of the words offered (``capacity`` None: every word, exactly)."""

    def __init__(self, capacity: int | None = None) -> None:
        if capacity is not None and capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self.counts: Counter[bytes] = Counter()  # word (UTF-8, as lda.tokens finds it) -> count
        self.documents = 0
        self.floor = 0  # the most any count is low by (see the module docstring)

    def __len__(self) -> int:
        return len(self.counts)

    def add(self, tokens: Iterable[bytes]) -> None:
        """One document's tokens (each word counts once, however often it occurs)."""
        self.counts.update(set(tokens))
        self.documents += 1
        if self.capacity is not None and len(self.counts) > 2 * self.capacity:
            self._cut(self.capacity)

    def _cut(self, capacity: int) -> None:
        """Take the ``capacity + 1``-th largest count from every count; keep the positive."""
        cut = heapq.nlargest(capacity + 1, self.counts.values())[-1]
        self.counts = Counter({w: c - cut for w, c in self.counts.items() if c > cut})
        self.floor += cut

    def top(
        self,
        size: int,
        *,
        min_length: int = 3,
        max_document_fraction: float = 0.5,
        stop_words: frozenset[str] = frozenset(),
    ) -> list[str]:
        """The ``size`` words in most documents (ties by word), skipping words shorter than
        ``min_length`` characters, stop words (compared folded, as tokens are) and words in
        more than ``max_document_fraction`` of the documents."""
        stop = frozenset(fold(w).encode("utf-8") for w in stop_words)
        limit = max_document_fraction * self.documents
        candidates = (
            (count, word)
            for word, count in self.counts.items()
            if count + self.floor <= limit  # at most floor low: ubiquitous ones stay out
            and word not in stop
            and len(word.decode("utf-8")) >= min_length
        )
        best = heapq.nsmallest(size, candidates, key=lambda cw: (-cw[0], cw[1]))
        return [word.decode("utf-8") for _, word in best]

    def state_dict(self) -> dict[str, Any]:
        """The counts, for a checkpoint (words as UTF-8 bytes, as counted)."""
        return {
            "capacity": self.capacity,
            "documents": self.documents,
            "floor": self.floor,
            "words": list(self.counts.keys()),
            "counts": list(self.counts.values()),
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any], capacity: int | None = None) -> WordCounts:
        """Counts saved with :meth:`state_dict`, under ``capacity`` (a setting may change
        between runs; the checkpoint's when None): a smaller one cuts as counting would."""
        counts = cls(state["capacity"] if capacity is None else capacity)
        counts.documents = int(state["documents"])
        counts.floor = int(state["floor"])
        counts.counts = Counter(dict(zip(state["words"], state["counts"], strict=True)))
        if counts.capacity is not None and len(counts.counts) > 2 * counts.capacity:
            counts._cut(counts.capacity)
        return counts


def next_vocabulary(old: Sequence[str], chosen: Iterable[str]) -> list[str]:
    """The words ``chosen`` in an order that moves few columns: the old words that stay, in
    their old order, then the words that enter, in ``chosen``'s."""
    chosen = list(chosen)
    staying = set(chosen)
    known = set(old)
    return [w for w in old if w in staying] + [w for w in chosen if w not in known]
