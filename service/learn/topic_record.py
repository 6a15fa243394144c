"""The worker's record of its topics beside the chain: the stream's tally (word frequencies,
topic sizes, a document sample) and the articles behind each topic, fed by each fresh
minibatch's expectations, told of evaluations, and kept in checkpoints (:class:`Record`, the
worker's part: one :class:`TopicRecord` per learner, on the rank that publishes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lda.config import CHANGED_BITS
from service.learn.stream_tally import StreamTally
from service.learn.topic_articles import TopicArticles
from service.store.published_model import StreamFigures

ArticleRef = tuple[str, str, str]  # (title, article id, source)


@dataclass(frozen=True)
class EntryRef:
    """A stream entry's article without its text: what the worker's session carries for each
    document, from its placement to the step that learns it."""

    entry: str  # the stream entry, acknowledged after the checkpoint that holds its effect
    title: str
    id: str  # the page id
    source: str

    @property
    def article(self) -> ArticleRef:
        return self.title, self.id, self.source


@dataclass(frozen=True)
class RecordConfig:
    """Articles kept per topic (0: none), the documents over which an article's share and a
    topic's size count half, and the learned documents sampled for export."""

    topic_articles: int
    topic_half_life: int
    export_docs: int
    seed: int


class TopicRecord:
    """Sizes, articles and the stream's tally of one learner (K topics, W words)."""

    def __init__(self, config: RecordConfig, n_topics: int, n_words: int) -> None:
        self.tally = StreamTally(
            n_topics, n_words, config.export_docs, config.topic_half_life, config.seed
        )
        self.articles = TopicArticles(n_topics, config.topic_articles, config.topic_half_life)
        self.evaluated_at: int | None = None  # documents seen at the last evaluation

    def learned(
        self,
        words: torch.Tensor,
        counts: torch.Tensor,
        articles: Sequence[ArticleRef],
        docs_seen: int,
    ) -> None:
        """A fresh minibatch learned: its tokens' word ids, its documents' E[n_dk] (n, K) and
        each document's article, the stream at ``docs_seen`` documents after it."""
        self.tally.learned(words, counts)
        self.articles.offer(counts, articles, docs_seen)

    def evaluated(self, docs_seen: int, topics: dict[str, Any]) -> None:
        """An evaluation's per-topic figures (drift and matching): labels that moved take
        their articles and sizes along; topics that changed a lot forget articles learned
        before the evaluation ahead of this one."""
        matched, drift = topics.get("matched"), topics.get("drift")
        if matched is not None and any(int(m) != k for k, m in enumerate(matched)):
            self.articles.permute(matched)
            self.tally.permute(list(matched))
        if drift is not None and self.evaluated_at is not None:
            self.articles.changed([d > CHANGED_BITS for d in drift], self.evaluated_at)
        self.evaluated_at = docs_seen

    def remap_words(self, keep: torch.Tensor, documents: np.ndarray) -> None:
        """The vocabulary changed: new word j is old word ``keep[j]`` (-1: it entered), in
        ``documents[j]`` of the stream's documents."""
        self.tally.remap_words(keep.cpu().numpy(), documents)

    def sizes(self) -> list[float]:
        return [round(float(s), 6) for s in self.tally.topic_size]

    def article_rows(self, docs_seen: int) -> list[list[list[Any]]]:
        return self.articles.rows(docs_seen)

    def figures(self) -> StreamFigures:
        return self.tally.figures()

    def state_dict(self) -> dict[str, Any]:
        return {
            "tally": self.tally.state_dict(),
            "articles": self.articles.state_dict(),
            "evaluated_at": self.evaluated_at,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.tally.load_state_dict(state["tally"])
        self.articles.load_state_dict(state["articles"])
        self.evaluated_at = state.get("evaluated_at")


class Record:
    """The worker's topics' record: a :class:`TopicRecord` for each learner where the record is
    on and this rank publishes (else none, and every call does nothing)."""

    key = "topics"

    def __init__(self, config: RecordConfig | None, leads: bool) -> None:
        self.config = config if leads else None
        self.now: TopicRecord | None = None

    @property
    def on(self) -> bool:
        """Whether steps should hand in their documents' topics."""
        return self.now is not None

    def begin(self, n_topics: int, n_words: int) -> None:
        """A new record for a learner of K topics and W words (its state follows)."""
        if self.config is not None:
            self.now = TopicRecord(self.config, n_topics, n_words)

    def learned(
        self, words: torch.Tensor, counts: torch.Tensor, refs: Sequence[EntryRef], docs_seen: int
    ) -> None:
        """A fresh minibatch learned (see :meth:`TopicRecord.learned`)."""
        if self.now is not None:
            self.now.learned(words, counts, [ref.article for ref in refs], docs_seen)

    def evaluated(self, docs_seen: int, topics: dict[str, Any]) -> None:
        if self.now is not None:
            self.now.evaluated(docs_seen, topics)

    def remap_words(self, keep: torch.Tensor, documents: np.ndarray | None) -> None:
        if self.now is not None and documents is not None:
            self.now.remap_words(keep, documents)

    def sizes(self) -> list[float] | None:
        return None if self.now is None else self.now.sizes()

    def listed(self) -> set[str]:
        """The ids of the articles listed behind the topics now."""
        return set() if self.now is None else {a[1] for a in self.now.articles.articles.values()}

    def figures(self) -> StreamFigures | None:
        """The stream's figures published with the model (None without a record)."""
        return None if self.now is None else self.now.figures()

    def shown(self, docs_seen: int) -> dict[str, Any]:
        """The snapshot's fields of the record (None each without one)."""
        now = self.now
        listed = None if now is None else now.articles.listed(docs_seen)
        return {
            "topic_size": None if now is None else now.sizes(),
            "topic_articles": None if listed is None else [[a.row() for a in t] for t in listed],
            "topic_article_bounds": None
            if listed is None
            else [[a.sure() for a in t] for t in listed],
            "term_frequency": None if now is None else now.tally.term_frequency,
        }

    def state_dict(self) -> dict[str, Any] | None:
        return None if self.now is None else self.now.state_dict()

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """A checkpoint's record (None: it starts over)."""
        if self.now is not None and state is not None:
            self.now.load_state_dict(state)
