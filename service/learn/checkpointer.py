"""The worker's durability: when a checkpoint is due, writing it, then acknowledging.

One rule says when to checkpoint (:meth:`Checkpointer.due`), for a lone worker and a group
alike: on an operator's request, when paused with trained entries in hand, as soon as
``max_unacked`` trained entries wait, every ``every_s`` while something changed, and once the
stream has stayed empty long enough (a finished source's tail is acknowledged promptly).
Entries are acknowledged only after the checkpoint that lists them is written (see
docs/service.md): a crash in between is repaired on restart from that list.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lda.model import StreamingLDA
from lda.vocab import Vocabulary
from service.learn import checkpoint_compat
from service.learn.model_store import load_model, save_model
from service.store.redis_retry import RedisRetry

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckpointConfig:
    """The checkpoint's triggers and the stop's bound on acknowledging."""

    every_s: float
    max_unacked: int
    stop_ack_wait_s: float


class Checkpointer:
    """Saves the learner atomically to ``path``, then acknowledges the entries it holds."""

    def __init__(
        self,
        path: Path,
        device: torch.device,
        config: CheckpointConfig,
        recorded: dict[str, Any],
        ack: Callable[[list[str]], object],
        retry: RedisRetry,
    ) -> None:
        self.path = path
        self.device = device
        self.config = config
        self.recorded = recorded  # the settings, written into every checkpoint
        self.ack = ack  # the stream's acknowledgement of entries
        self.redis = retry
        self.last = time.monotonic()  # when the last checkpoint was written
        self.at: float | None = None  # its time.time()
        self.docs = -1  # its docs_seen
        # Entries not yet acknowledged: trained (or empty, or dropped) since the last checkpoint;
        # the next one lists them, then they are acknowledged.
        self.unacked: list[str] = []

    @property
    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> tuple[StreamingLDA, Vocabulary, dict[str, Any]]:
        """The learner, its vocabulary and the checkpoint's ``extra`` in today's form, however
        old the checkpoint (:mod:`service.learn.checkpoint_compat`)."""
        model, vocab, extra = load_model(self.path, self.device)
        return model, vocab, checkpoint_compat.upgrade(extra, model.docs_seen)

    def resumed(self, model: StreamingLDA, words: int, extra: dict[str, Any]) -> None:
        """A checkpoint read at start: it is the last one written; the entries it lists are
        acknowledged (again, if the last process died before it could)."""
        done = [str(e) for e in extra.get("acked_entries", [])]
        self.redis("acknowledging checkpointed entries", lambda: self.ack(done))
        self.at = extra.get("saved_at")
        self.docs = model.docs_seen
        config = model.config
        log.info(
            "resumed from %s at %d documents (%s, K=%d, W=%d)",
            self.path,
            model.docs_seen,
            config.sampler,
            config.n_topics,
            words,
        )

    def due(
        self,
        model: StreamingLDA | None,
        *,
        requested: bool,
        paused: bool,
        waiting: int,
        buffered: int,
        idle: Callable[[], bool],
    ) -> str | None:
        """Why to checkpoint now (None: not now). ``waiting``: trained entries not yet
        acknowledged, ``buffered``: read but not trained (every rank's, in a group);
        ``idle()``: whether the stream has stayed empty long enough."""
        if model is None:
            return None
        if requested:
            return "requested"
        if paused and waiting and not buffered:
            return "paused"
        if waiting >= self.config.max_unacked:
            return "unacked"  # they bound the stream's length
        changed = bool(waiting) or model.docs_seen != self.docs
        if changed and time.monotonic() - self.last >= self.config.every_s:
            return "periodic"
        if waiting and not buffered and idle():
            return "drained"
        return None

    def save(
        self,
        model: StreamingLDA,
        vocab: Vocabulary,
        reason: str,
        done: list[str],
        parts: dict[str, Any],
    ) -> None:
        """The atomic checkpoint, listing ``done`` (acknowledged right after it, and again on a
        restart if the worker died in between), each part's state under its key (``parts``)."""
        saved_at = time.time()
        extra = checkpoint_compat.for_older_readers(parts)
        payload = {**extra, "acked_entries": done, "reason": reason, "saved_at": saved_at}
        save_model(self.path, model, vocab, self.recorded, payload)
        self.last, self.at, self.docs = time.monotonic(), saved_at, model.docs_seen

    def hold(self, entries: list[str], *, first: bool = False) -> None:
        """Entries to acknowledge after the next checkpoint (``first``: before those held)."""
        self.unacked = entries + self.unacked if first else self.unacked + entries

    def acknowledge(self, done: list[str], *, final: bool) -> None:
        """Acknowledge this process's entries ``done``, the first of those held (a stopping
        worker waits at most ``stop_ack_wait_s`` for Redis: the checkpoint lists them for the
        restart)."""
        wait = self.config.stop_ack_wait_s if final else None
        self.redis("acknowledging trained entries", lambda: self.ack(done), deadline_s=wait)
        self.unacked = self.unacked[len(done) :]
