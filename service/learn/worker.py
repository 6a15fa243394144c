"""The worker: learns topics from the article stream and publishes them to Redis for the API.

Lifecycle of an article (a stream entry read through the consumer group):

1. Until a vocabulary exists (no ``--vocab`` and no checkpoint), the first ``vocab_docs``
   entries are held unacknowledged in memory (the stream is their durable buffer; a restart
   redelivers them to the same consumer name). The vocabulary is built from them and a first
   checkpoint persists it at once, before anything depends on it.
2. The first ``heldout`` articles (with at least one vocabulary word) become the held-out set:
   stored in Redis (:class:`~service.learn.heldout_store.HeldoutStore`), then acknowledged.
3. The others are trained on in minibatches of ``batch_size``; their ids are kept until the
   next checkpoint is written, and acknowledged only then (the checkpoint also lists them, so a
   crash between the write and the acknowledgement is repaired on restart). A crash therefore
   redelivers what the checkpoint does not contain; nothing is lost. The queue's lease renewal
   on every read keeps held entries from being reclaimed (see :mod:`service.ingest.queue`). Run one
   worker per consumer group: while it trains through the vocabulary's documents it does not
   read, so with a second consumer those could be reclaimed (and learned twice) after
   ``claim_after_ms``.

Checkpoints (atomic, ``data_dir/checkpoint.pt``) are written every ``checkpoint_every_s``, as
soon as ``checkpoint_max_unacked`` trained entries wait, once the stream has stayed empty for
``checkpoint_idle_s`` (a finished source's tail is acknowledged within seconds), on an admin
request, when paused, and on SIGTERM/SIGINT (after the minibatch in hand). Scrapers wait on
unread entries only (see :mod:`service.ingest.queue`), so those triggers are what bound the
entries held here: the vocabulary's documents, or fewer than ``checkpoint_max_unacked`` plus two
minibatches (why these defaults: docs/defaults.md, "Checkpoints: cadence and the unacknowledged
bound").

The topics published are ``beta_mean`` (:mod:`lda.sgmcmc.averaging`), the better estimate: the
snapshot's ``topics`` (its ``sample_topics`` are the chain's current sample) and the model
``/infer`` uses. A snapshot (top words rendered for the API) goes out at most every
``publish_every_s`` while training (or ten times as long as the last one took, if longer: a
large model's), and at once when the stream runs dry or the worker stops: dashboards poll once
a second, and rendering every minibatch cost the worker and the API CPU.
Held-out perplexity, of beta_mean too, is scored off the learner's path
(:mod:`service.learn.evaluator`): at each multiple of ``eval_every`` a copy goes to a scoring
process; its points are published as they come back, in order. At most ``eval_backlog`` betas
wait (a later one is skipped and counted in ``evals_skipped``). The checkpoint holds the
scorer's state as of the last published point and the betas not yet scored (and beta_mean's
running sums, in the model's state); a restart truncates the perplexity history to that point
and scores the rest, so the points equal an uninterrupted run's. If a step would make theta
non-finite, the last checkpoint is restored, the count ``nonfinite_restores`` grows, and the
documents trained since that checkpoint (including the failing minibatch) are dropped and
acknowledged with the next checkpoint: a poison minibatch is skipped, never retried forever.
Nothing non-finite is ever published. While Redis is unavailable every Redis call is retried
with backoff; progress stays in memory.

While nothing fresh is unread the worker revisits (``revisit``): each article it trains on is
offered to a reservoir (:mod:`service.learn.reservoir`, a uniform sample of them kept in Redis;
held-out articles never are), and a read that finds nothing more unread (it comes back short
of its request) is followed by one minibatch drawn from it, learned at the stream's N and step
size (docs/samplers.md, "Revisiting a reservoir"), then a read that does not wait, so a fresh
article waits at most for the step in progress. Revisits stop at ``revisit_ratio`` per fresh
document; the worker then idles as before. The reservoir's slots are written before each
checkpoint, which keeps its count and generator. A group's ranks each keep their own and
revisit together when no rank has a fresh document in hand.

The loop is the same for a lone worker and for each rank of a data-parallel group
(docs/service.md); it is built from parts: a coordinator (:mod:`service.learn.coordinator`)
makes each iteration's plan, a checkpointer (:mod:`service.learn.checkpointer`) says when a
checkpoint is due, writes it and acknowledges, a publisher (:mod:`service.learn.publisher`)
shows the API what was learned (a null one on ranks that do not publish).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
import torch

from lda.batch import Batch
from lda.model import NonFiniteError, StreamingLDA, revisit_step_scale
from lda.vocab import Vocabulary
from service.ingest.queue import ArticleQueue, entry_time
from service.ingest.sources import Article
from service.learn.checkpointer import Checkpointer
from service.learn.coordinator import Coordinator, Counts, Plan, Step
from service.learn.evaluator import Evaluator
from service.learn.heldout_store import HeldoutStore
from service.learn.publisher import Publishing, WorkerStatus
from service.learn.recent_rates import RecentRates
from service.learn.reservoir import Reservoir
from service.learn.runtime import release_freed_memory
from service.learn.session import LearningSession, ModelTooLarge, VocabularyError
from service.learn.topic_record import ArticleRef, RecordConfig, TopicRecord
from service.store.control import read_control
from service.store.counters import WORKER_COUNTERS
from service.store.perplexity import truncate_perplexity
from service.store.published_model import StreamFigures
from service.store.redis_retry import RedisGaveUp, RedisRetry
from service.store.topic_history import truncate_topic_history

log = logging.getLogger(__name__)

Entry = tuple[str, Article]  # a stream entry: its id and its article

# The worker's counters in every snapshot (zero until they happen), kept across restarts.
COUNTERS = WORKER_COUNTERS


class CannotLearn(Exception):
    """The worker cannot go on learning (no vocabulary could be built, the model does not fit in
    memory): waiting or retrying cannot help; the ``worker`` command ends the process with it."""


@dataclass(frozen=True)
class WorkerConfig:
    """The loop's own values: its consumer name, how long a read blocks, when an empty stream
    counts as idle, the bounds on scoring, and a vocabulary file if one was given."""

    consumer: str
    read_block_ms: int
    checkpoint_idle_s: float
    eval_stop_wait_s: float
    eval_backlog: int
    threads: int | None
    heldout: int
    vocab: Path | None
    revisit_ratio: float  # revisited documents learned at most per fresh one (0: none)


class Worker:
    """One learner fed by the stream, alone or as a group's rank; :meth:`run` until ``stop``."""

    def __init__(
        self,
        config: WorkerConfig,
        *,
        client: redis.Redis,
        queue: ArticleQueue,
        retry: RedisRetry,
        session: LearningSession[str],
        checkpointer: Checkpointer,
        publisher: Publishing,
        coordinator: Coordinator,
        heldout_store: HeldoutStore,
        device: torch.device,
        stop: threading.Event,
        reservoir: Reservoir | None = None,
        record: RecordConfig | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.queue = queue
        self.redis = retry
        self.session = session
        self.checkpointer = checkpointer
        self.publisher = publisher
        self.coordinator = coordinator
        self.heldout_store = heldout_store
        self.device = device
        self.stop = stop
        self.consumer = config.consumer
        self.evaluator: Evaluator | None = None  # where this process scores (it leads)
        self.trained: list[str] = []  # entries to acknowledge with the next checkpoint
        # Articles offered to the session and not yet placed (those waiting for the
        # vocabulary): the session holds entry ids, so a buffered document keeps no text.
        self.unplaced: dict[str, Article] = {}
        self.counters: Counter[str] = Counter(dict.fromkeys(COUNTERS, 0))
        self.checkpoint_seq = 0
        self.empty_since: float | None = None  # when reads began finding the stream empty
        self.idle_since: float | None = None  # time.time() it was reported idle (rates 0)
        # Articles learned, kept for revisits while the stream is quiet (None: revisits off).
        self.reservoir = reservoir
        # Every rank's reservoir state as the last checkpoint kept it (rank 0 sends them with
        # the model it resumed); a process loads its own once, when it resumes.
        self.reservoir_states: list[dict[str, Any] | None] = []
        self.reservoir_resumed = False
        self.fresh_at = 0.0  # time.monotonic() a read last brought entries
        # Whether the last read came back short of what it asked for: only then is nothing
        # unread, and a revisit may go before the next read.
        self.drained = True
        self.recent = RecentRates()
        # Sizes, the articles behind each topic and the stream's tally (the deciding rank's:
        # it publishes them); built with each model, from its checkpoint when it has one.
        self.record_config = record
        self.record: TopicRecord | None = None
        self.placed: dict[str, ArticleRef] = {}  # entry -> its article, until learned
        self.vocabulary_checkpoint = False  # the words changed: the next plan checkpoints

    @property
    def model(self) -> StreamingLDA | None:
        """The learner, once a vocabulary exists."""
        return self.session.model

    @property
    def vocab(self) -> Vocabulary | None:
        return self.session.vocabulary

    # --- lifecycle -------------------------------------------------------------------------
    def run(self) -> None:
        """Learn until ``stop`` is set (on any rank); then checkpoint and acknowledge what it
        contains. A group's rank that fails lets the exception end it at once (torchrun
        restarts the group): the others would wait for it in the final checkpoint."""
        try:
            if self.coordinator.leads:
                self._start()
            else:
                self.redis("creating the consumer group", self.queue.ensure_group)
            while self.coordinator.proceed(self.stop.is_set(), self._counts(), self._busy()):
                self.step()
        except RedisGaveUp as exc:
            if not self.coordinator.finishes_alone:
                self._close()
                raise
            log.warning("%s", exc)
        except BaseException:
            if self.coordinator.finishes_alone:
                self._shutdown()
            else:
                self._close()
            raise
        self._shutdown()

    def _counts(self) -> Counts:
        return Counts(waiting=len(self.trained), buffered=len(self.session.buffer))

    def _busy(self) -> tuple[int, float]:
        return self.session.docs_here, self.session.busy_s

    def _start(self) -> None:
        self.redis("creating the consumer group", self.queue.ensure_group)
        control = self.redis("reading control", functools.partial(read_control, self.client))
        self.checkpoint_seq = control.checkpoint_seq
        if self.checkpointer.exists:
            model, vocab, extra = self.checkpointer.load()
            self.counters.update(extra.get("counters", {}))
            done = [str(e) for e in extra.get("acked_entries", [])]
            self.redis("acknowledging checkpointed entries", lambda: self.queue.ack(done))
            self.reservoir_states = _reservoir_states(extra)
            self._resume_reservoir(self.reservoir_states)
            log.info(
                "resumed from %s at %d documents (%s, K=%d, W=%d)",
                self.checkpointer.path,
                model.docs_seen,
                model.config.sampler,
                model.config.n_topics,
                len(vocab),
            )
            self._set_model(model, vocab, extra)
            self.checkpointer.resumed(model.docs_seen, extra)
        elif self.config.vocab is not None:
            self._new_model(Vocabulary.load(self.config.vocab), None)
        else:
            # A held-out set stored by a run that left no checkpoint is reused (it is never
            # trained on): its texts come first once the vocabulary exists.
            self.session.stored_heldout = self.redis(
                "reading the held-out set", self.heldout_store.texts
            )
            log.info(
                "building a vocabulary of %d words from the first %d documents",
                self.session.config.vocab_size,
                self.session.config.vocab_docs,
            )

    def _shutdown(self) -> None:
        """Show where learning stopped, then the final checkpoint (every rank together)."""
        try:
            if self.model is not None:
                try:
                    self._finish_scoring(self.coordinator.stop_scoring_s)
                    self._publish_if_stale()  # publication is throttled: show where it stopped
                except RedisGaveUp as exc:
                    log.warning("%s: the betas not scored are in the checkpoint", exc)
            if self.coordinator.agree(self.model is not None) and self.model is not None:
                try:
                    self._checkpoint("stop", final=True)
                except RedisGaveUp as exc:
                    log.warning(
                        "%s: the checkpoint lists the entries; they are acknowledged on restart",
                        exc,
                    )
        finally:
            self._close()

    def _close(self) -> None:
        if self.evaluator is not None:
            self.evaluator.close()

    def _finish_scoring(self, most_s: float | None = None) -> None:
        """Wait up to eval_stop_wait_s (or ``most_s``, if shorter) for the betas handed off
        (the rest stay in the checkpoint, scored after a restart)."""
        evaluator = self.evaluator
        if evaluator is None or not evaluator.ready or not evaluator.pending:
            return
        wait = self.config.eval_stop_wait_s
        deadline = time.monotonic() + (wait if most_s is None else min(wait, most_s))
        while evaluator.pending and (left := deadline - time.monotonic()) > 0:
            self._collect(timeout=min(left, 0.5))

    # --- one iteration ---------------------------------------------------------------------
    def step(self) -> None:
        """Follow the plan: take the model sent, checkpoint if due, warm up, idle while paused,
        or read and train one minibatch (or idle briefly)."""
        plan = self.coordinator.plan(self._decide, self._counts(), self._learner)
        if plan.model is not None and not self.coordinator.leads:
            self._receive(*plan.model)
        if plan.checkpoint is not None:
            self._checkpoint(plan.checkpoint)
        if not plan.ready:
            if self.coordinator.leads:
                self._warm_up()
            return
        if plan.paused:
            if plan.buffered:  # train what is in hand; the next plan checkpoints it
                self._train_or_idle(read=False, revisit=False)
            else:
                self._beat()
                self.stop.wait(self.config.read_block_ms / 1000)
            return
        read = self._read_in() if self.session.wanted else False
        self._train_or_idle(read=read)

    def _decide(self, counts: Counts) -> Plan:
        """The deciding process's plan: the operator's control, the checkpoint due (the
        checkpointer's one rule) and whether warm-up is over."""
        self._collect()
        control = self.redis("reading control", functools.partial(read_control, self.client))
        requested = control.checkpoint_seq > self.checkpoint_seq
        self.checkpoint_seq = max(self.checkpoint_seq, control.checkpoint_seq)
        reason = "vocabulary" if self.vocabulary_checkpoint else None
        self.vocabulary_checkpoint = False
        reason = reason or self.checkpointer.due(
            self.model,
            requested=requested,
            paused=control.paused,
            waiting=counts.waiting,
            buffered=counts.buffered,
            idle=self._idle_long_enough,
        )
        heldout_done = self.session.heldout is not None or self.config.heldout == 0
        ready = self.model is not None and heldout_done
        return Plan(ready, control.paused, reason, counts.buffered)

    def _learner(self) -> tuple[dict[str, Any], list[str], list[dict[str, Any] | None]] | None:
        """The learner, for a group's other ranks, with their reservoirs' states as the
        checkpoint it came from kept them (none for a new model)."""
        if self.model is None or self.vocab is None:
            return None
        return self.model.state_dict(), list(self.vocab.words), self.reservoir_states

    def _warm_up(self) -> None:
        """A group's rank 0, before training: read for the vocabulary and the held-out set."""
        if not self._read_in():
            self._beat()

    def _read_in(self) -> bool:
        """Read entries and hand them to the session; True if any came. The read that completes the
        vocabulary's documents (``vocab_docs`` of them) then gives the heap pages their articles
        and the count held back to the system: they are freed with :meth:`_read_entries`' frame,
        and only small allocations would reuse them."""
        begun = self.model is not None
        read = self._read_entries()
        if not begun and self.model is not None:
            release_freed_memory()
        return read

    def _read_entries(self) -> bool:
        entries = self._read()
        if entries:
            self.empty_since = self.idle_since = None
            self.fresh_at = time.monotonic()
            self._ingest(entries)
        return bool(entries)

    def _train_or_idle(self, *, read: bool, revisit: bool = True) -> None:
        """One step when the coordinator says so, or a revisit while no fresh step is due (not
        while paused); else, with nothing read, show the latest topics and go idle once the
        stream has stayed empty long enough."""
        alone = self.coordinator.ranks == 1
        if revisit and alone and self._fresh_not_due() and self._revisit():
            return
        buffer = self.session.buffer[: self.session.config.batch_size]  # what take() takes
        step = self.coordinator.step(
            len(buffer), sum(len(ids) for _, ids in buffer), self.session.batch_ready, read
        )
        if isinstance(step, Step):
            self._train_next(step)
        elif revisit and not alone and self._revisit():
            return  # a group: no rank had a fresh document, every rank revisits together
        elif not step and not self._publish_if_stale():  # the stream ran dry: show it now
            self._beat()
            if self.model is not None and self._idle_long_enough():
                self._go_idle()

    def _fresh_not_due(self) -> bool:
        """No fresh step is due yet, so a revisit may take the time: the last read found
        nothing more unread, no whole minibatch is in hand, and entries came less than
        read_block_ms ago (a blocking read would have waited for more that long before
        training part of one). A read that filled its request is followed by another read: a
        backlog's held-out or empty articles leave the minibatch short, not the stream."""
        if self.session.batch_ready or not self.drained:
            return False
        if not self.session.buffer:
            return True
        return time.monotonic() - self.fresh_at < self.config.read_block_ms / 1000

    def _idle_long_enough(self) -> bool:
        """True once reads have found the stream empty for checkpoint_idle_s: a finished
        source's tail is acknowledged promptly, a slow live source does not checkpoint on
        every gap between its requests."""
        now = time.monotonic()
        if self.empty_since is None:
            self.empty_since = now
        return now - self.empty_since >= self.config.checkpoint_idle_s

    def _go_idle(self) -> None:
        """Say once that the stream stayed empty: a snapshot with rates 0 and ``idle_since``
        (the last rate shown for as long as the worker idled misled operators)."""
        if self.idle_since is not None or self.model is None or not self.model.docs_seen:
            return
        assert self.empty_since is not None
        self.idle_since = time.time() - (time.monotonic() - self.empty_since)
        self._publish_snapshot()

    def _read(self) -> list[Entry]:
        """Up to a minibatch of entries, waiting up to read_block_ms for them; not waiting
        while there is something to revisit (the learner revisits instead of waiting)."""
        wanted = self.session.wanted
        block_ms = None if self._may_revisit() else self.config.read_block_ms
        entries = self.redis(
            "reading the stream",
            lambda: self.queue.read(self.consumer, wanted, block_ms=block_ms),
        )
        self.drained = len(entries) < wanted
        return entries

    # --- documents -------------------------------------------------------------------------
    def _ingest(self, entries: list[Entry]) -> None:
        """Hand the entries to the session; store and acknowledge the held-out ones, queue the
        empty ones for acknowledgement. The first vocab_docs entries wait for the vocabulary.
        The session keeps entry ids and word ids: an article's text is dropped once placed."""
        begun = self.model is not None
        had_heldout = self.session.heldout is not None
        self.unplaced.update(entries)
        try:
            placed = self.session.offer((entry_id, article.text) for entry_id, article in entries)
        except (VocabularyError, ModelTooLarge) as exc:
            raise CannotLearn(str(exc)) from exc
        if not begun and self.model is not None:
            assert self.vocab is not None
            self._new_model(self.vocab, self.model)  # tells the evaluator of a held-out set
            had_heldout = self.session.heldout is not None
        for where in placed:
            entry_id = where.item
            article = self.unplaced.pop(entry_id, None)  # None: a duplicate, placed already
            if where.kind == "empty":
                self.counters["empty_docs"] += 1
                self.trained.append(entry_id)  # nothing to learn: acknowledged with the rest
            elif where.kind == "heldout" and article is not None:
                self._hold_out(entry_id, article)
            elif where.kind == "train" and article is not None:
                if self.record_config is not None and self.coordinator.leads:
                    self.placed[entry_id] = (article.title, article.id, article.source)
                if self.reservoir is not None:
                    self.reservoir.offer(article.text)  # held-out articles never enter it
        if not had_heldout and self.session.heldout is not None:
            self._heldout_complete()

    def _hold_out(self, entry_id: str, article: Article) -> None:
        self.redis(
            "storing a held-out article",
            functools.partial(self.heldout_store.add, entry_id, article),
        )
        self.redis(
            "acknowledging a held-out article", functools.partial(self.queue.ack, [entry_id])
        )

    def _heldout_complete(self) -> None:
        if self.evaluator is not None:
            self.evaluator.set_heldout(self.session.heldout_docs)
        log.info("held-out set complete: %d documents", len(self.session.heldout_docs))

    # --- the model -------------------------------------------------------------------------
    def _new_model(self, vocab: Vocabulary, model: StreamingLDA | None) -> None:
        """A first learner over ``vocab`` (``model``: the one the session began)."""
        try:
            model = model or self.session.new_model(len(vocab))
        except ModelTooLarge as exc:
            raise CannotLearn(str(exc)) from exc
        self._set_model(model, vocab)
        self._checkpoint("vocabulary", alone=True)  # persist it before anything depends on it

    def _set_model(
        self, model: StreamingLDA, vocab: Vocabulary, extra: dict[str, Any] | None = None
    ) -> None:
        """Learn with ``model`` (new, resumed or restored, by the deciding process); its
        checkpoint's ``extra`` says which perplexity points were published and which betas
        still wait for scoring."""
        self.coordinator.model_changed()
        if self.vocab is not None and self.vocab.words != vocab.words:
            self.publisher.vocabulary_changed()  # a restore went back before a change
        self.session.begin(vocab, model)
        self._took_emptied()
        self.session.load_counts_state((extra or {}).get("word_counts"))
        self._new_record(model, vocab, extra)
        # Checkpoints before asynchronous scoring had every point up to docs_seen scored.
        evaluations = (extra or {}).get("evaluations", {})
        scored_docs = int(evaluations.get("scored_docs", model.docs_seen))
        pending = [(int(docs), beta) for docs, beta in evaluations.get("pending", [])]
        self.redis(
            "truncating the perplexity history",
            functools.partial(truncate_perplexity, self.client, scored_docs),
        )
        self.redis(
            "truncating the topics' history",
            functools.partial(truncate_topic_history, self.client, scored_docs),
        )
        self._start_evaluator(model, scored_docs, pending)
        session = self.session
        if session.heldout is not None:
            self._heldout_complete()
        elif self.config.heldout and not session.heldout_texts:  # resumed: read it back
            session.restore_heldout(
                self.redis("reading the held-out set", self.heldout_store.texts)
            )
            if session.heldout is not None:
                self._heldout_complete()

    def _start_evaluator(
        self, model: StreamingLDA, scored_docs: int, pending: list[tuple[int, torch.Tensor]]
    ) -> None:
        """A scoring process for ``model``'s scorer, the betas ``pending`` still to score."""
        if self.evaluator is not None:
            self.evaluator.close()
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

    def _refresh_vocabulary(self) -> None:
        """Move to the words the stream's counts now rank first, if they changed (docs/model.md,
        "When the vocabulary changes"). The betas handed off are scored first, in the words they
        were learned in (up to eval_stop_wait_s; those left are skipped, counted); then the
        learner, the minibatch in hand, the held-out set, the record and the word intervals
        follow, scoring starts over on the re-encoded held-out set, the API gets the new model
        at once, and the next plan checkpoints (a group's other ranks get the model with it)."""
        words = self.session.next_words()
        if words is None:
            return
        self._finish_scoring()
        evaluator = self.evaluator
        if evaluator is not None and evaluator.pending:
            self.counters["evals_skipped"] += len(evaluator.pending)
        old = self.vocab
        keep = self.session.refresh(words)
        model, vocab, counts = self.model, self.vocab, self.session.word_counts
        assert keep is not None and model is not None and vocab is not None and old is not None
        self.counters["vocab_refreshes"] += 1
        self._took_emptied()
        if self.record is not None and counts is not None:
            self.record.remap_words(keep, counts.known)
        self.publisher.vocabulary_changed()
        self.coordinator.model_changed()
        self.vocabulary_checkpoint = True
        self._start_evaluator(model, model.docs_seen, [])
        if self.session.heldout is not None:
            self._heldout_complete()
        entered = int((keep < 0).sum())
        log.info(
            "vocabulary %d at %d documents: %d words entered, %d left, %d stayed",
            vocab.version,
            model.docs_seen,
            entered,
            len(old) - (len(vocab) - entered),
            len(vocab) - entered,
        )
        self.publisher.model(model, vocab, self._figures())
        self._publish_snapshot()

    def _took_emptied(self) -> None:
        """Entries a change of words left with no word in hand: acknowledged as empty, never
        learned."""
        emptied = self.session.take_emptied()
        self.counters["empty_docs"] += len(emptied)
        self.trained += emptied
        for entry in emptied:
            self.placed.pop(entry, None)

    def _new_record(
        self, model: StreamingLDA, vocab: Vocabulary, extra: dict[str, Any] | None
    ) -> None:
        """The topics' record for ``model`` (on the deciding rank), as its checkpoint kept it."""
        config = self.record_config
        if config is None or not self.coordinator.leads:
            return
        self.record = TopicRecord(config, model.config.n_topics, len(vocab))
        kept = (extra or {}).get("topics")
        if kept is not None:
            self.record.load_state_dict(kept)

    def _receive(
        self,
        epoch: int,
        state: dict[str, Any],
        words: list[str],
        reservoirs: list[dict[str, Any] | None],
    ) -> None:
        """A group's other ranks: rank 0's model (new, resumed or restored), and on resuming,
        this rank's reservoir as the checkpoint kept it."""
        model = self.session.begin(
            Vocabulary(words), StreamingLDA.from_state_dict(state, self.device)
        )
        self._took_emptied()
        self._resume_reservoir(reservoirs)
        log.info("model %d at %d documents from the deciding rank", epoch, model.docs_seen)

    def _train_next(self, step: Step) -> None:
        self.idle_since = None  # (a group's other ranks may have read what this one did not)
        entries, batch = self.session.take()
        counts: list[torch.Tensor] = []  # the documents' E[n_dk], for the topics' record
        try:
            # Checks theta is finite.
            self.session.learn(
                batch,
                step.reducer,
                step.where,
                documents=None if self.record is None else counts.append,
            )
        except NonFiniteError as exc:
            self._restore(exc, entries)
            return
        self._record(entries, batch, counts)
        self.counters["updates"] += 1
        # A group's documents in all, as its docs/s and revisits count them.
        self.recent.add(fresh=len(entries) if step.where is None else step.where.documents)
        self.recent.learned(entry_time(e) for e in entries)
        self.trained += entries
        model = self.model
        assert model is not None
        self.publisher.trained(model)
        if self.session.refresh_due():  # only where words are counted: the deciding rank
            self._refresh_vocabulary()
        vocab = self.vocab
        assert vocab is not None
        if self.session.evaluation_due() and self.evaluator is not None:
            self._hand_off()
        if self.publisher.model_due():
            self.publisher.model(model, vocab, self._figures())
        # Rendering top words every minibatch would cost the worker and the API CPU.
        if self.publisher.snapshot_due():
            self._publish_snapshot()
        else:
            self._beat()

    def _record(self, entries: list[str], batch: Batch, counts: list[torch.Tensor]) -> None:
        """A fresh minibatch learned: its documents and their topics into the record."""
        record, model = self.record, self.model
        articles = [self.placed.pop(e, ("", e, "")) for e in entries]
        if record is None or model is None or not counts:
            return
        record.learned(batch.words, counts[0], articles, model.docs_seen)

    def _may_revisit(self) -> bool:
        """Whether a revisit can be taken: revisits on, a learner with articles held, and
        fewer than ``revisit_ratio`` revisited documents per fresh one. A group's ranks decide
        on the learner's counts alone, the same on every rank (a rank with nothing held joins
        the step with no documents)."""
        reservoir, model = self.reservoir, self.model
        if reservoir is None or model is None:
            return False
        if not reservoir.size and self.coordinator.ranks == 1:
            return False
        return model.revisited_docs < self.config.revisit_ratio * model.docs_seen

    def _revisit(self) -> bool:
        """One minibatch of articles learned before, drawn from the reservoir, while no fresh
        step is due (docs/samplers.md, "Revisiting a reservoir"); False when none can be
        taken."""
        reservoir, model = self.reservoir, self.model
        if reservoir is None or model is None or not self._may_revisit():
            return False
        size = self.session.config.batch_size
        batch = self.session.encode(
            self.redis("reading the reservoir", lambda: reservoir.draw(size))
        )
        step = self.coordinator.revisit_step(batch)
        if step is None:
            return False
        try:
            # A share of the stream's step: at most revisit_ratio of them per fresh document,
            # they add averaging, not process time (docs/samplers.md).
            scale = revisit_step_scale(self.config.revisit_ratio)
            self.session.learn(step.batch, step.reducer, step.where, revisit=True, step_scale=scale)
        except NonFiniteError as exc:
            self._restore(exc, [])
            return True
        self.recent.add(revisited=step.documents)
        vocab = self.vocab
        assert vocab is not None
        self.publisher.trained(model)
        if self.publisher.model_due():
            self.publisher.model(model, vocab, self._figures())
        if self.publisher.snapshot_due():
            self._publish_snapshot()
        else:
            self._beat()
        return True

    def _beat(self) -> None:
        self.publisher.beat()

    def _hand_off(self) -> None:
        """A multiple of eval_every: a copy of beta_mean (the topics served) goes to the scoring
        process (or is skipped, counted, when eval_backlog betas already wait); the learner does
        not wait for it."""
        model, vocab, evaluator = self.model, self.vocab, self.evaluator
        assert model is not None and vocab is not None and evaluator is not None
        if self.session.heldout is None:
            return
        if not evaluator.submit(model.docs_seen, model.beta_mean):
            # By design (scoring must not stall the learner): counted, and said without alarm.
            self.counters["evals_skipped"] += 1
            log.info(
                "perplexity at %d documents skipped (counted in evals_skipped): %d betas "
                "already wait for scoring",
                model.docs_seen,
                len(evaluator.pending),
            )
        self.publisher.model(model, vocab, self._figures())

    def _collect(self, timeout: float = 0.0) -> None:
        """Publish the points scored since the last call, then commit each (see evaluator)."""
        if self.evaluator is None:
            return
        for scored in self.evaluator.poll(timeout):
            if self.record is not None:
                self.record.evaluated(scored.docs_seen, scored.topics)
            vocab = self.vocab
            assert vocab is not None
            sizes = None if self.record is None else self.record.sizes()
            self.publisher.topics_scored(scored, vocab, sizes)
            if self.publisher.point(scored, vocab.version):
                log.info(
                    "docs %d perplexity %.1f averaged %.1f | %.1f docs/s %.0f tokens/s | "
                    "restores %d",
                    scored.docs_seen,
                    scored.perplexity,
                    scored.averaged,
                    *self._rates(),
                    self.counters["nonfinite_restores"],
                )
            self.evaluator.commit(scored)

    def _restore(self, exc: Exception, entries: list[str]) -> None:
        """Back to the last checkpoint; the documents since then are dropped (see module doc).
        Every rank of a group meets the same non-finite theta: rank 0 restores its checkpoint
        (sent to the others by the next plan); each rank's dropped entries are acknowledged
        with the next checkpoint."""
        if not self.coordinator.leads:
            self.trained = entries + self.trained
            self.session.model = None  # until rank 0's restored model arrives
            return
        assert self.vocab is not None
        dropped = entries + self.trained
        for entry in entries:  # never learned: their articles are not the record's
            self.placed.pop(entry, None)
        self.counters["nonfinite_restores"] += 1
        self.counters["dropped_docs"] += len(dropped)
        extra: dict[str, Any] = {}
        vocab = self.vocab
        if self.checkpointer.exists:
            model, vocab, extra = self.checkpointer.load()
        else:
            model = self.session.new_model(len(self.vocab))
        log.error(
            "%s: restored the checkpoint at %d documents (restore %d); %d documents dropped",
            exc,
            model.docs_seen,
            self.counters["nonfinite_restores"],
            len(dropped),
        )
        self.trained = dropped
        self.publisher.forget_samples()  # those of the dropped trajectory
        self._set_model(model, vocab, extra)
        self._checkpoint("restore", alone=True)
        self._publish_snapshot()

    # --- durability ------------------------------------------------------------------------
    def _checkpoint(self, reason: str, *, final: bool = False, alone: bool = False) -> None:
        """The deciding process writes one checkpoint listing every rank's entries and
        reservoir state (each rank writes its reservoir's slots first), then each rank
        acknowledges its own (``alone``: the deciding process only, before any rank trains on
        a new model, when it has nothing else to list; the other ranks' reservoir states are
        then the last ones gathered)."""
        done = list(self.trained)
        mine = self._reservoir_state()
        if alone:
            every, states = done, [mine, *self.reservoir_states[1:]]
        else:
            every, states = self.coordinator.gather(done), self.coordinator.gather_all(mine)
        if self.coordinator.leads:
            self._save_checkpoint(reason, every, states)
        if not alone:
            self.coordinator.written()
        self.checkpointer.acknowledge(done, final=final)
        self.trained = self.trained[len(done) :]
        if self.coordinator.leads:
            self._after_checkpoint(reason, len(every), final=final)

    def _reservoir_state(self) -> dict[str, Any] | None:
        """This rank's reservoir state for a checkpoint, its slots written first (the
        checkpoint then counts only slots that are in Redis); None without revisits."""
        reservoir = self.reservoir
        if reservoir is None:
            return None
        self.redis("writing the reservoir", reservoir.flush)
        return reservoir.state_dict()

    def _resume_reservoir(self, states: list[dict[str, Any] | None]) -> None:
        """Load this rank's reservoir state from a checkpoint's, once per process (a restore
        after a non-finite step keeps the reservoir as it is); a rank the checkpoint did not
        know starts empty."""
        reservoir, rank = self.reservoir, self.coordinator.rank
        if reservoir is None or self.reservoir_resumed or rank >= len(states):
            return
        kept = states[rank]
        if kept is not None:
            self.redis("reading the reservoir", lambda: reservoir.load_state_dict(kept))
        self.reservoir_resumed = True

    def _save_checkpoint(
        self, reason: str, done: list[str], reservoirs: list[dict[str, Any] | None]
    ) -> None:
        model, vocab = self.model, self.vocab
        assert model is not None and vocab is not None
        self.counters["checkpoints"] += 1
        extra: dict[str, Any] = {"counters": dict(self.counters)}
        if self.record is not None:
            extra["topics"] = self.record.state_dict()
        extra["word_counts"] = self.session.counts_state()
        if self.reservoir is not None:
            self.reservoir_states = list(reservoirs)
            extra["reservoir"] = reservoirs[0]  # rank 0's, where older code reads it
            extra["reservoirs"] = self.reservoir_states
        if self.evaluator is not None:
            # The model's evaluation state is the scorer's as of the last published point.
            state, scored_docs, pending = self.evaluator.checkpoint_state()
            model.scorer().load_state_dict(state)
            extra["evaluations"] = {"scored_docs": scored_docs, "pending": pending}
        self.checkpointer.save(model, vocab, reason, done, extra)

    def _after_checkpoint(self, reason: str, acknowledged: int, *, final: bool) -> None:
        model, vocab = self.model, self.vocab
        assert model is not None and vocab is not None
        log.info(
            "checkpoint (%s) at %d documents; %d entries acknowledged",
            reason,
            model.docs_seen,
            acknowledged,
        )
        if not final:
            self.publisher.model(model, vocab, self._figures())
            if model.docs_seen:  # no topics before the first update
                self._publish_snapshot()

    # --- publication -----------------------------------------------------------------------
    def _figures(self) -> StreamFigures | None:
        """The stream's figures published with the model (None without a record)."""
        return None if self.record is None else self.record.figures()

    def _rates(self) -> tuple[float, float]:
        return self.coordinator.rates(*self.session.rates())

    def _publish_if_stale(self) -> bool:
        """Publish a snapshot if the last one is behind (a publisher's own judgement); True if
        it did."""
        if self.model is None or not self.publisher.stale(self.model):
            return False
        self._publish_snapshot()
        return True

    def _publish_snapshot(self) -> None:
        """A snapshot with the worker's figures (rates 0 while idle)."""
        model, vocab = self.model, self.vocab
        assert model is not None and vocab is not None
        idle = self.idle_since is not None
        docs_per_s, tokens_per_s = (0.0, 0.0) if idle else self._rates()
        counters = {
            **self.counters,
            "redis_retries": self.redis.retries,
            "heldout_docs": len(self.session.heldout_docs),
            "unacked": len(self.trained),
            "evals_waiting": 0 if self.evaluator is None else len(self.evaluator.pending),
            "scorer_restarts": 0 if self.evaluator is None else self.evaluator.restarts,
        }
        fresh_per_s, revisit_per_s = (0.0, 0.0) if idle else self.recent.rates()
        wait = None if idle else self.recent.wait_quantiles()
        reservoir = self.reservoir
        status = WorkerStatus(
            docs_per_s=docs_per_s,
            tokens_per_s=tokens_per_s,
            fresh_docs_per_s=fresh_per_s,
            revisit_docs_per_s=revisit_per_s,
            fresh_wait_s=None if wait is None else wait[0],
            fresh_wait_p95_s=None if wait is None else wait[1],
            reservoir_articles=0 if reservoir is None else reservoir.size,
            reservoir_passes=0.0 if reservoir is None else reservoir.passes,
            rank_docs_per_s=[0.0 if idle else r for r in self.coordinator.rank_rates()],
            counters={name: int(value) for name, value in counters.items()},
            idle_since=self.idle_since,
            checkpoint_at=self.checkpointer.at,
            topic_size=None if self.record is None else self.record.sizes(),
            topic_articles=None
            if self.record is None
            else self.record.article_rows(model.docs_seen),
            term_frequency=None if self.record is None else self.record.tally.term_frequency,
        )
        self.publisher.snapshot(model, vocab, status)


def _reservoir_states(extra: dict[str, Any]) -> list[dict[str, Any] | None]:
    """Each rank's reservoir state in a checkpoint's ``extra`` (older ones kept rank 0's alone)."""
    states = extra.get("reservoirs")
    if states is not None:
        return list(states)
    return [extra["reservoir"]] if extra.get("reservoir") is not None else []
