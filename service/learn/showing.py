"""What the worker shows: the model, snapshots, scored points and the heartbeat, as the loop's
events say, with the figures the parts show (:meth:`~service.learn.events.Parts.shown`), through
the :class:`~service.learn.publisher.Publisher`. A part of the rank that publishes only."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import torch

from service.learn.events import (
    Evaluated,
    Event,
    LabelsMoved,
    LearnerBegun,
    ModelDue,
    Part,
    Parts,
    SeedsChanged,
    StepEnded,
    Stepped,
    Stopping,
    TopicsReshaped,
    VocabularyChanged,
    Waiting,
)
from service.learn.live_topics import LiveTopics
from service.learn.publisher import Publisher, WorkerStatus

if TYPE_CHECKING:
    from service.learn.recent_rates import RecentRates
    from service.learn.session import LearningSession


class Showing(Part):
    """The worker's publisher, told what happened; the last of the parts, so what it shows
    follows every other part's handling of the same event."""

    handles = (
        LearnerBegun, Stepped, VocabularyChanged, ModelDue, StepEnded, Waiting, Stopping,
        SeedsChanged, LabelsMoved, Evaluated, TopicsReshaped,
    )  # fmt: skip

    def __init__(
        self,
        publisher: Publisher,
        session: LearningSession[Any],
        recent: RecentRates,
        parts: Parts,
    ) -> None:
        """``parts``: the worker's, whose figures and published fields it shows."""
        self.publisher = publisher
        self.session = session
        self.recent = recent
        self.parts = parts

    def handle(self, event: Any) -> Iterable[Event]:
        publisher, model = self.publisher, self.session.model
        match event:
            case LearnerBegun(restored=restored, words_changed=words_changed):
                if restored:  # the samples of the dropped trajectory
                    publisher.forget_samples()
                if words_changed:  # a restore went back before a change of words
                    publisher.vocabulary_changed()
            case Stepped(model=stepped):
                publisher.trained(stepped)
            case VocabularyChanged():  # the loop publishes the model once the parts followed
                publisher.vocabulary_changed()
            case ModelDue(snapshot=snapshot, always=always):
                self.model()
                if snapshot and model is not None and model.docs_seen:
                    self.snapshot()  # no topics before the first update
                if always:
                    self.snapshot()
            case StepEnded():
                self.after_step()
            case Waiting(idle=False):
                publisher.beat()
            case Waiting(quiet=quiet) if not self.if_stale():  # the stream ran dry
                publisher.beat()
                if model is not None and quiet() and model.docs_seen and self.recent.go_idle():
                    self.snapshot()  # said once: rates 0, idle_since
            case Stopping() if model is not None:
                self.if_stale()  # publication is throttled: show where it stopped
            case SeedsChanged(show=True) if model is not None and model.docs_seen:
                self.snapshot()
            case LabelsMoved(matched=matched, since=since) if model is not None:
                # names follow labels that are numbers; once topics moved, a name is its
                # number's, whatever the labels do
                moved = LiveTopics.of(model.topic_ids).moved_labels(matched)
                if moved is not None:
                    publisher.move_names(moved, since)
            case TopicsReshaped() if model is not None:
                self.model()  # /infer and export: the live topics, under their numbers
                if model.docs_seen:
                    self.snapshot()  # the moves shown now, not at the next throttled one
            case Evaluated(point=point):
                self.point(point)
        return ()

    def model(self) -> None:
        """beta_mean and its vocabulary, with what the parts publish beside it (the stream's
        figures, the kept articles' shares)."""
        model, vocab = self.session.model, self.session.vocabulary
        assert model is not None and vocab is not None
        # One float32 copy of beta_mean for Redis and the refolding thread (K x W; word-major
        # where the chain's is): at K = 1,000, W = 100,000 each copy is 400 MB.
        beta = model.beta_mean.detach().to("cpu", torch.float32, copy=True)
        fields = self.parts.published(model, vocab, beta)
        self.publisher.model(model, vocab, fields.get("figures"), fields.get("rows"), beta)

    def after_step(self) -> None:
        """The model if this process owes one, then a snapshot when due (else a heartbeat)."""
        if self.publisher.model_due():
            self.model()
        if self.publisher.snapshot_due():
            self.snapshot()
        else:
            self.publisher.beat()

    def if_stale(self) -> bool:
        """Publish a snapshot if the last one is behind (the publisher's judgement)."""
        model = self.session.model
        if model is None or not self.publisher.stale(model):
            return False
        self.snapshot()
        return True

    def point(self, scored: Any) -> None:
        """A scored point (the parts followed its labels and drift first): every topic's
        history, then the perplexity curve."""
        model, vocab = self.session.model, self.session.vocabulary
        assert model is not None and vocab is not None
        sizes = self.parts.shown(model).get("topic_size")
        self.publisher.topics_scored(scored, vocab, sizes, LiveTopics.of(model.topic_ids))
        self.publisher.point(scored, vocab.version)

    def snapshot(self) -> None:
        """A snapshot with every part's figures."""
        model, vocab = self.session.model, self.session.vocabulary
        assert model is not None and vocab is not None
        figures = self.parts.shown(model)
        counters = {name: int(value) for name, value in figures.pop("counters").items()}
        self.publisher.snapshot(model, vocab, WorkerStatus(counters=counters, **figures))
