"""The worker's search part: an :class:`~service.learn.article_index.ArticleIndex` of the kept
articles for each learner, and its refolding thread, where the reservoir is on and this rank
publishes (else none, and every call does nothing); docs/topics.md, "Searching the kept
articles"."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import torch

from lda.model import StreamingLDA
from lda.vocab import Vocabulary
from service.learn.article_index import ArticleIndex
from service.learn.share_refresh import ShareRefresh
from service.learn.topic_record import EntryRef
from service.store.article_index import IndexRows

Texts = Callable[[list[int]], dict[int, str]]  # the reservoir's texts of some slots


class Search:
    """The kept articles' shares, kept current and published with the model."""

    key = "search"  # its state in a checkpoint's extra

    def __init__(
        self, capacity: int | None, texts: Texts | None, share: float, leads: bool
    ) -> None:
        """``capacity``: the reservoir's (0: none, the record's articles only; None: search
        off); ``texts``: its texts by slot; ``share``: of a core the refolding thread takes at
        most (0: none)."""
        self.capacity = capacity if leads else None
        self.texts = texts
        self.share = share
        self.now: ArticleIndex | None = None
        self.refresh: ShareRefresh | None = None
        self.resumed = False  # a checkpoint's rows are loaded once a process

    @property
    def on(self) -> bool:
        """Whether steps should hand in their documents' topics."""
        return self.now is not None

    def begin(self, n_topics: int) -> None:
        """An empty index for a learner of K topics (its state follows), or the one in hand
        for one of the same K: a restore goes back to a checkpoint, but the reservoir's slots
        stay as they are, and the rows must match them."""
        if self.capacity is None or (self.now is not None and self.now.n_topics == n_topics):
            return
        self.now = ArticleIndex(self.capacity, n_topics)
        if self.texts is not None and self.capacity:
            self.close()
            self.refresh = ShareRefresh(self.now, self.texts, self.share)

    def placed(self, ref: EntryRef, slot: int | None) -> None:
        if self.now is not None:
            self.now.placed(ref, slot)

    def learned(
        self,
        refs: Sequence[EntryRef],
        counts: torch.Tensor,
        docs_seen: int,
        listed: Collection[str],
    ) -> None:
        if self.now is not None:
            self.now.learned(refs, counts, docs_seen, listed)

    def revisited(self, slots: Sequence[int], counts: torch.Tensor, docs_seen: int) -> None:
        if self.now is not None and counts.shape[0] == len(slots):
            self.now.revisited(slots, counts, docs_seen)

    def moved(self, matched: Sequence[int], since: int) -> None:
        """The drift matching of the model evaluated at ``since`` documents: the rows' topic
        ids follow any label that moved."""
        if self.now is not None and any(int(m) != k for k, m in enumerate(matched)):
            self.now.permute(matched, since)

    def rows(self, model: StreamingLDA, vocab: Vocabulary, beta: torch.Tensor) -> IndexRows | None:
        """The rows to publish with ``model``, whose float32 beta_mean (K x W, the thread's to
        keep) the thread refolds them under from now."""
        if self.now is None:
            return None
        if self.refresh is not None:
            gamma = model.config.gamma
            assert gamma is not None
            self.refresh.model(beta, vocab, gamma, model.docs_seen)
            self.refresh.start()
        return self.now.rows()

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
