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
unread entries only (see :mod:`service.ingest.queue`), so those triggers are what bound the entries
held here: the vocabulary's
documents, or fewer than ``checkpoint_max_unacked`` plus two minibatches.

The topics published are ``beta_mean`` (:mod:`lda.averaging`), the better estimate: the
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
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import redis

from lda.batch import Batch
from lda.model import NonFiniteError, StreamingLDA, resolve_device
from lda.vocab import Vocabulary
from service.ingest.queue import ArticleQueue
from service.ingest.sources import Article
from service.learn.evaluator import Evaluator, Scored
from service.learn.heldout_store import HeldoutStore
from service.learn.model_store import CHECKPOINT_NAME, load_model, save_model
from service.learn.session import LearningSession, ModelTooLarge, VocabularyError
from service.learn.topic_watch import TopicWatch
from service.settings import Settings
from service.store.counters import WORKER_COUNTERS
from service.store.redis_retry import RedisGaveUp, RedisRetry
from service.store.snapshot import (
    PerplexityPoint,
    Snapshot,
    append_perplexity,
    beat,
    publish_model,
    publish_snapshot,
    ranked_words,
    read_control,
    truncate_perplexity,
)

log = logging.getLogger(__name__)

# Snapshots are spaced at least this many times the last one's cost: at K = 1,000,
# W = 100,000 one takes ~0.25 s (the top words are a pass over the chain), published every
# second it took a quarter of the worker's time.
PUBLISH_SHARE = 10
# ... but never further apart than this for that reason (a first snapshot that compiled its
# kernels took seconds, and must not hold the next one back for a minute).
PUBLISH_MAX_GAP_S = 10.0

Entry = tuple[str, Article]  # a stream entry: its id and its article

# The worker's counters in every snapshot (zero until they happen), kept across restarts.
COUNTERS = WORKER_COUNTERS


class CannotLearn(Exception):
    """The worker cannot go on learning (no vocabulary could be built, the model does not fit in
    memory): waiting or retrying cannot help; the ``worker`` command ends the process with it."""


class Worker:
    """One learner fed by the stream; :meth:`run` until ``stop`` is set."""

    def __init__(
        self, settings: Settings, client: redis.Redis, stop: threading.Event | None = None
    ) -> None:
        self.settings = settings
        self.client = client
        self.stop = stop or threading.Event()
        self.consumer = settings.consumer_name
        self.queue = ArticleQueue(client, settings)
        self.heldout_store = HeldoutStore(client, settings.heldout_key)
        self.redis = RedisRetry(settings, self.stop)
        self.device = resolve_device(settings.device)
        self.path = Path(settings.data_dir) / CHECKPOINT_NAME
        # The learning protocol: vocabulary, held-out set, minibatches, evaluation schedule.
        self.session: LearningSession[Entry] = LearningSession(settings, self.device)
        self.evaluator: Evaluator | None = None
        self.watch = TopicWatch(settings.uncertainty_samples)  # coherence, drift, intervals
        self.trained: list[str] = []  # entries to acknowledge with the next checkpoint
        self.counters: Counter[str] = Counter(dict.fromkeys(COUNTERS, 0))
        self.checkpoint_seq = 0
        self.last_checkpoint = time.monotonic()
        self.checkpoint_at: float | None = None  # time.time() of the last checkpoint written
        self.empty_since: float | None = None  # when reads began finding the stream empty
        self.idle_since: float | None = None  # time.time() it was reported idle (rates 0)
        self.checkpointed_docs = -1
        self.model_published = False
        self.published_docs = -1  # docs_seen of the last snapshot published
        self.published_quality: int | None = None  # its per-topic figures' evaluation
        self.published_at = -math.inf  # its time.monotonic()
        self.publish_cost_s = 0.0  # how long the last snapshot took to make and publish

    @property
    def model(self) -> StreamingLDA | None:
        """The learner, once a vocabulary exists."""
        return self.session.model

    @property
    def vocab(self) -> Vocabulary | None:
        return self.session.vocabulary

    # --- lifecycle -------------------------------------------------------------------------
    def run(self) -> None:
        """Learn until ``stop`` is set; then checkpoint and acknowledge what it contains."""
        try:
            self._start()
            while not self.stop.is_set():
                self.step()
        except RedisGaveUp as exc:
            log.warning("%s", exc)
        finally:
            self._shutdown()

    def _start(self) -> None:
        self.redis("creating the consumer group", self.queue.ensure_group)
        control = self.redis("reading control", functools.partial(read_control, self.client))
        self.checkpoint_seq = control.checkpoint_seq
        if self.path.exists():
            model, vocab, extra = load_model(self.path, self.device)
            self.counters.update(extra.get("counters", {}))
            self.checkpoint_at = extra.get("saved_at")
            done = [str(e) for e in extra.get("acked_entries", [])]
            self.redis("acknowledging checkpointed entries", lambda: self.queue.ack(done))
            log.info(
                "resumed from %s at %d documents (%s, K=%d, W=%d)",
                self.path,
                model.docs_seen,
                model.config.sampler,
                model.config.n_topics,
                len(vocab),
            )
            self._set_model(model, vocab, extra)
            self.checkpointed_docs = model.docs_seen
        elif self.settings.vocab is not None:
            self._new_model(Vocabulary.load(self.settings.vocab), None)
        else:
            # A held-out set stored by a run that left no checkpoint is reused (it is never
            # trained on): its texts come first once the vocabulary exists.
            self.session.stored_heldout = self.redis(
                "reading the held-out set", self.heldout_store.texts
            )
            log.info(
                "building a vocabulary of %d words from the first %d documents",
                self.settings.vocab_size,
                self.settings.vocab_docs,
            )

    def _shutdown(self) -> None:
        if self.model is None:
            return
        try:
            self._finish_scoring()
            self._publish_if_stale()  # publication is throttled: show where it stopped
        except RedisGaveUp as exc:
            log.warning("%s: the betas not scored are in the checkpoint", exc)
        try:
            self._checkpoint("stop", final=True)
        except RedisGaveUp as exc:
            log.warning(
                "%s: the checkpoint lists the entries; they are acknowledged on restart", exc
            )
        finally:
            if self.evaluator is not None:
                self.evaluator.close()

    def _finish_scoring(self, most_s: float | None = None) -> None:
        """Wait up to eval_stop_wait_s (or ``most_s``, if shorter) for the betas handed off
        (the rest stay in the checkpoint, scored after a restart)."""
        evaluator = self.evaluator
        if evaluator is None or not evaluator.ready or not evaluator.pending:
            return
        wait = self.settings.eval_stop_wait_s
        deadline = time.monotonic() + (wait if most_s is None else min(wait, most_s))
        while evaluator.pending and (left := deadline - time.monotonic()) > 0:
            self._collect(timeout=min(left, 0.5))

    # --- one iteration ---------------------------------------------------------------------
    def step(self) -> None:
        """Answer the operator, then read or train one minibatch (or idle briefly)."""
        self._collect()
        control = self.redis("reading control", functools.partial(read_control, self.client))
        if control.checkpoint_seq > self.checkpoint_seq:
            self.checkpoint_seq = control.checkpoint_seq
            if self.model is not None:
                self._checkpoint("requested")
        if control.paused:
            self._paused()
            return
        if reason := self._checkpoint_due():
            self._checkpoint(reason)
        if self.session.batch_ready:
            self._train_next()
            return
        entries = self._read()
        if entries:
            self.empty_since = self.idle_since = None
            self._ingest(entries)
            if self.session.batch_ready:
                self._train_next()
            return
        if self.session.buffer:  # the stream is empty: do not wait for a full minibatch
            self._train_next()
        elif not self._publish_if_stale():  # the stream ran dry: show the latest topics now
            self._beat()
            if self.model is not None and self._idle_long_enough():
                if self.trained:
                    self._checkpoint("drained")  # the source's tail: acknowledge it now
                self._go_idle()

    def _idle_long_enough(self) -> bool:
        """True once reads have found the stream empty for checkpoint_idle_s: a finished
        source's tail is acknowledged promptly, a slow live source does not checkpoint on
        every gap between its requests."""
        now = time.monotonic()
        if self.empty_since is None:
            self.empty_since = now
        return now - self.empty_since >= self.settings.checkpoint_idle_s

    def _go_idle(self) -> None:
        """Say once that the stream stayed empty: a snapshot with rates 0 and ``idle_since``
        (the last rate shown for as long as the worker idled misled operators)."""
        if self.idle_since is not None or self.model is None or not self.model.docs_seen:
            return
        assert self.empty_since is not None
        self.idle_since = time.time() - (time.monotonic() - self.empty_since)
        self._publish_snapshot()

    def _read(self) -> list[Entry]:
        wanted, block_ms = self.session.wanted, self.settings.read_block_ms
        return self.redis(
            "reading the stream",
            lambda: self.queue.read(self.consumer, wanted, block_ms=block_ms),
        )

    def _paused(self) -> None:
        """Train what is in hand, checkpoint it, then idle (still beating)."""
        if self.session.buffer and self.model is not None:
            self._train_next()
            return
        if self.model is not None and self.trained:
            self._checkpoint("paused")
        self._beat()
        self.stop.wait(self.settings.read_block_ms / 1000)

    def _checkpoint_due(self) -> str | None:
        """Why to checkpoint now: every checkpoint_every_s, or sooner once
        checkpoint_max_unacked trained entries wait (they bound the stream's length)."""
        if self.model is None:
            return None
        if len(self.trained) >= self.settings.checkpoint_max_unacked:
            return "unacked"
        changed = bool(self.trained) or self.model.docs_seen != self.checkpointed_docs
        elapsed = time.monotonic() - self.last_checkpoint
        return "periodic" if changed and elapsed >= self.settings.checkpoint_every_s else None

    # --- documents -------------------------------------------------------------------------
    def _ingest(self, entries: list[Entry]) -> None:
        """Hand the entries to the session; store and acknowledge the held-out ones, queue the
        empty ones for acknowledgement. The first vocab_docs entries wait for the vocabulary."""
        begun = self.model is not None
        had_heldout = self.session.heldout is not None
        try:
            placed = self.session.offer((entry, entry[1].text) for entry in entries)
        except (VocabularyError, ModelTooLarge) as exc:
            raise CannotLearn(str(exc)) from exc
        if not begun and self.model is not None:
            assert self.vocab is not None
            self._new_model(self.vocab, self.model)  # tells the evaluator of a held-out set
            had_heldout = self.session.heldout is not None
        for where in placed:
            entry_id, article = where.item
            if where.kind == "empty":
                self.counters["empty_docs"] += 1
                self.trained.append(entry_id)  # nothing to learn: acknowledged with the rest
            elif where.kind == "heldout":
                self._hold_out(entry_id, article)
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
        self._checkpoint("vocabulary")  # persist the vocabulary before anything depends on it

    def _set_model(
        self, model: StreamingLDA, vocab: Vocabulary, extra: dict[str, Any] | None = None
    ) -> None:
        """Learn with ``model`` (new, resumed or restored); its checkpoint's ``extra`` says which
        perplexity points were published and which betas still wait for scoring."""
        self.session.begin(vocab, model)
        # Checkpoints before asynchronous scoring had every point up to docs_seen scored.
        evaluations = (extra or {}).get("evaluations", {})
        scored_docs = int(evaluations.get("scored_docs", model.docs_seen))
        pending = [(int(docs), beta) for docs, beta in evaluations.get("pending", [])]
        self.redis(
            "truncating the perplexity history",
            functools.partial(truncate_perplexity, self.client, scored_docs),
        )
        if self.evaluator is not None:
            self.evaluator.close()
        scorer = model.scorer()
        self.evaluator = Evaluator(
            scorer.config,
            self.device,
            self.settings.threads,
            self.settings.eval_backlog,
            scorer.state_dict(),
            scored_docs,
            pending,
        )
        self.evaluator.start()
        session = self.session
        if session.heldout is not None:
            self._heldout_complete()
        elif self.settings.heldout and not session.heldout_docs:  # resumed: read it back
            session.restore_heldout(
                self.redis("reading the held-out set", self.heldout_store.texts)
            )
            if session.heldout is not None:
                self._heldout_complete()

    def _train_next(self) -> None:
        self.idle_since = None  # (a group's other ranks may have read what this one did not)
        items, batch = self.session.take()
        entries = [entry_id for entry_id, _ in items]
        try:
            self._learn(batch)  # checks theta is finite
        except NonFiniteError as exc:
            self._restore(exc, entries)
            return
        self.counters["updates"] += 1
        self.trained += entries
        if self.model is not None:
            self.watch.sample_from(self.model)
        if self.session.evaluation_due():
            self._hand_off()
        if not self.model_published:
            self._publish_model()
        if time.monotonic() - self.published_at >= self._publish_interval():
            self._publish_snapshot()
        else:  # rendering top words every minibatch would cost the worker and the API CPU
            self._beat()

    def _learn(self, batch: Batch) -> None:
        """One sampler step on ``batch`` (a group of ranks steps together)."""
        self.session.learn(batch)

    def _beat(self) -> None:
        self.redis("beating", functools.partial(beat, self.client))

    def _hand_off(self) -> None:
        """A multiple of eval_every: a copy of beta_mean (the topics served) goes to the scoring
        process (or is skipped, counted, when eval_backlog betas already wait); the learner does
        not wait for it."""
        model, evaluator = self.model, self.evaluator
        assert model is not None and evaluator is not None
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
        self._publish_model()

    def _collect(self, timeout: float = 0.0) -> None:
        """Publish the points scored since the last call, then commit each (see evaluator)."""
        if self.evaluator is None:
            return
        for scored in self.evaluator.poll(timeout):
            self._publish_point(scored)
            self.evaluator.commit(scored)

    def _publish_point(self, scored: Scored) -> None:
        # Before the finiteness check: the scoring process matched this beta's topics to the
        # previous one's whatever its perplexity.
        self.watch.scored(scored.docs_seen, scored.topics)
        if not (math.isfinite(scored.perplexity) and math.isfinite(scored.averaged)):
            log.warning("non-finite perplexity at %d documents: not published", scored.docs_seen)
            return
        point = PerplexityPoint(
            scored.docs_seen,
            scored.perplexity,
            scored.averaged,
            time.time(),
            _finite_or_none(scored.coherence),
            scored.diversity,
        )
        keep = self.settings.perplexity_history
        self.redis("appending perplexity", lambda: append_perplexity(self.client, point, keep=keep))
        log.info(
            "docs %d perplexity %.1f averaged %.1f | %.1f docs/s %.0f tokens/s | restores %d",
            scored.docs_seen,
            scored.perplexity,
            scored.averaged,
            *self._rates(),
            self.counters["nonfinite_restores"],
        )

    def _restore(self, exc: Exception, entries: list[str]) -> None:
        """Back to the last checkpoint; the documents since then are dropped (see module doc)."""
        assert self.vocab is not None
        dropped = entries + self.trained
        self.counters["nonfinite_restores"] += 1
        self.counters["dropped_docs"] += len(dropped)
        extra: dict[str, Any] = {}
        if self.path.exists():
            model, _vocab, extra = load_model(self.path, self.device)
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
        self.watch.forget_samples()  # those of the dropped trajectory
        self._set_model(model, self.vocab, extra)
        self._checkpoint("restore")
        self._publish_snapshot()

    # --- durability ------------------------------------------------------------------------
    def _checkpoint(self, reason: str, *, final: bool = False) -> None:
        """Write the checkpoint, then acknowledge the entries whose effect it holds."""
        done = list(self.trained)
        self._save_checkpoint(reason, done)
        self._acknowledge(done, final=final)
        self._after_checkpoint(reason, len(done), final=final)

    def _save_checkpoint(self, reason: str, done: list[str]) -> None:
        """The atomic checkpoint, listing ``done`` (acknowledged right after it, and again on a
        restart if the worker died in between)."""
        model, vocab = self.model, self.vocab
        assert model is not None and vocab is not None
        self.counters["checkpoints"] += 1
        extra: dict[str, Any] = {
            "counters": dict(self.counters),
            "acked_entries": done,
            "reason": reason,
            "saved_at": time.time(),
        }
        if self.evaluator is not None:
            # The model's evaluation state is the scorer's as of the last published point.
            state, scored_docs, pending = self.evaluator.checkpoint_state()
            model.scorer().load_state_dict(state)
            extra["evaluations"] = {"scored_docs": scored_docs, "pending": pending}
        save_model(self.path, model, vocab, self.settings, extra)
        self.last_checkpoint, self.checkpoint_at = time.monotonic(), extra["saved_at"]
        self.checkpointed_docs = model.docs_seen

    def _acknowledge(self, done: list[str], *, final: bool) -> None:
        """Acknowledge this worker's entries ``done`` (the first of ``trained``)."""
        wait = self.settings.stop_ack_wait_s if final else None
        self.redis("acknowledging trained entries", lambda: self.queue.ack(done), deadline_s=wait)
        self.trained = self.trained[len(done) :]

    def _after_checkpoint(self, reason: str, acknowledged: int, *, final: bool) -> None:
        model = self.model
        assert model is not None
        log.info(
            "checkpoint (%s) at %d documents; %d entries acknowledged",
            reason,
            model.docs_seen,
            acknowledged,
        )
        if not final:
            self._publish_model()
            if model.docs_seen:  # no topics before the first update
                self._publish_snapshot()

    # --- publication -----------------------------------------------------------------------
    def _rates(self) -> tuple[float, float]:
        return self.session.rates()

    def _rank_rates(self) -> list[float]:
        """Each rank's docs/s: none for a single worker (see GroupWorker)."""
        return []

    def _publish_model(self) -> None:
        model, vocab = self.model, self.vocab
        assert model is not None and vocab is not None
        gamma = model.config.gamma
        assert gamma is not None
        self.redis(
            "publishing the model",
            lambda: publish_model(
                self.client, model.beta_mean, vocab.words, docs_seen=model.docs_seen, gamma=gamma
            ),
        )
        self.model_published = True

    def _publish_if_stale(self) -> bool:
        """Publish a snapshot if the last one is behind the model or its per-topic figures
        behind the latest evaluation; True if it did."""
        if self.model is None:
            return False
        current = (self.published_docs, self.published_quality)
        if current == (self.model.docs_seen, self.watch.docs):
            return False
        self._publish_snapshot()
        return True

    def _publish_interval(self) -> float:
        """``publish_every_s``, or longer where a snapshot is costly (a large model's top words
        are a pass over K x W): publishing takes at most 1/PUBLISH_SHARE of the worker's time,
        the gap at most PUBLISH_MAX_GAP_S."""
        stretched = min(PUBLISH_SHARE * self.publish_cost_s, PUBLISH_MAX_GAP_S)
        return max(self.settings.publish_every_s, stretched)

    def _publish_snapshot(self) -> None:
        started = time.perf_counter()
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
        # Ranked without forming K x W where the chain is lazy (model.top_words).
        served_ids, served_weights = model.top_words(self.settings.topic_words)
        sample_ids, sample_weights = model.top_words(self.settings.topic_words, "sample")
        snapshot = Snapshot(
            docs_seen=model.docs_seen,
            updated_at=time.time(),
            sampler=model.config.sampler,
            step_size=model.step_size,
            device=str(self.device),
            vocab_size=len(vocab),
            topics=ranked_words((served_weights, served_ids), vocab.words),
            sample_topics=ranked_words((sample_weights, sample_ids), vocab.words),
            docs_per_s=docs_per_s,
            tokens_per_s=tokens_per_s,
            counters={name: int(value) for name, value in counters.items()},
            rank_docs_per_s=[0.0 if idle else rate for rate in self._rank_rates()],
            idle_since=self.idle_since,
            checkpoint_at=self.checkpoint_at,
            **self.watch.fields(served_ids),
        )
        self.redis(
            "publishing the snapshot", functools.partial(publish_snapshot, self.client, snapshot)
        )
        self.published_docs, self.published_at = model.docs_seen, time.monotonic()
        self.published_quality = self.watch.docs
        self.publish_cost_s = time.perf_counter() - started


def _finite_or_none(value: float) -> float | None:
    """Coherence is NaN without held-out documents: JSON and the API carry null instead."""
    return value if math.isfinite(value) else None
