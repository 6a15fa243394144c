"""A worker that is one rank of a data-parallel group (torchrun; docs/service.md).

Every rank reads its own entries through the consumer group (consumer ``<name>-<rank>``), and
all ranks step together: each iteration they exchange a few numbers (stop requested, buffered,
waiting for acknowledgement, rates), rank 0 broadcasts a plan (the model when it changed, a
checkpoint, pause, whether warm-up is over), then every rank reads and all take one sampler step
on the union of their minibatches (:mod:`lda.parallel`; a rank with nothing to read joins with
no documents). theta stays identical on every rank.

Rank 0 alone builds the vocabulary and the held-out set (the others wait), scores, publishes
and writes checkpoints; a checkpoint lists every rank's entries, and each rank acknowledges its
own only after rank 0 has written it. If any rank dies, torchrun restarts the group: rank 0
resumes from its checkpoint and sends the model to the others, and every consumer name re-reads
its unacknowledged entries (a rank that does not come back has its entries reclaimed by the
others after ``claim_after_ms``): nothing is lost.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import redis

from lda.batch import Batch
from lda.model import StreamingLDA
from lda.parallel import Layout, layout
from lda.vocab import Vocabulary
from service.learn.distributed import DistributedReducer, Group
from service.learn.session import LearningSession
from service.learn.topic_watch import TopicWatch
from service.learn.worker import Worker
from service.settings import Settings
from service.store.snapshot import read_control

log = logging.getLogger(__name__)


# Longest wait of a stopping group's rank 0 for held-out scoring in progress.
GROUP_STOP_SCORING_S = 10.0


@dataclass(frozen=True)
class Plan:
    """Rank 0's decisions for one iteration, the same on every rank."""

    ready: bool  # vocabulary and held-out set done: every rank reads and trains
    paused: bool
    checkpoint: str | None  # reason, or None
    model: tuple[int, dict[str, Any], list[str]] | None  # (epoch, state, words) when it changed


class GroupWorker(Worker):
    """One rank; :meth:`run` until any rank is asked to stop."""

    def __init__(
        self,
        settings: Settings,
        client: redis.Redis,
        group: Group,
        reducer: DistributedReducer,
        stop: threading.Event | None = None,
    ) -> None:
        super().__init__(settings, client, stop)
        self.group = group
        self.reducer = reducer
        self.consumer = f"{settings.consumer_name}-{group.rank}"
        self.session = LearningSession(
            settings, self.device, holds_out=group.leader, ranks=group.world_size
        )
        self.where: Layout | None = None  # the layout of the step about to be taken
        self.watch = TopicWatch(settings.uncertainty_samples if group.leader else 0)
        self.model_epoch = 0  # rank 0: bumped whenever the model is replaced
        self.sent_epoch = 0
        self.group_buffered = 0
        self.group_waiting = 0
        self.rank_rates: list[float] = [0.0] * group.world_size

    # --- lifecycle -------------------------------------------------------------------------
    def run(self) -> None:
        """Step with the group until a rank is asked to stop, then checkpoint together. If the
        group breaks (a rank died: a collective raises), exit at once: torchrun restarts it."""
        try:
            if self.group.leader:
                self._start()
            else:
                self.redis("creating the consumer group", self.queue.ensure_group)
            while self._agree_to_continue():
                self._group_step()
            self._group_shutdown()
        finally:
            if self.evaluator is not None:
                self.evaluator.close()

    def _agree_to_continue(self) -> bool:
        """Exchange every rank's counts; False once any rank was asked to stop."""
        mine = [
            float(self.stop.is_set()),
            float(len(self.session.buffer)),
            float(len(self.trained)),
            float(self.session.docs_here),
            self.session.busy_s,
        ]
        every = self.reducer.exchange(mine)
        self.group_buffered = int(sum(r[1] for r in every))
        self.group_waiting = int(sum(r[2] for r in every))
        self.rank_rates = [r[3] / r[4] if r[4] > 0 else 0.0 for r in every]
        return not any(r[0] for r in every)

    def _group_shutdown(self) -> None:
        leader = self.group.leader
        if leader and self.model is not None:
            # torchrun kills a rank still running 30 s after its SIGTERM; what is not scored
            # stays in the checkpoint.
            self._finish_scoring(GROUP_STOP_SCORING_S)
            self._publish_if_stale()
        has_model = self.reducer.broadcast_object(leader and self.model is not None)
        if has_model and self.model is not None:
            self._group_checkpoint("stop", final=True)

    # --- one iteration ---------------------------------------------------------------------
    def _group_step(self) -> None:
        plan = self.reducer.broadcast_object(self._plan() if self.group.leader else None)
        if plan.model is not None and not self.group.leader:
            self._receive(*plan.model)
        if plan.checkpoint is not None:
            self._group_checkpoint(plan.checkpoint)
        if not plan.ready:
            if self.group.leader:
                self._warm_up()
            return
        if plan.paused:
            if self.group_buffered:
                self._group_train()
            else:
                self.stop.wait(self.settings.read_block_ms / 1000)
            return
        if self.session.wanted:
            entries = self._read()
            if entries:
                self.empty_since = None
                self._ingest(entries)
        self._group_train()

    def _plan(self) -> Plan:
        """Rank 0: the operator's control, what is due, and the model if the others lack it."""
        self._collect()
        control = self.redis("reading control", functools.partial(read_control, self.client))
        reason: str | None = None
        if self.model is not None:
            if control.checkpoint_seq > self.checkpoint_seq:
                self.checkpoint_seq = control.checkpoint_seq
                reason = "requested"
            elif control.paused and self.group_waiting and not self.group_buffered:
                reason = "paused"
            elif self.group_waiting >= self.settings.checkpoint_max_unacked:
                reason = "unacked"
            elif self._periodic_due():
                reason = "periodic"
            elif self.group_waiting and not self.group_buffered and self._idle_long_enough():
                reason = "drained"
        model = None
        if self.model is not None and self.vocab is not None and self.sent_epoch < self.model_epoch:
            model = (self.model_epoch, self.model.state_dict(), list(self.vocab.words))
            self.sent_epoch = self.model_epoch
        heldout_done = self.session.heldout is not None or self.settings.heldout == 0
        ready = self.model is not None and heldout_done
        return Plan(ready=ready, paused=control.paused, checkpoint=reason, model=model)

    def _periodic_due(self) -> bool:
        assert self.model is not None
        changed = bool(self.group_waiting) or self.model.docs_seen != self.checkpointed_docs
        elapsed = time.monotonic() - self.last_checkpoint
        return changed and elapsed >= self.settings.checkpoint_every_s

    def _warm_up(self) -> None:
        """Rank 0, before training: read for the vocabulary and the held-out set."""
        entries = self._read()
        if entries:
            self._ingest(entries)
        else:
            self._beat()

    def _group_train(self) -> None:
        """Every rank: one step on the union of the ranks' next minibatches (or, when every
        buffer is empty, rank 0 shows the latest topics)."""
        buffer = self.session.buffer[: self.settings.batch_size]  # what _train_next takes
        self.where = layout(self.reducer, len(buffer), sum(len(ids) for _, ids in buffer))
        if self.where.documents:
            self._train_next()
            return
        if self.group.leader and not self._publish_if_stale():
            self._beat()
            if self._idle_long_enough():  # (also starts the idle clock that "drained" reads)
                self._go_idle()

    # --- hooks of the single worker --------------------------------------------------------
    def _learn(self, batch: Batch) -> None:
        self.session.learn(batch, self.reducer, self.where)

    def _set_model(
        self, model: StreamingLDA, vocab: Vocabulary, extra: dict[str, Any] | None = None
    ) -> None:
        self.model_epoch += 1
        if self.group.leader:
            super()._set_model(model, vocab, extra)
        else:
            self.session.begin(vocab, model)

    def _receive(self, epoch: int, state: dict[str, Any], words: list[str]) -> None:
        """Ranks 1..N-1: rank 0's model (new, resumed or restored)."""
        model = self.session.begin(
            Vocabulary(words), StreamingLDA.from_state_dict(state, self.device)
        )
        self.model_epoch = self.sent_epoch = epoch
        log.info("rank %d: model at %d documents from rank 0", self.group.rank, model.docs_seen)

    def _restore(self, exc: Exception, entries: list[str]) -> None:
        """Every rank meets the same non-finite theta: rank 0 restores its checkpoint (sent to
        the others by the next plan); each rank's dropped entries are acknowledged with the
        next checkpoint."""
        if self.group.leader:
            super()._restore(exc, entries)
            return
        self.trained = entries + self.trained
        self.session.model = None  # until rank 0's restored model arrives

    def _checkpoint(self, reason: str, *, final: bool = False) -> None:
        if self.group.leader and reason in ("vocabulary", "restore"):
            # Rank 0 alone, before any rank trains on the new model: nothing else to list.
            super()._checkpoint(reason, final=final)

    def _group_checkpoint(self, reason: str, *, final: bool = False) -> None:
        """Rank 0 writes one checkpoint listing every rank's entries; then each rank
        acknowledges its own (the broadcast orders the acknowledgements after the write)."""
        done = list(self.trained)
        every = self.reducer.gather_objects(done)
        if self.group.leader:
            self._save_checkpoint(reason, [entry for rank in every for entry in rank])
        self.reducer.broadcast_object(True)
        self._acknowledge(done, final=final)
        if self.group.leader:
            self._after_checkpoint(reason, sum(len(r) for r in every), final=final)

    def _publish_model(self) -> None:
        if self.group.leader:
            super()._publish_model()

    def _publish_snapshot(self) -> None:
        if self.group.leader:
            super()._publish_snapshot()

    def _publish_if_stale(self) -> bool:
        return self.group.leader and super()._publish_if_stale()

    def _hand_off(self) -> None:
        if self.group.leader:
            super()._hand_off()

    def _beat(self) -> None:
        if self.group.leader:
            super()._beat()

    def _rates(self) -> tuple[float, float]:
        """The group's docs/s (the sum of the ranks' own rates; they step together)."""
        docs, tokens = super()._rates()
        scale = sum(self.rank_rates) / docs if docs else 1.0
        return docs * scale, tokens * scale

    def _rank_rates(self) -> list[float]:
        return list(self.rank_rates)
