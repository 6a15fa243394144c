"""What the worker shows: the model (with the stream's figures and the kept articles' shares),
snapshots with every part's figures, scored points, and the heartbeat, all through its
:class:`~service.learn.publisher.Outlet` (nothing on a group's ranks that do not publish)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

from lda.model import StreamingLDA
from service.learn.checkpointer import Checkpointer
from service.learn.coordinator import Coordinator
from service.learn.evaluator import Scored
from service.learn.publisher import Outlet, WorkerStatus
from service.learn.recent_rates import RecentRates
from service.learn.revisits import Revisits
from service.learn.scoring import Scoring
from service.learn.search import Search
from service.learn.seeds import Seeds
from service.learn.session import LearningSession
from service.learn.topic_record import EntryRef, Record
from service.learn.worker_parts import Counters
from service.store.redis_retry import RedisRetry

log = logging.getLogger(__name__)


@dataclass
class Showing:
    """The worker's outlet with the parts whose figures it shows."""

    publisher: Outlet
    session: LearningSession[EntryRef]
    coordinator: Coordinator
    record: Record
    search: Search
    seeds: Seeds
    revisits: Revisits
    recent: RecentRates
    checkpointer: Checkpointer
    counters: Counters
    redis: RedisRetry
    scoring: Scoring | None = None  # set once the scoring part exists (it reports to point())

    def beat(self) -> None:
        self.publisher.beat()

    def trained(self, model: StreamingLDA) -> None:
        self.publisher.trained(model)

    def vocabulary_changed(self) -> None:
        self.publisher.vocabulary_changed()

    def forget_samples(self) -> None:
        self.publisher.forget_samples()

    def model(self) -> None:
        """beta_mean and its vocabulary, the stream's figures and the kept articles' shares."""
        model, vocab = self.session.model, self.session.vocabulary
        assert model is not None and vocab is not None
        # One float32 copy of beta_mean for Redis and the refolding thread (K x W; word-major
        # where the chain's is): at K = 1,000, W = 100,000 each copy is 400 MB.
        beta = model.beta_mean.detach().to("cpu", torch.float32, copy=True)
        rows = self.search.rows(model, vocab, beta)
        self.publisher.model(model, vocab, self.record.figures(), rows, beta)

    def after_step(self) -> None:
        """The model if this process owes one, then a snapshot when due (else a heartbeat)."""
        if self.publisher.model_due():
            self.model()
        if self.publisher.snapshot_due():
            self.snapshot()
        else:
            self.publisher.beat()

    def if_stale(self) -> bool:
        """Publish a snapshot if the last one is behind (the publisher's judgement)."""
        model = self.session.model
        if model is None or not self.publisher.stale(model):
            return False
        self.snapshot()
        return True

    def seeds_changed(self, *, publish: bool = True) -> None:
        """The seeds changed (an operator, or moved labels): the learner's prior follows, a
        group's other ranks get the model, and the snapshot shows them."""
        if self.seeds.follow(self.session):
            self.coordinator.model_changed()
        model = self.session.model
        if publish and model is not None and model.docs_seen:
            self.snapshot()

    def point(self, scored: Scored) -> None:
        """A scored point: the record's topics, the index's and the seeds follow its matching,
        then it is shown."""
        self.record.evaluated(scored.docs_seen, scored.topics)
        matched = scored.topics.get("matched")
        if matched is not None:
            self.search.moved(matched, scored.docs_seen)
            if self.seeds.move(matched):
                self.seeds_changed(publish=False)  # this point's snapshot shows them
        vocab = self.session.vocabulary
        assert vocab is not None
        self.publisher.topics_scored(scored, vocab, self.record.sizes())
        if self.publisher.point(scored, vocab.version):
            log.info(
                "docs %d perplexity %.1f averaged %.1f | %.1f docs/s %.0f tokens/s | restores %d",
                scored.docs_seen,
                scored.perplexity,
                scored.averaged,
                *self.coordinator.rates(*self.session.rates()),
                self.counters["nonfinite_restores"],
            )

    def snapshot(self) -> None:
        """A snapshot with the worker's figures and each part's (rates 0 while idle)."""
        model, vocab, scoring = self.session.model, self.session.vocabulary, self.scoring
        assert model is not None and vocab is not None and scoring is not None
        idle = self.recent.idle_since is not None
        rates = (0.0, 0.0) if idle else self.coordinator.rates(*self.session.rates())
        counters = {
            **self.counters,
            "redis_retries": self.redis.retries,
            "heldout_docs": len(self.session.heldout_docs),
            "unacked": len(self.checkpointer.unacked),
            "evals_waiting": scoring.waiting,
            "scorer_restarts": scoring.restarts,
        }
        status = WorkerStatus(
            docs_per_s=rates[0],
            tokens_per_s=rates[1],
            rank_docs_per_s=[0.0 if idle else r for r in self.coordinator.rank_rates()],
            counters={name: int(value) for name, value in counters.items()},
            checkpoint_at=self.checkpointer.at,
            **self.recent.shown(),
            **self.revisits.shown(),
            **self.record.shown(model.docs_seen),
            topic_seeds=self.seeds.shown(model.config.n_topics),
        )
        self.publisher.snapshot(model, vocab, status)

    def idle(self, model: StreamingLDA) -> None:
        """The stream ran dry: say so once (rates 0, idle_since) once it has been quiet."""
        if model.docs_seen and self.recent.go_idle():
            self.snapshot()
