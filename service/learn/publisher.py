"""What the worker shows the API: the model, snapshots, perplexity points and the heartbeat.

A :class:`Publisher` writes them on the rank that publishes (a lone worker, a group's rank 0),
for the worker's showing part (:mod:`service.learn.showing`; the other ranks have none).
Snapshots are throttled (see :meth:`Publisher.interval`): rendering the top words every
minibatch cost the worker and the API CPU.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import redis
import torch

from lda.config import CHANGED_BITS
from lda.model import StreamingLDA
from lda.relevance import SUGGESTED_LAMBDA, rerank, stream_marginal, suggested_names
from lda.topic_ids import saved
from lda.vocab import Vocabulary
from service.learn.evaluator import Scored
from service.learn.live_topics import LiveTopics, Shown
from service.learn.topic_watch import TopicWatch
from service.store.heartbeat import beat
from service.store.perplexity import PerplexityPoint, append_perplexity
from service.store.published_model import StreamFigures, publish_model
from service.store.redis_retry import RedisRetry
from service.store.search import IndexRows
from service.store.snapshot import Snapshot, publish_snapshot, ranked_words
from service.store.topic_history import HistoryPoint, append_topic_history
from service.store.topic_names import move_topic_names

log = logging.getLogger(__name__)

# Snapshots are spaced at least this many times the last one's cost: a large model's top words
# are a pass over the chain, and published every second they took a large share of the
# worker's time (docs/defaults.md, "Snapshots and the worker's priority").
PUBLISH_SHARE = 10
# ... but never further apart than this for that reason (a first snapshot that compiled its
# kernels took seconds, and must not hold the next one back for a minute).
PUBLISH_MAX_GAP_S = 10.0


@dataclass(frozen=True)
class PublishConfig:
    """How much a snapshot shows and how often: top words per topic, perplexity points kept,
    the least time between snapshots while training, points of the topics' history kept."""

    topic_words: int
    perplexity_history: int
    publish_every_s: float
    topic_history: int


@dataclass(frozen=True)
class WorkerStatus:
    """The worker's side of a snapshot, read when one is made."""

    docs_per_s: float
    tokens_per_s: float
    fresh_docs_per_s: float  # documents learned a second, wall time, fresh and revisited
    revisit_docs_per_s: float
    fresh_wait_s: float | None  # a fresh document's wait to be learned, median and 95th pct
    fresh_wait_p95_s: float | None
    reservoir_articles: int
    reservoir_passes: float
    rank_docs_per_s: list[float]
    counters: dict[str, int]
    idle_since: float | None
    checkpoint_at: float | None
    topic_size: list[float] | None = None  # each topic's share of the stream's tokens
    topic_articles: list[list[list[Any]]] | None = None  # rows of TopicArticle per topic
    topic_article_bounds: list[list[list[float]]] | None = None  # and how sure each share is
    term_frequency: np.ndarray | None = None  # (W,) the stream's word counts
    topic_seeds: list[list[str]] | None = None  # each topic's seed words


class Publisher:
    """Writes the keys the API reads (each in one atomic command; see service.store.snapshot)."""

    def __init__(
        self,
        client: redis.Redis,
        retry: RedisRetry,
        config: PublishConfig,
        watch: TopicWatch,
        device: str,
    ) -> None:
        self.client = client
        self.redis = retry
        self.config = config
        self.watch = watch  # per-topic coherence, drift and word intervals
        self.device = device
        self.model_published = False
        self.published_step = -1  # the chain's step at the last snapshot published
        self.published_quality: int | None = None  # its per-topic figures' evaluation
        self.published_at = -math.inf  # its time.monotonic()
        self.publish_cost_s = 0.0  # how long the last snapshot took to make and publish
        self.moves_shown: Shown | None = None  # the topic numbers' record last shown

    def trained(self, model: StreamingLDA) -> None:
        """The chain's sample after a step (the word intervals' window)."""
        self.watch.sample_from(model)

    def forget_samples(self) -> None:
        """The chain went back to a checkpoint: the samples since then are not its own."""
        self.watch.forget_samples()

    def vocabulary_changed(self) -> None:
        """The learner's words changed: what was kept in the old word ids goes."""
        self.watch.vocabulary_changed()

    def beat(self) -> None:
        self.redis("beating", functools.partial(beat, self.client))

    def model(
        self,
        model: StreamingLDA,
        vocab: Vocabulary,
        stream: StreamFigures | None = None,
        index: IndexRows | None = None,
        beta: torch.Tensor | None = None,
    ) -> None:
        """beta_mean (``beta``: as a float32 copy already made), the vocabulary and gamma, for
        /infer (with the ``stream``'s figures, for relevance and export, and the kept articles'
        shares, for search): the live slots only, each with its number."""
        served = model.beta_mean if beta is None else beta
        live, k = LiveTopics.of(model.topic_ids), model.topic_ids.n_slots
        # gamma: the live topics' learned gamma_k, or the symmetric scalar
        served, gamma = live.beta(served), live.gamma(model.gamma, k)
        stream, index = live.stream(stream), live.index(index, k)
        self.redis(
            "publishing the model",
            lambda: publish_model(
                self.client,
                served,
                vocab.words,
                docs_seen=model.docs_seen,
                gamma=gamma,
                stream=stream,
                vocab_version=vocab.version,
                index=index,
                topic_ids=live.ids,
            ),
        )
        self.model_published = True

    def model_due(self) -> bool:
        """True until a model has been published once by this process."""
        return not self.model_published

    def interval(self) -> float:
        """``publish_every_s``, or longer where a snapshot is costly (a large model's top words
        are a pass over K x W): publishing takes at most 1/PUBLISH_SHARE of the worker's time,
        the gap at most PUBLISH_MAX_GAP_S."""
        stretched = min(PUBLISH_SHARE * self.publish_cost_s, PUBLISH_MAX_GAP_S)
        return max(self.config.publish_every_s, stretched)

    def snapshot_due(self) -> bool:
        """After a step: True once the last snapshot is older than :meth:`interval`."""
        return time.monotonic() - self.published_at >= self.interval()

    def stale(self, model: StreamingLDA) -> bool:
        """True if the last snapshot is behind the model or its per-topic figures behind the
        latest evaluation."""
        return (self.published_step, self.published_quality) != (model.state.step, self.watch.docs)

    def snapshot(self, model: StreamingLDA, vocab: Vocabulary, now: WorkerStatus) -> None:
        """The top words of beta_mean and of the current sample, with the worker's figures."""
        started = time.perf_counter()
        # Ranked without forming K x W where the chain is lazy (model.top_words).
        served_ids, served_weights = model.top_words(self.config.topic_words)
        sample_ids, sample_weights = model.top_words(self.config.topic_words, "sample")
        snapshot = Snapshot(
            docs_seen=model.docs_seen,
            updated_at=time.time(),
            sampler=model.config.sampler,
            step_size=model.step_size,
            device=self.device,
            vocab_size=len(vocab),
            vocab_version=vocab.version,
            topic_seeds=now.topic_seeds,
            topics=ranked_words((served_weights, served_ids), vocab.words),
            sample_topics=ranked_words((sample_weights, sample_ids), vocab.words),
            docs_per_s=now.docs_per_s,
            tokens_per_s=now.tokens_per_s,
            fresh_docs_per_s=now.fresh_docs_per_s,
            revisit_docs_per_s=now.revisit_docs_per_s,
            fresh_wait_s=now.fresh_wait_s,
            fresh_wait_p95_s=now.fresh_wait_p95_s,
            reservoir_articles=now.reservoir_articles,
            reservoir_passes=now.reservoir_passes,
            counters=now.counters,
            rank_docs_per_s=now.rank_docs_per_s,
            idle_since=now.idle_since,
            checkpoint_at=now.checkpoint_at,
            topic_size=now.topic_size,
            topic_articles=now.topic_articles,
            topic_article_bounds=now.topic_article_bounds,
            topic_suggested=suggested_names_of(
                served_ids, served_weights, now.term_frequency, vocab
            ),
            **self.watch.fields(served_ids),
        )
        # the live topics, and the record of their numbers when it changed
        live = LiveTopics.of(model.topic_ids)
        snapshot = live.snapshot(snapshot)
        shown, moves = live.moves(model.topic_ids, self.moves_shown)
        self.redis(
            "publishing the snapshot",
            functools.partial(publish_snapshot, self.client, snapshot, moves),
        )
        self.moves_shown = shown
        self.published_step, self.published_at = model.state.step, time.monotonic()
        self.published_quality = self.watch.docs
        self.publish_cost_s = time.perf_counter() - started

    def point(self, scored: Scored, vocab_version: int) -> bool:
        """A scored evaluation: its per-topic figures, and its perplexity point (measured on
        vocabulary ``vocab_version``) unless it is non-finite (never published); True if the
        point was published."""
        # Before the finiteness check: the scoring process matched this beta's topics to the
        # previous one's whatever its perplexity.
        self.watch.scored(scored.docs_seen, scored.topics)
        if not (math.isfinite(scored.perplexity) and math.isfinite(scored.averaged)):
            log.warning("non-finite perplexity at %d documents: not published", scored.docs_seen)
            return False
        point = PerplexityPoint(
            scored.docs_seen,
            scored.perplexity,
            scored.averaged,
            time.time(),
            _finite_or_none(scored.coherence),
            scored.diversity,
            vocab_version,
        )
        keep = self.config.perplexity_history
        self.redis("appending perplexity", lambda: append_perplexity(self.client, point, keep=keep))
        return True

    def move_names(self, matched: list[int], since: int) -> None:
        """Names follow labels that moved: topic k is now what topic ``matched[k]`` was."""
        self.redis("moving topic names", lambda: move_topic_names(self.client, matched, since))

    def topics_scored(
        self,
        scored: Scored,
        vocab: Vocabulary,
        sizes: list[float] | None,
        live: LiveTopics,
    ) -> None:
        """An evaluation's point of every topic's history (names moved first: move_names), of
        the ``live`` topics, each with its number."""
        topics = scored.topics
        ids = topics.get("words")
        coherence = topics.get("coherence")
        if ids is None or coherence is None:
            return  # a scorer from before top words: no point
        drift = topics.get("drift") or [None] * len(ids)
        ids, coherence, drift = live.rows(ids), live.rows(coherence), live.rows(drift)
        sizes = live.rows(sizes)
        if ids is None or coherence is None or drift is None:
            return  # scored before the slots changed: not the live topics' figures
        point = HistoryPoint(
            docs_seen=scored.docs_seen,
            at=time.time(),
            size=list(sizes) if sizes else [None] * len(ids),
            coherence=list(coherence),
            drift=list(drift),
            changed=[d is not None and d > CHANGED_BITS for d in drift],
            words=[[vocab.words[i] for i in row] for row in ids],
            matched=live.moved_labels(topics.get("matched")),
            ids=saved(live.ids),
        )
        keep = self.config.topic_history
        self.redis(
            "appending the topics' history",
            lambda: append_topic_history(self.client, point, keep=keep),
        )


def suggested_names_of(
    ids: torch.Tensor, weights: torch.Tensor, term_frequency: np.ndarray | None, vocab: Vocabulary
) -> list[str] | None:
    """Each topic's suggested name: its first words by relevance at SUGGESTED_LAMBDA among the
    words the snapshot carries (its most probable), so it costs K x topic_words; None without
    the stream's word counts."""
    if term_frequency is None or float(term_frequency.sum()) <= 0:
        return None
    p = stream_marginal(term_frequency)
    ranked = rerank(ids.cpu().numpy(), weights.cpu().double().numpy(), p, SUGGESTED_LAMBDA)
    return suggested_names(ranked, vocab.words)


def _finite_or_none(value: float) -> float | None:
    """Coherence is NaN without held-out documents: JSON and the API carry null instead."""
    return value if math.isfinite(value) else None
