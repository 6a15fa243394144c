"""What the worker's snapshot says about each topic beyond its words (docs/heldout.md).

Per topic: NPMI coherence and drift from the latest scored evaluation (the scoring process
computes both, :mod:`service.learn.scoring_process`), the documents seen when the topic last
moved more than ``CHANGED_BITS`` (its label followed through the matching of
:mod:`lda.evaluation.drift`), and the 5-95% interval of each top word's weight over the chain's
last ``uncertainty_samples`` samples (kept whole for a dense chain's small model, at the words
last published for a large one and for the lazy chain).
Nothing here is checkpointed: after a restart drift and intervals start over.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from lda.config import CHANGED_BITS
from lda.evaluation.uncertainty import SampleWindow
from lda.model import StreamingLDA

INTERVAL_DIGITS = 3  # significant digits of a published interval bound
# The uncertainty window keeps whole samples up to this size (S x K x W float32): enough for a
# small model's 20 samples, far too little for a large model's, which keeps the published
# words only.
WINDOW_BYTES = 256 * 2**20


class TopicWatch:
    """The worker's per-topic record: fed every sample and every scored evaluation."""

    def __init__(self, samples: int) -> None:
        self.window = SampleWindow(samples) if samples >= 2 else None
        self.served: torch.Tensor | None = None  # (K, n) the words last published
        self.docs: int | None = None
        self.coherence: list[float | None] | None = None
        self.drift: list[float] | None = None
        self.changed_at: list[int] | None = None

    def sample_from(self, model: StreamingLDA) -> None:
        """The chain's sample after a step: whole while the window of whole samples fits
        WINDOW_BYTES and reading it is a division (every served word then has its interval
        from the first two steps on), else at the words last published only (a word new to
        the top words has none until two samples held it). The lazy chain's whole sample
        draws every column the step did not touch: as costly as the step itself, every step."""
        if self.window is None:
            return
        n_topics, n_words = model.config.n_topics, model.config.n_words
        fits = self.window.size * n_topics * n_words * 4 <= WINDOW_BYTES
        if fits and not model.whole_reads_cost_draws:
            self.window.add(None, model.beta)
        elif self.served is not None:
            self.window.add(self.served, model.sample_at(self.served))

    def forget_samples(self) -> None:
        """Drop the window's samples (the chain was restored to a checkpoint)."""
        if self.window is not None:
            self.window = SampleWindow(self.window.size)

    def vocabulary_changed(self) -> None:
        """The words changed: the window's samples and the words last published are in the
        old word ids."""
        self.forget_samples()
        self.served = None

    def scored(self, docs_seen: int, topics: dict[str, Any]) -> None:
        """An evaluation's per-topic figures (see Scored.topics), in order of docs_seen."""
        coherence = [c if math.isfinite(c) else None for c in topics["coherence"]]
        drift, matched = topics.get("drift"), topics.get("matched")
        before = self.changed_at
        if before is not None and len(before) != len(coherence):
            before = None
        if before is None:  # first seen now
            changed = [docs_seen] * len(coherence)
        elif drift is None or matched is None:  # the scorer restarted: no previous beta
            changed = before
        else:
            changed = [
                docs_seen if d > CHANGED_BITS else before[m]
                for d, m in zip(drift, matched, strict=True)
            ]
        self.docs, self.coherence, self.drift, self.changed_at = (
            docs_seen,
            coherence,
            drift,
            changed,
        )

    def fields(self, word_ids: torch.Tensor) -> dict[str, Any]:
        """The snapshot's per-topic fields for its topics' top words ``word_ids`` (K x n, as
        service.store.snapshot.ranked gives them)."""
        self.served = word_ids
        intervals = None
        if self.window is not None:
            bounds = self.window.intervals(word_ids)
            if bounds is not None:  # K x n x [low, high]; None where under two samples held it
                rounded = significant(torch.stack(bounds, dim=-1)).tolist()
                intervals = [
                    [[None if math.isnan(v) else v for v in pair] for pair in row]
                    for row in rounded
                ]
        k = word_ids.shape[0]
        fits = self.coherence is not None and len(self.coherence) == k
        return {
            "quality_docs": self.docs if fits else None,
            "topic_coherence": self.coherence if fits else None,
            "topic_drift": self.drift if fits else None,
            "topic_changed_at": self.changed_at if fits else None,
            "intervals": intervals,
        }


def significant(values: torch.Tensor, digits: int = INTERVAL_DIGITS) -> torch.Tensor:
    """``values`` rounded to ``digits`` significant digits: an interval needs no more, and
    their short JSON keeps the snapshot (rendered and parsed once a second) small."""
    values = values.to(torch.float64)
    magnitude = torch.floor(torch.log10(values.abs().clamp_min(1e-300)))
    scale = torch.pow(10.0, digits - 1 - magnitude)
    return torch.where(values == 0, values, torch.round(values * scale) / scale)
