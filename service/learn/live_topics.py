"""What the worker publishes of its topics: the learner holds K slots, and the API is shown
the live ones, each under its number (lda.topic_ids).

While K is fixed the listing is :class:`AllTopics` (every slot live, numbers = slots), which
leaves what it is given as it is: what is published then is as it always was.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch

from lda.gamma import Gamma, gamma_vector
from lda.topic_ids import Identity, TopicIds
from service.store.published_model import StreamFigures
from service.store.search import IndexRows
from service.store.snapshot import Snapshot
from service.store.topic_moves import moves_body

T = TypeVar("T")
# What the API was last shown of the numbers: moves made, the next number, each slot's number.
Shown = tuple[int, int, tuple[int, ...]]

# The snapshot's fields that hold one entry per topic (the learner's K slots, as the parts
# show them): each keeps the live slots' entries.
PER_TOPIC = (
    "topics", "sample_topics", "topic_coherence", "topic_drift", "topic_changed_at", "intervals",
    "topic_size", "topic_articles", "topic_suggested", "topic_seeds", "topic_article_bounds",
)  # fmt: skip


@dataclass(frozen=True)
class LiveTopics:
    """The live slots, in slot order, and the number of each."""

    slots: tuple[int, ...]
    ids: Sequence[int]

    @classmethod
    def of(cls, ids: TopicIds) -> LiveTopics:
        """The listing of ``ids``: its live topics, or while K is fixed :class:`AllTopics`."""
        if ids.fixed:
            return AllTopics(tuple(range(ids.n_slots)), Identity.of(ids.n_slots))
        return cls(tuple(ids.live_slots()), tuple(ids.live_ids()))

    def rows(self, values: Sequence[T] | None) -> list[T] | None:
        """A per-slot list's live entries (None, or a list not of every slot, stays None:
        a part that showed nothing, or figures of an evaluation before the slots changed)."""
        if values is None or len(values) <= max(self.slots, default=-1):
            return None
        return [values[s] for s in self.slots]

    def snapshot(self, snapshot: Snapshot) -> Snapshot:
        """``snapshot`` of every slot, as the live topics' (each per-topic field filtered,
        their numbers added)."""
        live: dict[str, Any] = {name: self.rows(getattr(snapshot, name)) for name in PER_TOPIC}
        if live["topic_size"] is not None:  # shares of the live topics, still summing to 1
            live["topic_size"] = _normalised(np.asarray(live["topic_size"])).tolist()
        if live["topic_coherence"] is None:  # figures of other slots: none shown
            live["quality_docs"] = None
        return dataclasses.replace(snapshot, **live, topic_ids=list(self.ids))

    def moves(self, ids: TopicIds, shown: Shown | None) -> tuple[Shown | None, str | None]:
        """The numbers as they are now, and the body of their record to publish when the API
        was shown otherwise (:mod:`service.store.topic_moves`; None: no change)."""
        now = (ids.moves_total, ids.next_id, tuple(ids.slots))
        return now, None if now == shown else moves_body(ids)

    def moved_labels(self, matched: Sequence[int] | None) -> list[int] | None:
        """The labels an evaluation's drift matching moved (topic k is now what ``matched[k]``
        was), as a point of the topics' history records them: none here, where numbers, not
        labels, say which topic a column is."""
        return None

    def beta(self, beta: torch.Tensor) -> torch.Tensor:
        """The live rows of a K x W beta (either layout)."""
        return beta.index_select(0, torch.tensor(self.slots, device=beta.device))

    def gamma(self, gamma: Gamma, n_slots: int) -> Gamma:
        """The live topics' gamma_k."""
        vector = gamma_vector(gamma, n_slots)
        return tuple(float(vector[s]) for s in self.slots)

    def stream(self, figures: StreamFigures | None) -> StreamFigures | None:
        """The stream's figures over the live topics (shares renormalised to sum to 1)."""
        if figures is None:
            return None
        size = _normalised(np.asarray(figures.topic_size, dtype=np.float64)[list(self.slots)])
        doc_topic = np.asarray(figures.doc_topic, dtype=np.float32)[:, list(self.slots)]
        sums = doc_topic.sum(axis=1, keepdims=True)
        doc_topic = np.where(sums > 0, doc_topic / np.maximum(sums, 1e-30), doc_topic)
        return dataclasses.replace(figures, topic_size=size, doc_topic=doc_topic)

    def index(self, rows: IndexRows | None, n_slots: int) -> IndexRows | None:
        """The kept articles' shares with slots as the live topics' places (a free slot's
        share dropped: a pad)."""
        if rows is None:
            return None
        place = np.full(n_slots + 1, -1, dtype=np.int16)  # the last: a pad stays a pad
        place[list(self.slots)] = np.arange(len(self.slots), dtype=np.int16)
        topics = place[np.asarray(rows.topics, dtype=np.int64)]
        shares = np.where(topics >= 0, rows.shares, 0).astype(np.float32)
        return dataclasses.replace(rows, topics=topics, shares=shares, n_topics=len(self.slots))


class AllTopics(LiveTopics):
    """Every slot live, under its own number (K fixed): what it is given stays as it is, and
    the API is shown no numbers (lda.topic_ids.Identity)."""

    def rows(self, values: Sequence[T] | None) -> list[T] | None:
        return None if values is None else list(values)

    def snapshot(self, snapshot: Snapshot) -> Snapshot:
        return snapshot

    def moves(self, ids: TopicIds, shown: Shown | None) -> tuple[Shown | None, str | None]:
        """No record of the numbers: none is published while K is fixed."""
        return shown, None

    def moved_labels(self, matched: Sequence[int] | None) -> list[int] | None:
        """The labels moved, if any did: numbers are labels here."""
        if matched is None or all(int(m) == k for k, m in enumerate(matched)):
            return None
        return [int(m) for m in matched]

    def beta(self, beta: torch.Tensor) -> torch.Tensor:
        return beta

    def gamma(self, gamma: Gamma, n_slots: int) -> Gamma:
        return gamma

    def stream(self, figures: StreamFigures | None) -> StreamFigures | None:
        return figures

    def index(self, rows: IndexRows | None, n_slots: int) -> IndexRows | None:
        return rows


def _normalised(values: np.ndarray) -> np.ndarray:
    total = values.sum()
    return values / total if total > 0 else np.full(values.size, 1.0 / max(values.size, 1))
