"""Learning while quiet: when a revisit may run, what it learns, and the reservoir it draws from.

Each article the worker trains on is offered to a reservoir (:mod:`service.learn.reservoir`, a
uniform sample of them kept in Redis; held-out articles never are). A read that finds nothing
more unread (it comes back short of its request) may be followed by one minibatch drawn from
it, learned at the stream's N and a share of its step size (docs/samplers.md, "Revisiting a
reservoir"), then a read that does not wait, so a fresh article waits at most for the step in
progress. Revisits stop at ``ratio`` per fresh document. A group's ranks each keep their own
reservoir and revisit together when no rank has a fresh document in hand; a checkpoint keeps
every rank's state (``reservoirs``), and a process loads its own once, when it resumes.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from lda.batch import Batch
from lda.model import StreamingLDA, revisit_step_scale
from service.learn.coordinator import Coordinator
from service.learn.events import ArticleKept, ArticlePlaced, Event, Part, Resumed
from service.learn.reservoir import Reservoir
from service.learn.session import LearningSession
from service.learn.worker_parts import WorkerConfig
from service.store.redis_retry import RedisRetry

State = dict[str, Any] | None  # one rank's reservoir state (None: that rank kept none)


class Revisits(Part):
    """One process's revisits: off without a reservoir."""

    key = "reservoirs"  # every rank's reservoir state in a checkpoint's extra
    handles = (Resumed, ArticlePlaced)

    def __init__(
        self,
        reservoir: Reservoir | None,
        config: WorkerConfig,
        coordinator: Coordinator,
        retry: RedisRetry,
    ) -> None:
        """``config``: the ratio of revisits and how long a read may wait."""
        self.reservoir = reservoir
        self.ratio = config.revisit_ratio  # revisited documents learned at most per fresh one
        self.read_block_ms = config.read_block_ms
        self.coordinator = coordinator
        self.redis = retry
        # Every rank's reservoir state as the last checkpoint kept it (rank 0 sends them with
        # the model it resumed); a process loads its own once, when it resumes.
        self.states: list[State] = []
        self.resumed = False
        self.fresh_at = 0.0  # time.monotonic() a read last brought entries
        # Whether the last read came back short of what it asked for: only then is nothing
        # unread, and a revisit may go before the next read.
        self.drained = True
        self.drawn: list[int] = []  # the slots of the last draw's documents, in order

    # --- when -------------------------------------------------------------------------------
    def may_revisit(self, model: StreamingLDA | None) -> bool:
        """Revisits on, a learner with articles held, and fewer than ``ratio`` revisited
        documents per fresh one. A group's ranks decide on the learner's counts alone, the same
        on every rank (a rank with nothing held joins the step with no documents)."""
        reservoir = self.reservoir
        if reservoir is None or model is None:
            return False
        if not reservoir.size and self.coordinator.ranks == 1:
            return False
        return model.revisited_docs < self.ratio * model.docs_seen

    def block_ms(self, model: StreamingLDA | None) -> int | None:
        """How long a read waits for entries: not at all while there is something to revisit
        (the learner revisits instead of waiting)."""
        return None if self.may_revisit(model) else self.read_block_ms

    def read(self, wanted: int, got: int) -> None:
        """A read asked for ``wanted`` entries and ``got`` came."""
        self.drained = got < wanted
        if got:
            self.fresh_at = time.monotonic()

    def fresh_not_due(self, session: LearningSession[Any]) -> bool:
        """No fresh step is due yet, so a revisit may take the time: the last read found
        nothing more unread, no whole minibatch is in hand, and entries came less than
        read_block_ms ago (a blocking read would have waited for more that long before
        training part of one). A read that filled its request is followed by another read: a
        backlog's held-out or empty articles leave the minibatch short, not the stream."""
        if session.batch_ready or not self.drained:
            return False
        if not session.buffer:
            return True
        return time.monotonic() - self.fresh_at < self.read_block_ms / 1000

    # --- what -------------------------------------------------------------------------------
    def handle(self, event: Any) -> Iterable[Event]:
        """An article placed for training is offered to the reservoir (held-out articles never
        are), which says where it kept it; a checkpoint's states, once a process."""
        match event:
            case ArticlePlaced(ref=ref, kind="train", text=text) if self.reservoir is not None:
                return (ArticleKept(ref, self.reservoir.offer(text)),)
            case Resumed(extra=extra):
                self.load_state_dict(extra.get(self.key))
        return ()

    def draw(self, session: LearningSession[Any]) -> Batch | None:
        """A minibatch of held articles in today's words (None: none has a word of them)."""
        reservoir = self.reservoir
        assert reservoir is not None
        size = session.config.batch_size
        drawn = self.redis("reading the reservoir", lambda: reservoir.draw_slots(size))
        kept, batch = session.encode(text for _, text in drawn)
        self.drawn = [drawn[i][0] for i in kept]
        return batch

    @property
    def step_scale(self) -> float:
        """A share of the stream's step: at most ``ratio`` revisits per fresh document add
        averaging, not process time (docs/samplers.md)."""
        return revisit_step_scale(self.ratio)

    def shown(self, model: StreamingLDA) -> dict[str, Any]:
        """The snapshot's fields: articles held, revisits per held article."""
        reservoir = self.reservoir
        return {
            "reservoir_articles": 0 if reservoir is None else reservoir.size,
            "reservoir_passes": 0.0 if reservoir is None else reservoir.passes,
        }

    # --- checkpoints ------------------------------------------------------------------------
    def gather(self, alone: bool) -> None:
        """Every rank's state for the next checkpoint, each rank's slots written first (the
        checkpoint then counts only slots that are in Redis); ``alone``: the deciding process
        only, the other ranks' as the last checkpoint kept them."""
        mine: State = None
        if self.reservoir is not None:
            self.redis("writing the reservoir", self.reservoir.flush)
            mine = self.reservoir.state_dict()
        if alone:
            self.states = [mine, *self.states[1:]]
        else:
            self.states = self.coordinator.gather_all(mine)

    def state_dict(self) -> list[State] | None:
        """Every rank's state as :meth:`gather` collected it (None without revisits)."""
        return None if self.reservoir is None else list(self.states)

    def load_state_dict(self, states: list[State] | None) -> None:
        """A checkpoint's states: this rank's reservoir goes on from its own, once per process
        (a restore after a non-finite step keeps the reservoir as it is); a rank the
        checkpoint did not know starts empty."""
        states = states or []
        self.states = list(states)
        reservoir, rank = self.reservoir, self.coordinator.rank
        if reservoir is None or self.resumed or rank >= len(states):
            return
        kept = states[rank]
        if kept is not None:
            self.redis("reading the reservoir", lambda: reservoir.load_state_dict(kept))
        self.resumed = True
