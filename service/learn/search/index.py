"""The kept articles' topic shares, for search (docs/topics.md, "Searching the kept articles").

One row per reservoir slot (the article in it, its largest shares, its length and when they were
computed), and a row for each article the topics' record lists that no slot holds. A row's
shares come first from the learner's own Gibbs expectations, when the article is learned fresh
and each time a revisit draws it; then a thread refolds them, stalest first, with ``/infer``'s
fixed point under the model the worker published last (:mod:`service.learn.search.refold`), so
that rows and queries are measured alike and stay current. Labels that move take the rows' topic
ids along; a change of vocabulary needs nothing here (the text is kept, and encoded in the words
of the day). The worker publishes the rows with the model (:mod:`service.store.search`).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import torch

from lda.search import SHARES_KEPT, top_shares
from service.learn.entry_ref import ArticleRef, EntryRef
from service.store.search import IndexRows

Row = tuple[ArticleRef, np.ndarray, np.ndarray, float, int]  # ref, topics, shares, tokens, at
Due = list[tuple[int, ArticleRef]]  # (slot, the article in it) to refold


class ArticleIndex:
    """Rows for ``capacity`` reservoir slots and the record's articles, K topics each; safe to
    share with the refolding thread (one lock)."""

    def __init__(self, capacity: int, n_topics: int, keep: int = SHARES_KEPT) -> None:
        self.n_topics = n_topics
        self.keep = min(keep, n_topics)
        self.topics = np.full((capacity, self.keep), -1, dtype=np.int16)
        self.shares = np.zeros((capacity, self.keep), dtype=np.float32)
        self.tokens = np.zeros(capacity, dtype=np.float32)  # 0: no shares yet
        self.at = np.zeros(capacity, dtype=np.int64)  # documents seen when they were computed
        self.folded = np.zeros(capacity, dtype=np.bool_)  # by the fixed point (else by Gibbs)
        self.refs: list[ArticleRef | None] = [None] * capacity
        self.held = np.zeros(capacity, dtype=np.bool_)  # refs[slot] is not None
        self.placed_in: dict[str, int] = {}  # entry -> its slot, until the step that learns it
        self.listed: dict[str, Row] = {}  # article id -> row, for the record's other articles
        # Documents seen at the evaluation whose matching last moved labels: rows computed before
        # it are in the old labels (moved then), a refold under a model before it is dropped.
        self.moved_at = -1
        self.lock = threading.Lock()

    def placed(self, ref: EntryRef, slot: int | None) -> None:
        """An article went to reservoir slot ``slot`` (None: it was not kept); its shares come
        with the step that learns it."""
        if slot is None:
            return
        with self.lock:
            self.refs[slot], self.held[slot] = ref.article, True
            self.topics[slot], self.shares[slot], self.tokens[slot] = -1, 0.0, 0.0
            self.folded[slot] = False
        self.placed_in[ref.entry] = slot
        if len(self.placed_in) > len(self.refs):  # entries never learned (a change of words)
            del self.placed_in[next(iter(self.placed_in))]

    def learned(
        self,
        refs: Sequence[EntryRef],
        counts: torch.Tensor,
        docs_seen: int,
        listed: Collection[str] = (),
    ) -> None:
        """A fresh minibatch: each document's E[n_dk] (n, K) into its slot, and into a row of
        its own if the record lists it (``listed``: the ids the record lists now)."""
        topics, shares, tokens = top_shares(counts.cpu().numpy(), self.keep)
        with self.lock:
            for i, ref in enumerate(refs):
                slot = self.placed_in.pop(ref.entry, None)
                if slot is not None and self.refs[slot] == ref.article:
                    self._set(slot, topics[i], shares[i], float(tokens[i]), docs_seen, False)
                if ref.id in listed:
                    row = (ref.article, topics[i], shares[i], float(tokens[i]), docs_seen)
                    self.listed[ref.id] = row
            for gone in self.listed.keys() - set(listed):
                del self.listed[gone]

    def revisited(self, slots: Sequence[int], counts: torch.Tensor, docs_seen: int) -> None:
        """A revisit's documents, drawn from ``slots``, under the model of today (a row the
        thread refolded keeps its fixed point's shares: they are measured as queries are)."""
        topics, shares, tokens = top_shares(counts.cpu().numpy(), self.keep)
        with self.lock:
            for i, slot in enumerate(slots):
                if not self.folded[slot]:
                    self._set(slot, topics[i], shares[i], float(tokens[i]), docs_seen, False)

    def due(self, most: int, docs_seen: int) -> Due:
        """Up to ``most`` slots to refold under a model of ``docs_seen`` documents: those never
        refolded (oldest first; a slot whose article was placed but not learned before a
        restart among them), then those refolded under an older model (stalest first)."""
        with self.lock:
            stale = self.held & (~self.folded | (self.at < docs_seen))
            slots = np.flatnonzero(stale)
            if slots.size > most:
                key = self.folded[slots].astype(np.int64) * (1 << 62) + self.at[slots]
                slots = slots[np.argpartition(key, most - 1)[:most]]
            return [(s, ref) for s in slots.tolist() if (ref := self.refs[s]) is not None]

    def refolded(self, due: Due, pi: np.ndarray, tokens: np.ndarray, at: int) -> int:
        """The fixed point's proportions (n, K) of ``due``'s articles (``tokens``: their
        lengths; 0 for one whose text is gone or has no word of the model's vocabulary, which
        keeps its row and waits for the next model), under a model of ``at`` documents. A slot
        whose article changed meanwhile is left alone, and so is everything if labels moved
        after that model. Returns the rows written."""
        topics, shares, _ = top_shares(pi, self.keep)
        written = 0
        with self.lock:
            if at < self.moved_at:
                return 0
            for i, (slot, ref) in enumerate(due):
                if self.refs[slot] != ref:
                    continue
                if tokens[i] > 0:
                    self._set(slot, topics[i], shares[i], float(tokens[i]), at, True)
                    written += 1
                else:
                    self.folded[slot], self.at[slot] = True, at
        return written

    def _set(
        self,
        slot: int,
        topics: np.ndarray,
        shares: np.ndarray,
        tokens: float,
        at: int,
        folded: bool,
    ) -> None:
        self.topics[slot], self.shares[slot] = topics, shares
        self.tokens[slot], self.at[slot], self.folded[slot] = tokens, at, folded

    def permute(self, matched: Sequence[int], since: int) -> None:
        """Topic k of the model evaluated at ``since`` documents is what topic ``matched[k]``
        was (the drift matching moved labels): rows computed before it move along, those
        computed under it or after it are in its labels already."""
        new = np.empty(self.n_topics, dtype=np.int16)
        new[np.asarray(matched, dtype=np.int64)] = np.arange(self.n_topics, dtype=np.int16)

        def moved(topics: np.ndarray) -> np.ndarray:
            return np.where(topics >= 0, new[np.maximum(topics, 0)], -1).astype(np.int16)

        with self.lock:
            self.moved_at = max(self.moved_at, since)
            before = self.at < since
            self.topics[before] = moved(self.topics[before])
            self.listed = {
                key: (ref, moved(t) if at < since else t, s, n, at)
                for key, (ref, t, s, n, at) in self.listed.items()
            }

    def reshape(self, dest: np.ndarray, at: int) -> None:
        """Topics merged or dropped at ``at`` documents seen (``dest``: per topic, where its
        shares go; -1: dropped, see :mod:`service.learn.topic_reshape`): every row was computed
        under the topics before, so every row follows (a merged-away topic's share adds into
        the kept one's, a dropped one's is gone), and a refold under a model of then is
        dropped."""
        with self.lock:
            self.moved_at = max(self.moved_at, at + 1)
            self.topics, self.shares = _reshaped(self.topics, self.shares, dest)
            for key, (ref, t, s, n, when) in self.listed.items():
                topics, shares = _reshaped(t[None], s[None], dest)
                self.listed[key] = (ref, topics[0], shares[0], n, when)

    def rows(self) -> IndexRows:
        """Every row with shares: the slots', then the listed articles no slot holds."""
        with self.lock:
            filled = np.flatnonzero(self.tokens > 0)
            refs = [self.refs[s] for s in filled.tolist()]
            held = {ref[1] for ref in refs if ref is not None}
            extra = [row for key, row in self.listed.items() if key not in held]
            return IndexRows(
                refs=[ref for ref in refs if ref is not None] + [row[0] for row in extra],
                topics=np.concatenate([self.topics[filled], *[r[1][None] for r in extra]]),
                shares=np.concatenate([self.shares[filled], *[r[2][None] for r in extra]]),
                tokens=np.concatenate([self.tokens[filled], [r[3] for r in extra]]).astype(
                    np.float32
                ),
                at=np.concatenate([self.at[filled], [r[4] for r in extra]]).astype(np.int64),
                n_topics=self.n_topics,
            )

    def state_dict(self) -> dict[str, Any]:
        """The rows as tensors and lists (what a checkpoint loads safely)."""
        with self.lock:
            return {
                "n_topics": self.n_topics,
                "topics": torch.from_numpy(self.topics.copy()),
                "shares": torch.from_numpy(self.shares.copy()),
                "tokens": torch.from_numpy(self.tokens.copy()),
                "at": torch.from_numpy(self.at.copy()),
                "folded": torch.from_numpy(self.folded.copy()),
                "moved_at": self.moved_at,
                "refs": [None if r is None else list(r) for r in self.refs],
                "listed": {
                    key: [list(ref), t.tolist(), s.tolist(), tokens, at]
                    for key, (ref, t, s, tokens, at) in self.listed.items()
                },
            }

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """A checkpoint's rows; none, or of another K, leaves the index empty (revisits and the
        stream fill it again). A smaller reservoir keeps its first slots, as the reservoir
        does."""
        if state is None or int(state["n_topics"]) != self.n_topics:
            return
        keep = min(self.keep, state["topics"].shape[1])
        n = min(len(self.refs), len(state["refs"]))
        with self.lock:
            self.topics[:n, :keep] = state["topics"][:n, :keep].numpy()
            self.shares[:n, :keep] = state["shares"][:n, :keep].numpy()
            self.tokens[:n] = state["tokens"][:n].numpy()
            self.at[:n] = state["at"][:n].numpy()
            self.folded[:n] = state["folded"][:n].numpy()
            self.moved_at = int(state["moved_at"])
            self.refs[:n] = [None if r is None else _ref(r) for r in state["refs"][:n]]
            self.held[:n] = [r is not None for r in self.refs[:n]]
            self.listed = {
                key: (_ref(ref), np.asarray(t, np.int16), np.asarray(s, np.float32), tokens, at)
                for key, (ref, t, s, tokens, at) in state["listed"].items()
            }


def _ref(row: Sequence[Any]) -> ArticleRef:
    title, article_id, source = row
    return str(title), str(article_id), str(source)


def _reshaped(
    topics: np.ndarray, shares: np.ndarray, dest: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Rows' largest shares with each topic sent to ``dest`` (-1: dropped): shares that land on
    one topic are added, then sorted again as :func:`lda.search.top_shares` sorts them (largest
    first, ties by topic id, the empty ones last as -1)."""
    mapped = np.where(topics >= 0, dest[np.maximum(topics, 0)], -1)
    shares = np.where(mapped >= 0, shares, 0).astype(np.float32)
    width = mapped.shape[1]
    for a in range(width):
        for b in range(a + 1, width):
            same = (mapped[:, a] >= 0) & (mapped[:, a] == mapped[:, b])
            if same.any():
                shares[same, a] += shares[same, b]
                mapped[same, b], shares[same, b] = -1, 0.0
    key = np.where(mapped >= 0, mapped, np.iinfo(np.int64).max)
    order = np.lexsort((key, -shares), axis=1)
    mapped = np.take_along_axis(mapped, order, axis=1)
    shares = np.take_along_axis(shares, order, axis=1)
    mapped = np.where(shares > 0, mapped, -1).astype(np.int16)
    return mapped, shares
