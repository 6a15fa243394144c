"""The vocabulary that follows the stream, as the worker's part: counting, choosing, and what
follows a change (docs/model.md, "When the vocabulary changes").

The session counts the stream's words where refreshes are decided (the deciding rank, without a
vocabulary file) and, at each multiple of ``vocab_refresh`` documents learned, this part asks it
for the words its counts now rank first. When they differ: the loop scores the betas handed off
first, in the words they were learned in (those still waiting are skipped, counted); then the
learner, the minibatch in hand and the held-out set move to the new words, and the loop
announces the change (:class:`~service.learn.events.VocabularyChanged`): the topics' record
follows, scoring starts over on the re-encoded held-out set, and the next plan checkpoints (a
group's other ranks get the model with it). The stream's counts are kept in checkpoints
(``word_counts``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from typing import Any

from service.learn.events import Event, LearnerBegun, Part, VocabularyChanged
from service.learn.session import LearningSession

log = logging.getLogger(__name__)


class VocabularyRefresh(Part):
    """Moves the learner to the stream's words when they change; says when to checkpoint it."""

    key = "word_counts"
    handles = (LearnerBegun,)

    def __init__(self, session: LearningSession[Any], counters: Counter[str]) -> None:
        self.session = session
        self.counters = counters
        self.unsaved = False  # the words changed since the last plan: the next one checkpoints

    def handle(self, event: Any) -> Iterable[Event]:
        """A learner begun: the stream's counts go on from its checkpoint's."""
        if isinstance(event, LearnerBegun):
            self.load_state_dict(event.extra.get(self.key))
        return ()

    def next_words(self) -> list[str] | None:
        """The words the stream's counts now rank first, if a refresh is due and they differ
        (None: no change); the loop scores the betas handed off, then :meth:`move`s."""
        if not self.session.refresh_due():  # only where words are counted: the deciding rank
            return None
        return self.session.next_words()

    def move(self, words: list[str]) -> VocabularyChanged:
        """Move the learner, the minibatch in hand and the held-out set to ``words``; what
        changed, for every part (the next plan checkpoints)."""
        session = self.session
        old = session.vocabulary
        keep = session.refresh(words)
        model, vocab, counts = session.model, session.vocabulary, session.word_counts
        assert keep is not None and model is not None and vocab is not None and old is not None
        self.counters["vocab_refreshes"] += 1
        self.unsaved = True
        entered = int((keep < 0).sum())
        log.info(
            "vocabulary %d at %d documents: %d words entered, %d left, %d stayed",
            vocab.version,
            model.docs_seen,
            entered,
            len(old) - (len(vocab) - entered),
            len(vocab) - entered,
        )
        return VocabularyChanged(keep, None if counts is None else counts.known)

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
