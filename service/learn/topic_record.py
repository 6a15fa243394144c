"""The worker's record of its topics beside the chain: the stream's tally (word frequencies,
topic sizes, a document sample) and the articles behind each topic, fed by each fresh
minibatch's expectations, told of evaluations, and kept in checkpoints (:class:`Record`, the
worker's part: one :class:`TopicRecord` per learner, on the rank that publishes)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from lda.config import CHANGED_BITS
from service.learn.entry_ref import ArticleRef
from service.learn.events import (
    ArticlesListed,
    BatchLearned,
    Evaluated,
    Event,
    LabelsMoved,
    LearnerBegun,
    Part,
    TopicsReshaped,
    VocabularyChanged,
)
from service.learn.stream_tally import StreamTally
from service.learn.topic_articles import TopicArticles
from service.learn.topic_reshape import affected, destinations
from service.store.published_model import StreamFigures

if TYPE_CHECKING:
    from lda.model import StreamingLDA
    from lda.vocab import Vocabulary


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

    def moved(self, matched: Sequence[int]) -> None:
        """Labels moved (topic k is now what ``matched[k]`` was): articles and sizes follow."""
        self.articles.permute(matched)
        self.tally.permute(list(matched))

    def reshaped(self, event: TopicsReshaped) -> None:
        """Topics born, merged or retired: a merged-away topic's size, sampled shares and
        articles join the topic it went into; a retired or newborn one holds nothing."""
        dest = destinations(event, self.tally.topic_tokens.size)
        if affected(dest):
            self.articles.reshape(dest.tolist())
            self.tally.reshape(dest)

    def evaluated(self, docs_seen: int, topics: dict[str, Any]) -> None:
        """An evaluation's drift: topics that changed a lot forget articles learned before the
        evaluation ahead of this one (labels moved first: :meth:`moved`)."""
        drift = topics.get("drift")
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


class Record(Part):
    """The worker's topics' record, where it is on and this rank publishes: a
    :class:`TopicRecord` for each learner, fed by the loop's events."""

    key = "topics"
    handles = (
        LearnerBegun, BatchLearned, LabelsMoved, TopicsReshaped, Evaluated, VocabularyChanged
    )  # fmt: skip

    def __init__(self, config: RecordConfig) -> None:
        self.config = config
        self.now: TopicRecord | None = None

    def handle(self, event: Any) -> Iterable[Event]:
        match event:
            case LearnerBegun(model=model, vocab=vocab, extra=extra):
                self.now = TopicRecord(self.config, model.config.n_topics, len(vocab))
                if (state := extra.get(self.key)) is not None:  # None: it starts over
                    self.now.load_state_dict(state)
            case BatchLearned(words=words, counts=counts, refs=refs, docs_seen=docs):
                assert self.now is not None
                self.now.learned(words, counts, [ref.article for ref in refs], docs)
                return (ArticlesListed(frozenset(self.listed())),)
            case LabelsMoved() as moved if moved.moves and self.now is not None:
                self.now.moved(moved.matched)
            case TopicsReshaped() as reshaped if self.now is not None:
                self.now.reshaped(reshaped)
                return (ArticlesListed(frozenset(self.listed())),)
            case Evaluated(point=point) if self.now is not None:
                self.now.evaluated(point.docs_seen, point.topics)
            case VocabularyChanged(keep=keep, documents=documents):
                if self.now is not None and documents is not None:
                    self.now.remap_words(keep, documents)
        return ()

    def sizes(self) -> list[float] | None:
        return None if self.now is None else self.now.sizes()

    def listed(self) -> set[str]:
        """The ids of the articles listed behind the topics now."""
        return set() if self.now is None else {a[1] for a in self.now.articles.articles.values()}

    def published(
        self, model: StreamingLDA, vocab: Vocabulary, beta: torch.Tensor
    ) -> dict[str, Any]:
        """The stream's figures published with the model."""
        return {} if self.now is None else {"figures": self.now.figures()}

    def shown(self, model: StreamingLDA) -> dict[str, Any]:
        """The snapshot's fields of the record."""
        now = self.now
        if now is None:
            return {}
        listed = now.articles.listed(model.docs_seen)
        return {
            "topic_size": now.sizes(),
            "topic_articles": [[a.row() for a in t] for t in listed],
            "topic_article_bounds": [[a.sure() for a in t] for t in listed],
            "term_frequency": now.tally.term_frequency,
        }

    def state_dict(self) -> dict[str, Any] | None:
        return None if self.now is None else self.now.state_dict()
