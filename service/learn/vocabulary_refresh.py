"""The vocabulary that follows the stream, as the worker's part: counting, choosing, and what
follows a change (docs/model.md, "When the vocabulary changes").

The session counts the stream's words where refreshes are decided (the deciding rank, without a
vocabulary file) and, at each multiple of ``vocab_refresh`` documents learned, this part asks it
for the words its counts now rank first. When they differ: the betas handed off are scored
first, in the words they were learned in (those still waiting are skipped, counted); then the
learner, the minibatch in hand and the held-out set move to the new words, the topics' record
follows, scoring starts over on the re-encoded held-out set, and the next plan checkpoints (a
group's other ranks get the model with it). The stream's counts are kept in checkpoints
(``word_counts``).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from service.learn.coordinator import Coordinator
from service.learn.scoring import Scoring
from service.learn.session import LearningSession
from service.learn.topic_record import Record

log = logging.getLogger(__name__)


class VocabularyRefresh:
    """Moves the learner to the stream's words when they change; says when to checkpoint it."""

    key = "word_counts"

    def __init__(
        self,
        session: LearningSession[Any],
        scoring: Scoring,
        record: Record,
        coordinator: Coordinator,
        counters: Counter[str],
    ) -> None:
        self.session = session
        self.scoring = scoring
        self.record = record
        self.coordinator = coordinator
        self.counters = counters
        self.unsaved = False  # the words changed since the last plan: the next one checkpoints

    def refresh(self) -> bool:
        """Move to the words the stream's counts now rank first, if a refresh is due and they
        changed; True if they did (the caller publishes the new model at once)."""
        session = self.session
        if not session.refresh_due():  # only where words are counted: the deciding rank
            return False
        words = session.next_words()
        if words is None:
            return False
        self.scoring.finish()
        old = session.vocabulary
        keep = session.refresh(words)
        model, vocab, counts = session.model, session.vocabulary, session.word_counts
        assert keep is not None and model is not None and vocab is not None and old is not None
        self.counters["vocab_refreshes"] += 1
        self.record.remap_words(keep, None if counts is None else counts.known)
        self.coordinator.model_changed()
        self.unsaved = True
        self.scoring.restart()
        if session.heldout is not None:
            self.scoring.heldout(session.heldout_docs)
        entered = int((keep < 0).sum())
        log.info(
            "vocabulary %d at %d documents: %d words entered, %d left, %d stayed",
            vocab.version,
            model.docs_seen,
            entered,
            len(old) - (len(vocab) - entered),
            len(vocab) - entered,
        )
        return True

    def checkpoint_due(self) -> bool:
        """True once after each change of words: it is persisted before anything else."""
        due, self.unsaved = self.unsaved, False
        return due

    def state_dict(self) -> dict[str, Any] | None:
        """The stream's word counts (None where words are not counted)."""
        return self.session.counts_state()

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """A checkpoint's word counts (None: counting goes on as it is, or starts over)."""
        self.session.load_counts_state(state)
