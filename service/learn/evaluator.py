"""Held-out perplexity off the learner's path: a scoring process fed copies of beta.

At each multiple of ``eval_every`` the worker hands a copy of its beta_mean (the topics it
serves) to :class:`Evaluator`, which queues it to a child process (spawned once, see
:mod:`service.learn.scoring_process`) owning a :class:`~lda.evaluation.scorer.HeldoutScorer`.
The child scores betas in order and sends back each point with the scorer's state after it. The
worker publishes a point, then :meth:`Evaluator.commit`\\ s it: the committed state (as of the
last published point) and the betas not yet scored are what a checkpoint holds, so a restart
scores the rest and gives the same points as an uninterrupted run. At most ``eval_backlog``
betas wait; a later one is refused (the worker counts the skip) until the child catches up;
fewer when they would hold more than PENDING_BYTES (a large model). A child that dies is started
again from the committed state.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import queue
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lda.evaluation.scorer import ScorerConfig
from lda.gamma import Gamma
from service.learn.scoring_channel import Receiver, Sender
from service.learn.scoring_messages import pack_state, unpack_state

log = logging.getLogger(__name__)

# Seconds a closing evaluator gives its child to exit before terminating it.
CLOSE_TIMEOUT_S = 5.0
# At most this many bytes of betas wait for scoring (always at least one beta).
PENDING_BYTES = 512 * 2**20


@dataclass(frozen=True)
class Scored:
    """One scored beta: its point and the scorer's state right after it (packed)."""

    docs_seen: int
    perplexity: float
    averaged: float
    coherence: float  # mean NPMI of the top 10 words in the held-out documents
    diversity: float  # distinct share of the top 25 words
    topics: dict[str, Any]  # per topic: coherence, drift and matched (None for an epoch's first)
    state: dict[str, Any]


class Evaluator:
    """The worker's side of the scoring process: hand-off, results, committed state."""

    def __init__(
        self,
        config: ScorerConfig,
        device: torch.device,
        threads: int | None,
        backlog: int,
        state: dict[str, Any],
        scored_docs: int,
        pending: list[tuple[int, torch.Tensor]],
    ) -> None:
        self.config = config
        self.device = device
        self.threads = threads
        self.backlog = backlog
        self.state = pack_state(state)  # as of the last committed point
        self.scored_docs = scored_docs  # docs_seen of the last committed point
        self.pending: list[tuple[int, np.ndarray]] = [
            (docs, beta.detach().cpu().numpy()) for docs, beta in pending
        ]
        self.restarts = 0
        self.pinned: tuple[int, ...] = ()  # the seeded topics, which the matching keeps
        self.numbers: tuple[int, ...] | None = None  # each slot's topic number (None: K fixed)
        self._heldout: list[list[int]] | None = None
        self._epoch = 0
        self._context = multiprocessing.get_context("spawn")
        self._inbox: Sender | None = None
        self._outbox: Receiver | None = None
        self._process: Any = None

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Spawn the child now (it imports torch meanwhile); it scores once it has the held-out
        set."""
        from service.learn.scoring_process import serve

        # Pipes, not queues: see service.learn.scoring_channel (no semaphore left to leak).
        child_in, to_child = self._context.Pipe(duplex=False)
        from_child, child_out = self._context.Pipe(duplex=False)
        self._process = self._context.Process(
            target=serve,
            args=(child_in, child_out, str(self.device), self.threads, os.getpid()),
            name="streamlda-scorer",
            daemon=True,
        )
        self._process.start()
        child_in.close()  # the child's ends: with these closed, each side sees the other go
        child_out.close()
        self._inbox = Sender(to_child, "streamlda-scorer-feed")
        self._outbox = Receiver(from_child)
        if self._heldout is not None:
            self._reset()

    def set_heldout(self, documents: list[list[int]]) -> None:
        """The held-out documents (word ids): the child starts over from the committed state."""
        self._heldout = [list(doc) for doc in documents]
        self._reset()

    def _reset(self) -> None:
        """New epoch: the child takes the committed state and every pending beta, in order."""
        self._epoch += 1
        config = (self.config.gamma, self.config.sweeps, self.config.method)
        assert self._inbox is not None
        self._inbox.put(("reset", self._epoch, config, self.state, self._heldout))
        for docs, beta in self.pending:
            self._inbox.put(("score", self._epoch, docs, beta, self.pinned, self.numbers))

    def close(self) -> None:
        """Stop the child (what it has not scored stays in ``pending``)."""
        if self._process is None:
            return
        assert self._inbox is not None and self._outbox is not None
        self._inbox.put(None)
        self._inbox.close()
        self._process.join(CLOSE_TIMEOUT_S)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(CLOSE_TIMEOUT_S)
        self._outbox.close()
        self._process = None

    # --- hand-off --------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """The held-out set is known: betas can be scored."""
        return self._heldout is not None

    def room(self, beta_bytes: int) -> int:
        """Betas that may wait: ``backlog``, or fewer when they would pass PENDING_BYTES (each,
        a K x W matrix, waits in the worker and in its checkpoint)."""
        return max(1, min(self.backlog, PENDING_BYTES // max(1, beta_bytes)))

    def submit(
        self,
        docs_seen: int,
        beta: torch.Tensor,
        pinned: tuple[int, ...] = (),
        gamma: Gamma | None = None,
        numbers: tuple[int, ...] | None = None,
    ) -> bool:
        """Queue ``beta`` for scoring, kept as it is (StreamingLDA.beta_mean is a tensor of its
        own that later steps do not change: a copy would be one more K x W matrix), the topics
        ``pinned`` matched to themselves, under the learner's ``gamma`` of now when given (a
        learned prior moves), and while topics move each slot's topic ``numbers`` (``FREE``: not a
        topic, not scored; a topic's drift is from its number's last row); False (nothing
        queued) when the backlog is full."""
        beta_bytes = beta.numel() * beta.element_size()
        if self._heldout is None or len(self.pending) >= self.room(beta_bytes):
            return False
        kept = beta.detach().cpu().numpy()
        self.pending.append((docs_seen, kept))
        assert self._inbox is not None
        self.pinned, self.numbers = pinned, numbers
        if gamma is not None and gamma != self.config.gamma:
            self.config = dataclasses.replace(self.config, gamma=gamma)
            self._inbox.put(("gamma", self._epoch, gamma))
        self._inbox.put(("score", self._epoch, docs_seen, kept, pinned, numbers))
        return True

    def poll(self, timeout: float = 0.0) -> list[Scored]:
        """Points scored since the last call, in order (waiting up to ``timeout`` for one);
        publish each, then :meth:`commit` it."""
        results: list[Scored] = []
        wait: float | None = timeout
        while self.pending and self._outbox is not None:
            try:
                message = self._outbox.get(timeout=wait or 0.0)
            except (queue.Empty, EOFError):  # EOF: the child died (revived below)
                break
            wait = None
            _, epoch, docs, perplexity, averaged, coherence, diversity, topics, state = message
            if epoch != self._epoch:
                continue  # scored before a reset: scored again after it
            expected = self.pending[len(results)][0] if len(results) < len(self.pending) else None
            if docs != expected:
                continue
            point = (docs, perplexity, averaged, coherence, diversity, topics)
            results.append(Scored(*point, state))
        if not results:
            self._revive()
        return results

    def commit(self, scored: Scored) -> None:
        """``scored`` is published: it becomes the state a checkpoint holds."""
        docs, _ = self.pending.pop(0)
        assert docs == scored.docs_seen, (docs, scored.docs_seen)
        self.state = scored.state
        self.scored_docs = docs

    def _revive(self) -> None:
        """Start the child again if it died with betas waiting."""
        if self._process is None or self._process.is_alive() or not self.pending:
            return
        self.restarts += 1
        log.warning(
            "the scoring process exited (code %s); starting it again with %d betas waiting",
            self._process.exitcode,
            len(self.pending),
        )
        self._process = None
        assert self._inbox is not None and self._outbox is not None
        self._inbox.close()  # its thread ends on the broken pipe (a daemon: exit never waits)
        self._outbox.close()
        self.start()

    # --- checkpoint ------------------------------------------------------------------------
    def checkpoint_state(self) -> tuple[dict[str, Any], int, list[tuple[int, torch.Tensor]]]:
        """(scorer state as of the last committed point, its docs_seen, betas not yet scored:
        views of the waiting betas, which nothing changes, not copies)."""
        pending = [(docs, torch.from_numpy(beta)) for docs, beta in self.pending]
        return unpack_state(self.state), self.scored_docs, pending
