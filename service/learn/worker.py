"""The worker: learns topics from the article stream and publishes them to Redis for the API.

One loop for a lone worker and for each rank of a data-parallel group (the protocol:
docs/service.md, "Learn: the worker"): :meth:`Worker.run` starts or resumes, repeats
:meth:`Worker.step` until stopped, then checkpoints. A step follows the coordinator's plan, reads
into the session (:mod:`service.learn.intake`) and takes a sampler step (fresh, or a revisit:
:mod:`service.learn.revisits`). The loop says what happened as events
(:mod:`service.learn.events`) and the parts listen: the topics' record, search, the seeds,
scoring and what is shown each handle their own, and keep their state under one key of the
checkpoint (:mod:`service.learn.checkpointer`).
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import redis
import torch

from lda.model import NonFiniteError, StreamingLDA
from lda.vocab import Vocabulary
from service.ingest.queue import ArticleQueue, entry_time
from service.learn import events
from service.learn.checkpointer import Checkpointer
from service.learn.coordinator import Coordinator, Counts, ModelState, NoStep, Plan, Step
from service.learn.entry_ref import EntryRef
from service.learn.evaluator import Scored
from service.learn.events import Event, Part, Parts
from service.learn.heldout_store import HeldoutStore
from service.learn.intake import Intake
from service.learn.operator import OperatorControl
from service.learn.publisher import Publisher
from service.learn.recent_rates import RecentRates
from service.learn.reservoir import Reservoir
from service.learn.revisits import Revisits
from service.learn.runtime import release_freed_memory
from service.learn.scoring import Scoring, ScoringConfig
from service.learn.search.part import Search
from service.learn.seeds import Seeds
from service.learn.session import Events, LearningSession
from service.learn.shaping_part import Shaping
from service.learn.showing import Showing
from service.learn.topic_record import Record, RecordConfig
from service.learn.vocabulary_refresh import VocabularyRefresh
from service.learn.worker_parts import Counters, LoopFigures, WorkerConfig
from service.store.control import read_control
from service.store.redis_retry import RedisGaveUp, RedisRetry
from service.store.topic_seeds import TopicSeeds

log = logging.getLogger(__name__)


class Worker:
    """One learner fed by the stream, alone or as a group's rank; :meth:`run` until ``stop``."""

    def __init__(
        self,
        config: WorkerConfig,
        *,
        client: redis.Redis,
        queue: ArticleQueue,
        retry: RedisRetry,
        session: LearningSession[EntryRef],
        checkpointer: Checkpointer,
        publisher: Publisher | None,
        coordinator: Coordinator,
        heldout_store: HeldoutStore,
        device: torch.device,
        stop: threading.Event,
        reservoir: Reservoir | None = None,
        record: RecordConfig | None = None,
        seeds: Mapping[int, TopicSeeds] | None = None,
    ) -> None:
        """``publisher``: None on a group's ranks that do not publish; ``seeds``: a seeds
        file's, set at start."""
        self.config = config
        self.session = session
        self.checkpointer = checkpointer  # holds the entries not yet acknowledged
        self.coordinator = coordinator
        self.stop = stop
        self.recent = recent = RecentRates()  # also: since when the stream is empty, idle
        self.control = OperatorControl(functools.partial(read_control, client), retry)
        self.intake = Intake(queue, config.consumer, session, retry)
        # The parts in the order events reach them (those that only listen absent when off):
        # the record answers a minibatch before search hears it; what is shown comes last.
        self.counters = counters = Counters()
        self.vocabulary = VocabularyRefresh(session, counters)
        self.revisits = Revisits(reservoir, config, coordinator, retry)
        limits = ScoringConfig(config.threads, config.eval_backlog, config.eval_stop_wait_s)
        self.scoring = Scoring(limits, device, client, retry, heldout_store, counters)
        self.seeds = Seeds(session, client, retry, seeds or {})
        parts: list[Part] = [counters, self.vocabulary, self.revisits, self.seeds]
        parts.append(LoopFigures(session, coordinator, recent, checkpointer, retry))
        if coordinator.leads and record is not None:
            parts.append(Record(record))
        if coordinator.leads and config.search:
            parts.append(Search(reservoir, config.search_refresh_share))
        parts.append(Shaping(session.shaper))
        parts.append(self.scoring)  # after them: its Redis calls come once they have begun
        self.parts = Parts(parts)
        if publisher is not None:
            self.parts.add(Showing(publisher, session, recent, self.parts))

    @property
    def model(self) -> StreamingLDA | None:
        """The learner, once a vocabulary exists."""
        return self.session.model

    def announce(self, event: Event) -> None:
        """``event`` to the parts; what they answer that concerns the loop, handled."""
        for answer in self.parts.announce(event):
            if isinstance(answer, events.SeedsChanged) and answer.prior:
                self.coordinator.model_changed()  # a group's other ranks get the prior

    # --- lifecycle -------------------------------------------------------------------------
    def run(self) -> None:
        """Learn until ``stop`` is set (on any rank); then checkpoint and acknowledge what it
        contains. A group's rank that fails lets the exception end it at once (torchrun
        restarts the group): the others would wait for it in the final checkpoint."""
        try:
            if self.coordinator.leads:
                self._start()
            else:
                self.intake.ensure_group()
            busy = self.session
            while self.coordinator.proceed(
                self.stop.is_set(), self._counts(), (busy.docs_here, busy.busy_s)
            ):
                self.step()
        except RedisGaveUp as exc:
            if not self.coordinator.finishes_alone:
                self.scoring.close()
                raise
            log.warning("%s", exc)
        except BaseException:
            if self.coordinator.finishes_alone:
                self._shutdown()
            else:
                self.scoring.close()
            raise
        self._shutdown()

    def _start(self) -> None:
        """The deciding process: resume from the checkpoint, or begin over a given vocabulary,
        or wait for the first documents to build one."""
        self.intake.ensure_group()
        self.control.start()
        if self.checkpointer.exists:
            model, vocab, extra = self.checkpointer.load()
            self.announce(events.Resumed(extra))  # the parts kept once a process
            self.checkpointer.resumed(model, len(vocab), extra)
            self.seeds.start()
            self._set_model(model, vocab, extra)
            return
        self.seeds.start()
        self.seeds.follow()
        if self.config.vocab is not None:
            self._set_model(None, Vocabulary.load(self.config.vocab), {})
            self._checkpoint("vocabulary", alone=True)  # persist it before anything depends on it
        else:  # a held-out set stored by a run that left no checkpoint is reused
            self.session.hold_stored(self.scoring.stored())

    def _shutdown(self) -> None:
        """Show where learning stopped, then the final checkpoint (every rank together)."""
        try:
            if self.model is not None:
                try:
                    self._scored(self.scoring.finish(self.coordinator.stop_scoring_s))
                    self.announce(events.Stopping())  # publication is throttled: show where
                except RedisGaveUp as exc:
                    log.warning("%s: the betas not scored are in the checkpoint", exc)
            if self.coordinator.agree(self.model is not None) and self.model is not None:
                try:
                    self._checkpoint("stop", final=True)
                except RedisGaveUp as exc:
                    log.warning("%s: the checkpoint lists the entries to acknowledge", exc)
        finally:
            self.scoring.close()
            self.announce(events.Stopped())  # the parts' threads end, whatever happened

    # --- one iteration ---------------------------------------------------------------------
    def step(self) -> None:
        """Follow the plan: take the model sent, checkpoint if due, warm up, idle while paused,
        or read and train one minibatch (or revisit, or idle briefly)."""
        coordinator, model, vocab = self.coordinator, self.model, self.session.vocabulary
        decided = self._decide(coordinator.counts(self._counts())) if coordinator.leads else None
        learner = None
        if coordinator.model_due and model is not None and vocab is not None:
            learner = (model.state_dict(), list(vocab.words), self.revisits.states)
        plan = coordinator.plan(decided, learner)
        if plan.model is not None and not coordinator.leads:
            self._receive(plan.model)
        if plan.checkpoint is not None:
            self._checkpoint(plan.checkpoint)
        if not plan.ready:  # a group's rank 0 reads for the vocabulary and the held-out set
            if coordinator.leads and not self._read():
                self.announce(events.Waiting())
        elif plan.paused and plan.buffered:  # train what is in hand; the next plan checkpoints
            self._train_or_idle(read=False, revisit=False)
        elif plan.paused:
            self.announce(events.Waiting())
            self.stop.wait(self.config.read_block_ms / 1000)
        else:
            self._train_or_idle(read=self._read() if self.session.wanted else False)

    def _counts(self) -> Counts:
        return Counts(unacked=len(self.checkpointer.unacked), buffered=len(self.session.buffer))

    def _decide(self, counts: Counts) -> Plan:
        """The deciding process's plan: the points scored, the operator's control, the
        checkpoint due (after a change of words, or by the checkpointer's one rule) and whether
        warm-up is over."""
        self._scored(self.scoring.collect())
        requested, paused, seeds_seq = self.control.read()
        self.announce(events.SeedsRequested(seeds_seq))
        reason = "vocabulary" if self.vocabulary.checkpoint_due() else None
        reason = reason or self.checkpointer.due(
            self.model,
            requested=requested,
            paused=paused,
            waiting=counts.unacked,
            buffered=counts.buffered,
            idle=functools.partial(self.recent.quiet_for, self.config.checkpoint_idle_s),
        )
        heldout_done = self.session.heldout is not None or self.config.heldout == 0
        return Plan(self.model is not None and heldout_done, paused, reason, counts.buffered)

    def _scored(self, points: Iterable[Scored]) -> None:
        """Each point scored: the labels its drift matching moved, then the point itself, go
        to the parts; then it counts as published."""
        for point in points:
            matched = point.topics.get("matched")
            moved = None if matched is None else events.LabelsMoved(matched, point.docs_seen)
            if moved is not None and moved.moves:  # (never while topics move: slots pinned)
                self.announce(moved)
            self.announce(events.Evaluated(point))
            self.scoring.commit(point)
            if math.isfinite(point.perplexity) and math.isfinite(point.averaged):
                figures = (point.docs_seen, point.perplexity, point.averaged)
                rates = self.coordinator.rates(*self.session.rates())
                restores = self.counters["nonfinite_restores"]
                line = "docs %d perplexity %.1f averaged %.1f | %.1f docs/s %.0f tokens/s"
                log.info(line + " | restores %d", *figures, *rates, restores)

    def _read(self) -> bool:
        """Read entries into the session; True if any came. The read that completes the
        vocabulary's documents begins the learner. Each article placed goes to the parts."""
        wanted = self.session.wanted
        got, placed, news = self.intake.read(wanted, self.revisits.block_ms(self.model))
        self.revisits.read(wanted, got)
        if not got:
            return False
        self.recent.read()
        if news.began:  # the vocabulary's documents are in: persist it at once
            self._set_model(self.session.model, self.session.vocabulary, {})
            self._checkpoint("vocabulary", alone=True)
        for where in placed:
            self.announce(events.ArticlePlaced(where.item, where.kind, where.text))
        self._news(news, self.intake.settle(placed))
        del placed
        if news.began:  # the vocabulary's texts are freed: give their heap pages back
            release_freed_memory()
        return True

    def _news(self, news: Events[EntryRef], empty: Iterable[str] = ()) -> None:
        """What the session reported: the held-out set complete (a learner begun with it got
        it when it began); entries with no word (``empty``, or left so by new words) are
        counted, and acknowledged with the next checkpoint."""
        if news.heldout and not news.began:
            self.announce(events.HeldoutComplete(self.session.heldout_docs))
        emptied = [*empty, *(ref.entry for ref in news.emptied)]
        self.counters["empty_docs"] += len(emptied)
        self.checkpointer.hold(emptied)

    def _train_or_idle(self, *, read: bool, revisit: bool = True) -> None:
        """One step when the coordinator says so, or a revisit while no fresh step is due (not
        while paused); else, with nothing read, show the latest topics and go idle once the
        stream has stayed empty long enough."""
        alone = self.coordinator.ranks == 1
        if revisit and alone and self.revisits.fresh_not_due(self.session) and self._revisit():
            return
        buffer = self.session.buffer[: self.session.config.batch_size]  # what take() takes
        step = self.coordinator.step(
            len(buffer), sum(len(ids) for _, ids in buffer), self.session.batch_ready, read
        )
        if isinstance(step, Step):
            self._learn(step)
        elif revisit and not alone and self._revisit():
            return  # a group: no rank had a fresh document, every rank revisits together
        elif step is NoStep.IDLE:  # the stream ran dry
            quiet = functools.partial(self.recent.quiet_for, self.config.checkpoint_idle_s)
            self.announce(events.Waiting(idle=True, quiet=quiet))

    def _learn(self, step: Step) -> None:
        """One fresh minibatch: learned, its topics to the parts, its entries held for a
        checkpoint."""
        self.recent.stepping()  # (a group's other ranks may have read what this one did not)
        refs, batch = self.session.take()
        entries = [ref.entry for ref in refs]
        counts: list[torch.Tensor] = []  # the documents' E[n_dk], for the parts that want them
        try:
            documents = counts.append if self.parts.listens(events.BatchLearned) else None
            self.session.learn(batch, step.reducer, step.where, documents=documents)
        except NonFiniteError as exc:
            self._restore(exc, entries)
            return
        model = self.model
        assert model is not None
        for r in self.session.take_reshaped():  # topic moves kept before the step
            self.announce(events.TopicsReshaped(r.moves, r.freed, r.merged, r.born, r.moved))
        if counts:
            self.announce(events.BatchLearned(batch.words, counts[0], refs, model.docs_seen))
        self.counters["updates"] += 1
        # A group's documents in all, as its docs/s and revisits count them.
        self.recent.add(fresh=len(entries) if step.where is None else step.where.documents)
        self.recent.learned(entry_time(e) for e in entries)
        self.checkpointer.hold(entries)
        self._stepped(fresh=True)

    def _revisit(self) -> bool:
        """One minibatch drawn from the reservoir while no fresh step is due (docs/samplers.md,
        "Revisiting a reservoir"); False when none can be taken."""
        if not self.revisits.may_revisit(self.model):
            return False
        step = self.coordinator.revisit_step(self.revisits.draw(self.session))
        if step is None:
            return False
        counts: list[torch.Tensor] = []  # the documents' E[n_dk] under today's model
        documents = counts.append if self.parts.listens(events.Revisited) else None
        try:
            scale = self.revisits.step_scale
            self.session.learn(
                step.batch, step.reducer, step.where, revisit=True, step_scale=scale,
                documents=documents,
            )  # fmt: skip
        except NonFiniteError as exc:
            self._restore(exc, [])
            return True
        if counts and self.model is not None:
            docs = self.model.docs_seen
            self.announce(events.Revisited(self.revisits.drawn, counts[0], docs))
        self.recent.add(revisited=step.documents)
        self._stepped(fresh=False)
        return True

    def _stepped(self, *, fresh: bool) -> None:
        """After a step: on a fresh one (only they move the documents seen) the vocabulary's
        refresh and the evaluation when due; then the model and a snapshot when due."""
        model, session = self.model, self.session
        assert model is not None
        self.announce(events.Stepped(model))
        words = self.vocabulary.next_words() if fresh else None
        if words is not None:  # the betas handed off are scored in the words they know
            self._scored(self.scoring.finish())
            self.coordinator.model_changed()
            self.announce(self.vocabulary.move(words))
            if session.heldout is not None:
                self.announce(events.HeldoutComplete(session.heldout_docs))
            self._news(session.take_events())
            self.announce(events.ModelDue(snapshot=True))  # the API gets the new words at once
        handed = fresh and session.evaluation_due()
        pinned, numbers = session.shaper.drift_rows(model, self.seeds.pinned())
        if handed and self.scoring.hand_off(session.heldout is not None, pinned, numbers):
            self.announce(events.ModelDue())
        self.announce(events.StepEnded())

    def _restore(self, exc: Exception, entries: list[str]) -> None:
        """Back to the last checkpoint, dropping the documents since (``entries`` too): a poison
        minibatch is never retried. Rank 0's restored model goes to a group's other ranks."""
        self.checkpointer.hold(entries, first=True)
        if not self.coordinator.leads:
            self.session.forget_model()  # until rank 0's restored model arrives
            return
        vocab = self.session.vocabulary
        assert vocab is not None
        dropped = len(self.checkpointer.unacked)
        self.counters["nonfinite_restores"] += 1
        self.counters["dropped_docs"] += dropped
        if self.checkpointer.exists:
            model, vocab, extra = self.checkpointer.load()
        else:
            model, extra = self.session.new_model(len(vocab)), {}
        restores = self.counters["nonfinite_restores"]
        log.error(
            "%s: restored the checkpoint at %d documents (restore %d); %d documents dropped",
            *(exc, model.docs_seen, restores, dropped),
        )
        self._set_model(model, vocab, extra, restored=True)
        self._checkpoint("restore", alone=True)
        self.announce(events.ModelDue(always=True))  # shown even at the vocabulary's checkpoint

    # --- the model -------------------------------------------------------------------------
    def _set_model(
        self,
        model: StreamingLDA | None,
        vocab: Vocabulary | None,
        extra: dict[str, Any],
        *,
        restored: bool = False,
    ) -> None:
        """Learn with ``model`` (new when None, resumed or restored, by the deciding process);
        the parts bound to a learner go on from its checkpoint's ``extra`` (or start over)."""
        assert vocab is not None
        self.coordinator.model_changed()
        old = self.session.vocabulary
        changed = old is not None and old.words != vocab.words
        session = self.session
        model = session.begin(vocab, model)
        self.announce(events.LearnerBegun(model, vocab, extra, restored, changed))
        if session.heldout is not None:
            self.announce(events.HeldoutComplete(session.heldout_docs))
        elif self.config.heldout and not session.heldout_texts:  # resumed: read it back
            session.restore_heldout(self.scoring.stored())
        self._news(session.take_events())

    def _receive(self, sent: ModelState) -> None:
        """A group's other ranks: rank 0's model, and on resuming, this rank's reservoir."""
        epoch, state, words, reservoirs = sent
        learner = StreamingLDA.from_state_dict(state, self.session.device)
        model = self.session.begin(Vocabulary(words), learner)
        self._news(self.session.take_events())
        self.revisits.load_state_dict(reservoirs)
        log.info("model %d at %d documents from the deciding rank", epoch, model.docs_seen)

    # --- durability ------------------------------------------------------------------------
    def _checkpoint(self, reason: str, *, final: bool = False, alone: bool = False) -> None:
        """The deciding process writes one checkpoint listing every rank's entries and each
        part's state (every rank's reservoir's among them), then each rank acknowledges its
        own (``alone``: the deciding process only, before any rank trains on a new model)."""
        coordinator, model, vocab = self.coordinator, self.model, self.session.vocabulary
        done = list(self.checkpointer.unacked)
        every = done if alone else coordinator.gather(done)
        self.revisits.gather(alone)
        if coordinator.leads:
            assert model is not None and vocab is not None
            self.counters["checkpoints"] += 1
            self.checkpointer.save(model, vocab, reason, every, self.parts.state_dict())
        if not alone:
            coordinator.written()
        self.checkpointer.acknowledge(done, final=final)
        if not coordinator.leads or model is None or vocab is None:
            return
        docs = model.docs_seen
        log.info(
            "checkpoint (%s) at %d documents; %d entries acknowledged", reason, docs, len(every)
        )
        if not final:
            self.announce(events.ModelDue(snapshot=True))
