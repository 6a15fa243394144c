"""How many documents of a stream each word is in, in bounded memory, and the vocabulary they
choose (docs/model.md, "When the vocabulary changes").

A Misra-Gries summary of document frequencies: at most ``2 x capacity`` words are counted
besides the vocabulary's; when more are, the ``capacity + 1``-th largest count is taken from
every count and the words left at zero or less go. Each such cut takes as much from at least
``capacity + 1`` counts, so the total cut (``floor``) is at most the document-word pairs seen
over ``capacity + 1``: a count is low by at most ``floor``, and a word counted more than
``floor`` times is still there. Taking the same amount from every count keeps their order.

The words of the vocabulary in use are counted in an array by word id (a document's ids, which
encoding found anyway), and only the others by string. The array's words take the cuts too, as
a debt: a word's count there is its array entry less the cuts made since it entered the array
(``floor`` now less ``floor`` then), so every word is ranked as the one summary would rank it,
and an incumbent is not favoured over a newcomer. When the vocabulary changes, counts move
between the two with their words. The first vocabulary (:func:`lda.vocab.build_vocabulary`)
and every later one are chosen from these counts by the same rule, :meth:`WordCounts.top`.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from lda.tokens import fold

# Vocabulary ids gathered before they are added to the array in one pass.
PENDING_IDS = 1_000_000


class WordCounts:
    """Document frequencies of the words offered (``capacity`` None: every word, exactly)."""

    def __init__(self, capacity: int | None = None) -> None:
        if capacity is not None and capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        # Words outside the vocabulary in use (UTF-8, as lda.tokens finds them) -> count.
        self.counts: Counter[bytes] = Counter()
        self.known_words: list[bytes] = []  # the vocabulary in use, by word id
        self.known = np.zeros(0, dtype=np.int64)  # their counts on entering, plus since
        self.known_floor = np.zeros(0, dtype=np.int64)  # floor when each entered the array
        self.pending: list[int] = []  # vocabulary ids not added to the array yet
        self.documents = 0
        self.floor = 0  # the most any count is low by (see the module docstring)

    def __len__(self) -> int:
        """Words counted."""
        return len(self.counts) + int(np.count_nonzero(self._known_counts() > 0))

    def _known_counts(self) -> np.ndarray:
        """The vocabulary's counts as the summary would hold them (the cuts since each entered
        taken off)."""
        self._add_pending()
        return self.known - (self.floor - self.known_floor)

    def add(self, tokens: Iterable[bytes]) -> None:
        """One document's tokens (each word counts once, however often it occurs), none of
        them looked up in the vocabulary."""
        self._add_others(set(tokens))

    def add_encoded(self, present: Iterable[int], others: set[bytes]) -> None:
        """One document as encoding found it: the distinct ids of its vocabulary words and its
        other words. The ids are added to the array in bulk, up to PENDING_IDS at a time."""
        self.pending.extend(present)
        if len(self.pending) >= PENDING_IDS:
            self._add_pending()
        self._add_others(others)

    def _add_pending(self) -> None:
        """The vocabulary ids offered since the last call, into the array."""
        if self.pending:
            self.known += np.bincount(np.asarray(self.pending), minlength=self.known.size)
            self.pending = []

    def _add_others(self, words: set[bytes]) -> None:
        self.counts.update(words)
        self.documents += 1
        if self.capacity is not None and len(self.counts) > 2 * self.capacity:
            self._cut(self.capacity)

    def _cut(self, capacity: int) -> None:
        """Take the ``capacity + 1``-th largest count from every summary count; keep the
        positive."""
        cut = heapq.nlargest(capacity + 1, self.counts.values())[-1]
        self.counts = Counter({w: c - cut for w, c in self.counts.items() if c > cut})
        self.floor += cut

    def use_vocabulary(self, words: Sequence[str]) -> None:
        """Count ``words`` (a vocabulary, in id order) by id from now on: their counts leave
        the summary for the array, and those of the words no longer in use go back to it."""
        self._add_pending()
        for word, count in zip(self.known_words, self._known_counts().tolist(), strict=True):
            if count > 0:
                self.counts[word] = count
        self.known_words = [word.encode("utf-8") for word in words]
        pop = self.counts.pop
        self.known = np.fromiter(
            (pop(word, 0) for word in self.known_words), dtype=np.int64, count=len(words)
        )
        self.known_floor = np.full(len(words), self.floor, dtype=np.int64)

    def items(self) -> Iterable[tuple[bytes, int]]:
        """Every word counted and its count."""
        yield from self.counts.items()
        for word, count in zip(self.known_words, self._known_counts().tolist(), strict=True):
            if count > 0:
                yield word, count

    def top(
        self,
        size: int,
        *,
        min_length: int = 3,
        max_document_fraction: float = 0.5,
        stop_words: frozenset[str] = frozenset(),
    ) -> list[str]:
        """The ``size`` words in most documents (ties by word), skipping words shorter than
        ``min_length`` characters, stop words (compared folded, as tokens are) and words that
        may be in more than ``max_document_fraction`` of the documents."""
        stop = frozenset(fold(w).encode("utf-8") for w in stop_words)
        limit = max_document_fraction * self.documents - self.floor  # at most floor low
        candidates = (
            (-count, word)
            for word, count in self.items()
            if count <= limit and word not in stop and _long_enough(word, min_length)
        )
        return [word.decode("utf-8") for _, word in heapq.nsmallest(size, candidates)]

    def state_dict(self) -> dict[str, Any]:
        """The counts, for a checkpoint (words as UTF-8 bytes, as counted)."""
        return {
            "capacity": self.capacity,
            "documents": self.documents,
            "floor": self.floor,
            "words": list(self.counts.keys()),
            "counts": list(self.counts.values()),
            "known_words": list(self.known_words),
            "known": self._known_counts() + (self.floor - self.known_floor),
            "known_floor": self.known_floor.copy(),
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any], capacity: int | None = None) -> WordCounts:
        """Counts saved with :meth:`state_dict`, under ``capacity`` (a setting may change
        between runs; the checkpoint's when None): a smaller one cuts as counting would. The
        vocabulary in use is the saved one until :meth:`use_vocabulary` says another."""
        counts = cls(state["capacity"] if capacity is None else capacity)
        counts.load_state_dict(state)
        return counts

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Take the counts :meth:`state_dict` saved, under this capacity (a smaller one cuts
        them as counting would)."""
        self.documents = int(state["documents"])
        self.floor = int(state["floor"])
        self.counts = Counter(dict(zip(state["words"], state["counts"], strict=True)))
        self.known_words = list(state.get("known_words", []))
        self.known = np.asarray(state.get("known", np.zeros(0)), dtype=np.int64).copy()
        floors = state.get("known_floor", np.full(self.known.size, self.floor))
        self.known_floor = np.asarray(floors, dtype=np.int64).copy()
        self.pending = []
        if self.capacity is not None and len(self.counts) > 2 * self.capacity:
            self._cut(self.capacity)


def _long_enough(word: bytes, length: int) -> bool:
    """``word`` (UTF-8) has at least ``length`` characters: decoded only when its bytes cannot
    tell (a character is 1 to 4 bytes)."""
    size = len(word)
    if size < length:
        return False
    return size >= 4 * length or word.isascii() or len(word.decode("utf-8")) >= length


def next_vocabulary(old: Sequence[str], chosen: Iterable[str]) -> list[str]:
    """The words ``chosen`` in an order that moves few columns: the old words that stay, in
    their old order, then the words that enter, in ``chosen``'s."""
    chosen = list(chosen)
    staying = set(chosen)
    known = set(old)
    return [w for w in old if w in staying] + [w for w in chosen if w not in known]
