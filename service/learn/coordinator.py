"""Who decides each iteration of the worker's loop: one process alone, or a group's rank 0.

The loop (:class:`service.learn.worker.Worker`) is the same for a lone worker and every rank of
a data-parallel group (docs/service.md); the coordinator is what differs. Each iteration it
turns the deciding process's :class:`Plan` (the operator's pause, a checkpoint due, whether
warm-up is over) into every rank's, with the model when it changed, says whether to take a
sampler step (a :class:`Step`, or why not: :class:`NoStep`), and carries the collectives a
group needs around a checkpoint: :class:`SoloCoordinator` decides locally and gathers nothing,
:class:`GroupCoordinator` exchanges every rank's counts, lets rank 0 decide and broadcasts it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Protocol

from lda.batch import Batch
from lda.parallel import Layout, Reducer, layout
from service.learn.distributed import DistributedReducer, Group

log = logging.getLogger(__name__)

# Longest wait of a stopping group's rank 0 for held-out scoring in progress: torchrun kills a
# rank still running 30 s after its SIGTERM; what is not scored stays in the checkpoint.
GROUP_STOP_SCORING_S = 10.0

# The model to send: learner state, vocabulary, each rank's reservoir state as the checkpoint
# it came from had it.
Learner = tuple[dict[str, Any], list[str], list[dict[str, Any] | None]]
# (epoch, learner state, vocabulary, each rank's reservoir state)
ModelState = tuple[int, dict[str, Any], list[str], list[dict[str, Any] | None]]


@dataclass(frozen=True)
class Plan:
    """The decisions of one iteration, the same on every rank."""

    ready: bool  # vocabulary and held-out set done: every rank reads and trains
    paused: bool
    checkpoint: str | None  # reason, or None
    buffered: int  # documents read and not trained, on every rank together
    model: ModelState | None = None  # when it changed (a group's rank 0 sends it)


@dataclass(frozen=True)
class Counts:
    """One process's numbers for the plan: entries not yet acknowledged (they wait for a
    checkpoint) and documents buffered."""

    unacked: int
    buffered: int


@dataclass(frozen=True)
class Step:
    """A sampler step to take: with a group's reducer and layout, or alone (None, None)."""

    reducer: Reducer | None = None
    where: Layout | None = None


class NoStep(Enum):
    """Why no step is taken now: documents came, so read on (``WAIT``), or nothing is in hand
    and nothing came (``IDLE``)."""

    WAIT = "wait"
    IDLE = "idle"


@dataclass(frozen=True)
class RevisitStep:
    """A revisit to take: this rank's documents (maybe none, in a group), the group's reducer
    and layout (None alone) and the documents revisited in all."""

    batch: Batch
    reducer: Reducer | None
    where: Layout | None
    documents: int


class Coordinator(Protocol):
    """What the worker's loop asks of its coordinator."""

    leads: bool  # decides, publishes, scores and writes checkpoints
    ranks: int
    rank: int  # this process's place in the group (0 alone)
    consumer_suffix: str
    stop_scoring_s: float | None  # most wait for scoring at stop (None: the worker's own)
    finishes_alone: bool  # on a Redis give-up at stop, checkpoint and finish (no group to wait)

    def proceed(self, stop: bool, counts: Counts, busy: tuple[int, float]) -> bool: ...
    def counts(self, mine: Counts) -> Counts: ...
    @property
    def model_due(self) -> bool: ...
    def plan(self, decided: Plan | None, learner: Learner | None) -> Plan: ...
    def model_changed(self) -> None: ...
    def step(self, buffered: int, tokens: int, batch_ready: bool, read: bool) -> Step | NoStep: ...
    def revisit_step(self, batch: Batch | None) -> RevisitStep | None: ...
    def gather(self, done: list[str]) -> list[str]: ...
    def gather_all(self, value: Any) -> list[Any]: ...
    def written(self) -> None: ...
    def agree(self, value: bool) -> bool: ...
    def rates(self, docs: float, tokens: float) -> tuple[float, float]: ...
    def rank_rates(self) -> list[float]: ...


class SoloCoordinator:
    """One worker: it decides every iteration itself and trains a whole minibatch at a time
    (a partial one only once the stream has nothing more to give)."""

    leads = True
    ranks = 1
    rank = 0
    consumer_suffix = ""
    stop_scoring_s: float | None = None
    finishes_alone = True

    model_due = False  # no other rank to send it to

    def proceed(self, stop: bool, counts: Counts, busy: tuple[int, float]) -> bool:
        return not stop

    def counts(self, mine: Counts) -> Counts:
        return mine

    def plan(self, decided: Plan | None, learner: Learner | None) -> Plan:
        # Alone, reading is the warm-up too: documents wait in the session until it is ready.
        assert decided is not None
        return replace(decided, ready=True)

    def model_changed(self) -> None:
        pass

    def step(self, buffered: int, tokens: int, batch_ready: bool, read: bool) -> Step | NoStep:
        """A step when a minibatch is full or the stream ran dry with documents in hand; else
        wait for more (something was read) or idle (nothing was)."""
        if batch_ready or (buffered and not read):
            return Step()
        return NoStep.WAIT if read else NoStep.IDLE

    def revisit_step(self, batch: Batch | None) -> RevisitStep | None:
        """A revisit of ``batch``, the reservoir's draw (None: nothing in it to learn)."""
        return None if batch is None else RevisitStep(batch, None, None, batch.n_documents)

    def gather(self, done: list[str]) -> list[str]:
        return done

    def gather_all(self, value: Any) -> list[Any]:
        return [value]

    def written(self) -> None:
        pass

    def agree(self, value: bool) -> bool:
        return value

    def rates(self, docs: float, tokens: float) -> tuple[float, float]:
        return docs, tokens

    def rank_rates(self) -> list[float]:
        return []


class GroupCoordinator:
    """One rank of a synchronous data-parallel group: rank 0 decides and broadcasts, and every
    rank takes each step together (a rank with nothing to read joins with no documents)."""

    stop_scoring_s: float | None = GROUP_STOP_SCORING_S
    finishes_alone = False

    def __init__(self, group: Group, reducer: DistributedReducer) -> None:
        self.group = group
        self.reducer = reducer
        self.leads = group.leader
        self.ranks = group.world_size
        self.rank = group.rank
        self.consumer_suffix = f"-{group.rank}"
        self.model_epoch = 0  # rank 0: bumped whenever the model is replaced
        self.sent_epoch = 0
        self.group_buffered = 0
        self.group_unacked = 0
        self.every_rate: list[float] = [0.0] * group.world_size

    def proceed(self, stop: bool, counts: Counts, busy: tuple[int, float]) -> bool:
        """Exchange every rank's counts; False once any rank was asked to stop."""
        docs, busy_s = busy
        mine = [float(stop), float(counts.buffered), float(counts.unacked), float(docs), busy_s]
        every = self.reducer.exchange(mine)
        self.group_buffered = int(sum(r[1] for r in every))
        self.group_unacked = int(sum(r[2] for r in every))
        self.every_rate = [r[3] / r[4] if r[4] > 0 else 0.0 for r in every]
        return not any(r[0] for r in every)

    def counts(self, mine: Counts) -> Counts:
        """The group's counts, as the last :meth:`proceed` exchanged them (what rank 0 decides
        on)."""
        return Counts(self.group_unacked, self.group_buffered)

    @property
    def model_due(self) -> bool:
        """Rank 0 replaced the model since it last sent one: the next plan carries it."""
        return self.leads and self.sent_epoch < self.model_epoch

    def plan(self, decided: Plan | None, learner: Learner | None) -> Plan:
        """Rank 0's ``decided`` plan (with ``learner``, the model, if the others lack it) on
        every rank."""
        plan = decided
        if self.leads and plan is not None and learner is not None and self.model_due:
            plan = replace(plan, model=(self.model_epoch, *learner))
            self.sent_epoch = self.model_epoch
        plan = self.reducer.broadcast_object(plan)
        assert plan is not None
        if plan.model is not None and not self.leads:
            self.model_epoch = self.sent_epoch = plan.model[0]
        return plan

    def model_changed(self) -> None:
        self.model_epoch += 1

    def step(self, buffered: int, tokens: int, batch_ready: bool, read: bool) -> Step | NoStep:
        """A step on the union of the ranks' next minibatches, or idle when every rank's buffer
        is empty."""
        where = layout(self.reducer, buffered, tokens)
        return Step(self.reducer, where) if where.documents else NoStep.IDLE

    def revisit_step(self, batch: Batch | None) -> RevisitStep | None:
        """A revisit on the union of the ranks' draws (a rank with none joins with no
        documents), or None on every rank when no rank drew any."""
        mine = Batch.from_ids([]) if batch is None else batch
        where = layout(self.reducer, mine.n_documents, mine.n_tokens)
        if not where.documents:
            return None
        return RevisitStep(mine, self.reducer, where, where.documents)

    def gather(self, done: list[str]) -> list[str]:
        """Every rank's entries for rank 0's checkpoint."""
        return [entry for rank in self.reducer.gather_objects(done) for entry in rank]

    def gather_all(self, value: Any) -> list[Any]:
        """Every rank's ``value``, in rank order, on every rank."""
        return list(self.reducer.gather_objects(value))

    def written(self) -> None:
        """The broadcast orders every rank's acknowledgements after rank 0's write."""
        self.reducer.broadcast_object(True)

    def agree(self, value: bool) -> bool:
        """Rank 0's ``value`` on every rank."""
        return bool(self.reducer.broadcast_object(value))

    def rates(self, docs: float, tokens: float) -> tuple[float, float]:
        """The group's docs/s (the sum of the ranks' own rates; they step together)."""
        scale = sum(self.every_rate) / docs if docs else 1.0
        return docs * scale, tokens * scale

    def rank_rates(self) -> list[float]:
        return list(self.every_rate)
