"""The held-out set and its scoring, as the worker sees them: a part with its checkpoint state.

The held-out articles are stored in Redis (:class:`~service.learn.heldout_store.HeldoutStore`)
as they are placed, and read back by a restarted worker. At each multiple of ``eval_every`` a
copy of beta_mean (the topics served) goes to a scoring process (:mod:`service.learn.evaluator`)
and the learner does not wait; at most ``eval_backlog`` betas wait (a later one is skipped and
counted in ``evals_skipped``). The points come back in order; each is published, then
committed. A checkpoint holds the scorer's state as of the last published point and the betas
not yet scored (``evaluations``); a restart truncates the perplexity and topics' histories to
that point and scores the rest, so the points equal an uninterrupted run's.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import redis
import torch

from lda.model import StreamingLDA
from service.learn.evaluator import Evaluator, Scored
from service.learn.events import (
    ArticlePlaced,
    Event,
    HeldoutComplete,
    LearnerBegun,
    Part,
    VocabularyChanged,
)
from service.learn.heldout_store import HeldoutStore
from service.store.perplexity import truncate_perplexity
from service.store.redis_retry import RedisRetry
from service.store.topic_history import truncate_topic_history

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoringConfig:
    """Where the scoring process runs (its threads) and the bounds on it: betas waiting, and
    the longest wait for them at a stop or a change of words."""

    threads: int | None
    eval_backlog: int
    eval_stop_wait_s: float


class Scoring(Part):
    """The deciding process's held-out set and scoring process, one per learner. Its points go
    back to the loop (:meth:`collect`), which shows each, then commits it."""

    key = "evaluations"
    handles = (LearnerBegun, ArticlePlaced, HeldoutComplete, VocabularyChanged)

    def __init__(
        self,
        config: ScoringConfig,
        device: torch.device,
        client: redis.Redis,
        retry: RedisRetry,
        store: HeldoutStore,
        counters: Counter[str],
    ) -> None:
        """``counters``: the worker's, where skipped evaluations are counted."""
        self.config = config
        self.device = device
        self.client = client
        self.redis = retry
        self.store = store
        self.counters = counters
        self.model: StreamingLDA | None = None
        self.evaluator: Evaluator | None = None

    def handle(self, event: Any) -> Iterable[Event]:
        """A held-out article stored; the set complete; a learner begun (from its checkpoint's
        state); words changed (scoring starts over)."""
        match event:
            case ArticlePlaced(ref=ref, kind="heldout", text=text):
                self.hold_out(ref.entry, ref.id, text)
            case HeldoutComplete(documents=documents):
                self.heldout(documents)
            case LearnerBegun(model=model, extra=extra):
                self.begin(model)
                self.load_state_dict(extra.get(self.key))
            case VocabularyChanged():
                self.restart()
        return ()

    def shown(self, model: StreamingLDA) -> dict[str, Any]:
        """Betas waiting to be scored, scoring processes started again."""
        return {"counters": {"evals_waiting": self.waiting, "scorer_restarts": self.restarts}}

    # --- the held-out set -------------------------------------------------------------------
    def hold_out(self, entry_id: str, page_id: str, text: str) -> None:
        """Store one held-out article (before its entry is acknowledged)."""
        self.redis(
            "storing a held-out article",
            functools.partial(self.store.add, entry_id, page_id, text),
        )

    def stored(self) -> list[str]:
        """The held-out texts stored so far, in arrival order."""
        return self.redis("reading the held-out set", self.store.texts)

    def heldout(self, documents: list[list[int]]) -> None:
        """The held-out set is complete (in today's words): scoring can begin."""
        if self.evaluator is not None:
            self.evaluator.set_heldout(documents)
        log.info("held-out set complete: %d documents", len(documents))

    # --- the learner ------------------------------------------------------------------------
    def begin(self, model: StreamingLDA) -> None:
        """Score ``model``'s betas from now on (its state follows: :meth:`load_state_dict`)."""
        self.model = model

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """Which points were published (the histories are cut back to the last) and which betas
        still wait; None: a new learner, nothing scored past its documents."""
        model = self.model
        assert model is not None
        state = state or {}
        scored_docs = int(state.get("scored_docs", model.docs_seen))
        pending = [(int(docs), beta) for docs, beta in state.get("pending", [])]
        self.redis(
            "truncating the perplexity history",
            functools.partial(truncate_perplexity, self.client, scored_docs),
        )
        self.redis(
            "truncating the topics' history",
            functools.partial(truncate_topic_history, self.client, scored_docs),
        )
        self._start(scored_docs, pending)

    def state_dict(self) -> dict[str, Any] | None:
        """The scorer's state as of the last published point goes into the model's (its
        scorer); the betas not yet scored and that point's documents come here."""
        if self.evaluator is None or self.model is None:
            return None
        state, scored_docs, pending = self.evaluator.checkpoint_state()
        self.model.scorer().load_state_dict(state)
        return {"scored_docs": scored_docs, "pending": pending}

    def restart(self) -> None:
        """Words changed: the betas still waiting are skipped (counted), and scoring starts
        over from the learner's scorer at its documents (the held-out set follows)."""
        model = self.model
        assert model is not None
        if self.evaluator is not None and self.evaluator.pending:
            self.counters["evals_skipped"] += len(self.evaluator.pending)
        self._start(model.docs_seen, [])

    def _start(self, scored_docs: int, pending: list[tuple[int, torch.Tensor]]) -> None:
        """A scoring process for the learner's scorer, the betas ``pending`` still to score."""
        model = self.model
        assert model is not None
        self.close()
        scorer = model.scorer()
        self.evaluator = Evaluator(
            scorer.config,
            self.device,
            self.config.threads,
            self.config.eval_backlog,
            scorer.state_dict(),
            scored_docs,
            pending,
        )
        self.evaluator.start()

    # --- points -----------------------------------------------------------------------------
    def hand_off(
        self, heldout: bool, pinned: tuple[int, ...] = (), numbers: tuple[int, ...] | None = None
    ) -> bool:
        """A multiple of eval_every (``heldout``: the set is complete): a copy of beta_mean goes
        to the scoring process, or is skipped, counted, when eval_backlog betas already wait;
        the learner does not wait for it; the ``pinned`` topics (the seeded ones) keep their
        labels in its drift matching; while topics move (``numbers``, each slot's), only the live
        rows are scored. True when the set is complete."""
        model, evaluator = self.model, self.evaluator
        if model is None or evaluator is None or not heldout:
            return False
        if not evaluator.submit(model.docs_seen, model.beta_mean, pinned, model.gamma, numbers):
            # By design (scoring must not stall the learner): counted, and said without alarm.
            self.counters["evals_skipped"] += 1
            log.info(
                "perplexity at %d documents skipped (counted in evals_skipped): %d betas "
                "already wait for scoring",
                model.docs_seen,
                len(evaluator.pending),
            )
        return True

    def collect(self, timeout: float = 0.0) -> list[Scored]:
        """The points scored since the last call, in order: the loop shows each, then
        :meth:`commit`s it."""
        return [] if self.evaluator is None else self.evaluator.poll(timeout)

    def commit(self, scored: Scored) -> None:
        """``scored`` was shown: a checkpoint counts it as published."""
        assert self.evaluator is not None
        self.evaluator.commit(scored)

    def finish(self, most_s: float | None = None) -> Iterator[Scored]:
        """Wait up to eval_stop_wait_s (or ``most_s``, if shorter) for the betas handed off,
        each point as it comes (shown and committed before the next; the rest stay in the
        checkpoint, scored after a restart)."""
        evaluator = self.evaluator
        if evaluator is None or not evaluator.ready or not evaluator.pending:
            return
        wait = self.config.eval_stop_wait_s
        deadline = time.monotonic() + (wait if most_s is None else min(wait, most_s))
        while evaluator.pending and (left := deadline - time.monotonic()) > 0:
            yield from self.collect(timeout=min(left, 0.5))

    @property
    def waiting(self) -> int:
        """Betas handed off and not yet scored."""
        return 0 if self.evaluator is None else len(self.evaluator.pending)

    @property
    def restarts(self) -> int:
        """Scoring processes started again after one died."""
        return 0 if self.evaluator is None else self.evaluator.restarts

    def close(self) -> None:
        if self.evaluator is not None:
            self.evaluator.close()
