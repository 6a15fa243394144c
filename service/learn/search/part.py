"""The worker's search part: an :class:`~service.learn.search.index.ArticleIndex` of the kept
articles for each learner, and its refolding thread, on the rank that publishes where search is
on (else the part is absent); docs/topics.md, "Searching the kept articles"."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from lda.model import StreamingLDA
from lda.vocab import Vocabulary
from service.learn.events import (
    ArticleKept,
    ArticlesListed,
    BatchLearned,
    Event,
    LabelsMoved,
    LearnerBegun,
    Part,
    Revisited,
    Stopped,
    TopicsReshaped,
)
from service.learn.reservoir import Reservoir
from service.learn.search.index import ArticleIndex
from service.learn.search.refold import ShareRefresh
from service.learn.topic_reshape import affected, destinations

Texts = Callable[[list[int]], dict[int, str]]  # the reservoir's texts of some slots


class Search(Part):
    """The kept articles' shares, kept current and published with the model (on the rank that
    publishes, where search is on)."""

    key = "search"  # its state in a checkpoint's extra
    handles = (
        LearnerBegun, ArticleKept, ArticlesListed, BatchLearned, Revisited, LabelsMoved,
        TopicsReshaped, Stopped,
    )  # fmt: skip

    def __init__(self, reservoir: Reservoir | None, share: float) -> None:
        """``reservoir``: the kept articles, their texts by slot (None: the record's articles
        only); ``share``: of a core the refolding thread takes at most (0: none)."""
        self.capacity = 0 if reservoir is None else reservoir.capacity
        self.texts: Texts | None = None if reservoir is None else reservoir.read
        self.share = share
        self.now: ArticleIndex | None = None
        self.refresh: ShareRefresh | None = None
        self.resumed = False  # a checkpoint's rows are loaded once a process
        self.listed: frozenset[str] = frozenset()  # the record's articles, as it last said

    def handle(self, event: Any) -> Iterable[Event]:
        now = self.now
        match event:
            case LearnerBegun(model=model, extra=extra):
                self.begin(model.config.n_topics)
                self.load_state_dict(extra.get(self.key))
            case ArticleKept(ref=ref, slot=slot) if now is not None:
                now.placed(ref, slot)
            case ArticlesListed(ids=ids):
                self.listed = ids
            case BatchLearned(refs=refs, counts=counts, docs_seen=docs) if now is not None:
                now.learned(refs, counts, docs, self.listed)
            case Revisited(slots=slots, counts=counts, docs_seen=docs) if now is not None:
                if counts.shape[0] == len(slots):
                    now.revisited(slots, counts, docs)
            case LabelsMoved(matched=matched, since=since) as moved if now is not None:
                if moved.moves:
                    now.permute(matched, since)
            case TopicsReshaped() as reshaped if now is not None:
                # At the documents seen when the moves were made: every row is older.
                dest = destinations(reshaped, now.n_topics)
                if affected(dest):
                    now.reshape(dest, max((m.docs for m in reshaped.moves), default=-1))
            case Stopped():
                self.close()
        return ()

    def begin(self, n_topics: int) -> None:
        """An empty index for a learner of K topics (its state follows), or the one in hand
        for one of the same K: a restore goes back to a checkpoint, but the reservoir's slots
        stay as they are, and the rows must match them."""
        if self.now is not None and self.now.n_topics == n_topics:
            return
        self.now = ArticleIndex(self.capacity, n_topics)
        if self.texts is not None and self.capacity:
            self.close()
            self.refresh = ShareRefresh(self.now, self.texts, self.share)

    def published(
        self, model: StreamingLDA, vocab: Vocabulary, beta: torch.Tensor
    ) -> dict[str, Any]:
        """The rows to publish with ``model``, whose float32 beta_mean (K x W, the thread's to
        keep) the thread refolds them under from now."""
        if self.now is None:
            return {}
        if self.refresh is not None:
            self.refresh.model(beta, vocab, model.gamma, model.docs_seen)
            self.refresh.start()
        return {"rows": self.now.rows()}

    def close(self) -> None:
        """Stop the refolding thread (the rows stay)."""
        if self.refresh is not None:
            self.refresh.close()
            self.refresh = None

    def state_dict(self) -> dict[str, Any] | None:
        return None if self.now is None else self.now.state_dict()

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """A checkpoint's rows, when this process resumes (a restore keeps the rows in hand,
        which match the reservoir's slots)."""
        if self.now is not None and not self.resumed:
            self.now.load_state_dict(state)
            self.resumed = True
