"""What the worker counts of the stream beside the chain: each vocabulary word's frequency,
each topic's size and a uniform sample of the learned documents' lengths and topic shares,
published with beta (service.store.snapshot.StreamFigures; docs/topics.md, "Sizes").

A topic's size is its share of the stream's tokens: the minibatches' expected topic counts
summed with weights that halve every ``half_life`` documents, so it follows the stream as the
articles behind a topic do. Revisited documents are not counted (they were, when fresh).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from service.store.published_model import StreamFigures


class StreamTally:
    """Running counts of the fresh minibatches the learner took."""

    def __init__(self, n_topics: int, n_words: int, sample: int, half_life: int, seed: int):
        self.half_life = half_life
        self.term_frequency = np.zeros(n_words, dtype=np.float64)
        self.topic_tokens = np.zeros(n_topics, dtype=np.float64)  # aged E[tokens of topic k]
        self.sample = sample
        self.doc_lengths = np.zeros(0, dtype=np.int64)
        self.doc_topic = np.zeros((0, n_topics), dtype=np.float32)
        self.offered = 0  # documents offered to the sample (Algorithm R's n)
        self.random = np.random.default_rng(seed)

    def learned(self, words: torch.Tensor, counts: torch.Tensor) -> None:
        """A fresh minibatch: ``words`` its tokens' word ids, ``counts`` (n, K) E[n_dk]."""
        ids = words.to("cpu").numpy()
        self.term_frequency += np.bincount(ids, minlength=self.term_frequency.size)
        per_doc = counts.to("cpu", torch.float64).numpy()
        decay = 0.5 ** (per_doc.shape[0] / self.half_life)
        self.topic_tokens = decay * self.topic_tokens + per_doc.sum(axis=0)
        self._sample(per_doc)

    def _sample(self, per_doc: np.ndarray) -> None:
        """Algorithm R over documents: each learned one is in the sample with equal chance
        (a later document drawn to the same slot replaces an earlier one, as in order)."""
        lengths = per_doc.sum(axis=1)
        shares = (per_doc / np.maximum(lengths, 1e-300)[:, None]).astype(np.float32)
        rounded = np.rint(lengths).astype(np.int64)
        n = per_doc.shape[0]
        room = max(0, min(self.sample - self.doc_lengths.size, n))
        if room:
            self.doc_lengths = np.concatenate([self.doc_lengths, rounded[:room]])
            self.doc_topic = np.concatenate([self.doc_topic, shares[:room]])
        seen = self.offered + np.arange(room + 1, n + 1)  # Algorithm R's n of the rest
        self.offered += n
        if not seen.size:
            return
        slots = (self.random.random(seen.size) * seen).astype(np.int64)
        take = slots < self.sample
        self.doc_lengths[slots[take]] = rounded[room:][take]
        self.doc_topic[slots[take]] = shares[room:][take]

    @property
    def topic_size(self) -> np.ndarray:
        """(K,) each topic's share of the stream's tokens (uniform before any was learned)."""
        total = self.topic_tokens.sum()
        if total <= 0:
            return np.full(self.topic_tokens.size, 1.0 / self.topic_tokens.size)
        return self.topic_tokens / total

    def figures(self) -> StreamFigures:
        return StreamFigures(
            term_frequency=self.term_frequency.copy(),
            topic_size=self.topic_size,
            doc_lengths=self.doc_lengths.copy(),
            doc_topic=self.doc_topic.copy(),
        )

    def permute(self, matched: list[int]) -> None:
        """Topic k is now what topic ``matched[k]`` was (the drift matching moved labels)."""
        self.topic_tokens = self.topic_tokens[matched]
        self.doc_topic = self.doc_topic[:, matched]

    def reshape(self, dest: np.ndarray) -> None:
        """Topics merged or dropped (``dest``: per topic, where its tokens go; -1: dropped, see
        :mod:`service.learn.topic_reshape`): a merged-away topic's size and sampled shares add
        into the topic it went into, a dropped one's are gone (sizes renormalise over the
        rest)."""
        kept = dest >= 0
        tokens = np.zeros_like(self.topic_tokens)
        np.add.at(tokens, dest[kept], self.topic_tokens[kept])
        doc_topic = np.zeros_like(self.doc_topic)
        np.add.at(doc_topic.T, dest[kept], self.doc_topic.T[kept])
        self.topic_tokens, self.doc_topic = tokens, doc_topic

    def remap_words(self, keep: np.ndarray, documents: np.ndarray) -> None:
        """New word j is old word ``keep[j]`` (-1: it entered), in ``documents[j]`` of the
        stream's documents. An entering word's frequency starts at its documents times the
        staying words' tokens per document: at 0, the stream's p(w) would rank it far too
        rare, and first by relevance, for as long as the older words' counts dominate."""
        kept = keep >= 0
        frequency = np.zeros(keep.size, dtype=np.float64)
        frequency[kept] = self.term_frequency[keep[kept]]
        staying = float(documents[kept].sum())
        if staying > 0:
            ratio = float(frequency[kept].sum()) / staying
            frequency[~kept] = ratio * documents[~kept]
        self.term_frequency = frequency

    def state_dict(self) -> dict[str, Any]:
        return {
            "term_frequency": self.term_frequency.copy(),
            "topic_tokens": self.topic_tokens.copy(),
            "doc_lengths": self.doc_lengths.copy(),
            "doc_topic": self.doc_topic.copy(),
            "offered": self.offered,
            "random": self.random.bit_generator.state,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """A checkpoint's tally; one of another shape (K or W changed) is ignored."""
        if state["term_frequency"].shape != self.term_frequency.shape:
            return
        if state["topic_tokens"].shape != self.topic_tokens.shape:
            return
        self.term_frequency = state["term_frequency"].copy()
        self.topic_tokens = state["topic_tokens"].copy()
        self.doc_lengths = state["doc_lengths"][: self.sample].copy()
        self.doc_topic = state["doc_topic"][: self.sample].copy()
        self.offered = int(state["offered"])
        self.random.bit_generator.state = state["random"]
