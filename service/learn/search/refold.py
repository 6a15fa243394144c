"""Keeps the kept articles' shares current: a thread that refolds them, a batch at a time and
stalest first, with ``/infer``'s fixed point under the model the worker published last
(docs/topics.md, "Searching the kept articles").

Each model published hands its beta_mean here (a float32 copy, W x K) with its vocabulary. The
thread takes the slots due (:meth:`ArticleIndex.due`), reads their texts from the reservoir,
encodes them in that vocabulary and folds them in (compiled, without the GIL), and writes the
rows back unless the slot's article or the labels changed meanwhile. It sleeps between batches
so that it takes at most ``share`` of one core, and waits when nothing is due.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from lda.gamma import Gamma, gamma_total, gamma_vector
from lda.inference_kernel import fixed_points
from lda.search import FOLD_ITERATIONS, FOLD_TOLERANCE
from lda.tokens import WordIndex
from lda.vocab import Vocabulary
from service.learn.search.index import ArticleIndex

log = logging.getLogger(__name__)

BATCH = 256  # articles refolded together
IDLE_S = 1.0  # the wait when nothing is due
WARN_EVERY_S = 60.0  # a failing refold is logged at most this often
NICE = 19  # the thread's niceness: the lowest priority


@dataclass(frozen=True)
class Model:
    """What rows are refolded under: beta_mean's columns (W x K float32), its words, gamma and
    the documents it had seen."""

    columns: np.ndarray
    words: WordIndex
    gamma: Gamma  # a scalar or one value per topic (lda.gamma)
    docs_seen: int


class ShareRefresh:
    """The refolding thread of one :class:`ArticleIndex` (:meth:`start` once, :meth:`close`)."""

    def __init__(
        self,
        index: ArticleIndex,
        texts: Callable[[list[int]], dict[int, str]],
        share: float,
    ) -> None:
        """``texts``: the reservoir's texts of some slots; ``share``: of one core, at most."""
        self.index = index
        self.texts = texts
        self.share = share
        self.latest: Model | None = None
        self._words: tuple[int, WordIndex] | None = None  # (vocabulary version, its index)
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.refolded = 0  # rows written so far

    def model(
        self, beta_mean: torch.Tensor, vocab: Vocabulary, gamma: Gamma, docs_seen: int
    ) -> None:
        """A model was published: rows are refolded under it from now on. ``beta_mean`` (K x W)
        is the thread's to keep: nothing may write it after."""
        # Its columns word-major, float32: a view where it is laid out so already (as the lazy
        # chain's is), else one copy.
        columns = beta_mean.detach().to("cpu", torch.float32).T.contiguous()
        if self._words is None or self._words[0] != vocab.version:
            self._words = (vocab.version, WordIndex(vocab.words))
        self.latest = Model(columns.numpy(), self._words[1], gamma, docs_seen)

    def start(self) -> None:
        if self.thread is None and self.share > 0:
            self.thread = threading.Thread(target=self._run, name="share-refresh", daemon=True)
            self.thread.start()

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=10.0)

    def step(self) -> int:
        """One batch refolded under the latest model: the slots taken (0: none due)."""
        model = self.latest
        if model is None:
            return 0
        due = self.index.due(BATCH, model.docs_seen)
        if not due:
            return 0
        texts = self.texts([slot for slot, _ in due])
        # A text gone from the reservoir folds as an empty one: its row waits, marked done.
        ids, starts, _ = model.words.encode([texts.get(slot, "") for slot, _ in due])
        pi = np.empty((len(due), model.columns.shape[1]), dtype=np.float64)
        k = model.columns.shape[1]
        vector, total = gamma_vector(model.gamma, k), gamma_total(model.gamma, k)
        fixed_points(model.columns, ids, starts, vector, total, FOLD_ITERATIONS, FOLD_TOLERANCE, pi)
        self.refolded += self.index.refolded(due, pi, np.diff(starts), model.docs_seen)
        return len(due)

    def _run(self) -> None:
        lowest_priority()
        warned_at = -math.inf
        while not self.stop.is_set():
            began = time.perf_counter()
            try:
                done = self.step()
            except Exception as exc:  # Redis away, say: the rows wait, the worker goes on
                if began - warned_at >= WARN_EVERY_S:
                    log.warning("refolding the kept articles' shares: %s", exc)
                    warned_at = began
                done = 0
            spent = time.perf_counter() - began
            pause = spent * (1 / self.share - 1) if done else IDLE_S
            self.stop.wait(pause)


def lowest_priority() -> None:
    """This thread at the lowest CPU priority (Linux schedules each thread with a nice value of
    its own): refolding takes the cores the learner, the API and the scrapers leave idle."""
    # Not Linux, or not allowed: the share still bounds it.
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
