"""What happens in the worker's loop, as plain values, and the parts that listen to it.

The loop (:mod:`service.learn.worker`) announces each event to its :class:`Parts`; a part
handles the kinds it lists in ``handles`` and may answer with events of its own (the reservoir
says where it kept an article, the seeds that they changed), which go to every part at once and
come back to the loop. A part that is off is not in the list. Each part keeps its state under
one key of a checkpoint (``key``; None: nothing to keep) and shows its figures in every snapshot
(:meth:`Part.shown`). A change of topic labels is one event, :class:`LabelsMoved`, whatever moved
them, and topics born, merged or retired are another, :class:`TopicsReshaped`: every part that
holds something per topic follows both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import torch

if TYPE_CHECKING:
    from lda.model import StreamingLDA
    from lda.topic_ids import TopicMove
    from lda.vocab import Vocabulary
    from service.learn.entry_ref import EntryRef
    from service.learn.evaluator import Scored
    from service.learn.session import Kind


# --- the events -------------------------------------------------------------------------------
@dataclass(frozen=True)
class LearnerBegun:
    """A learner to go on with (new, resumed, restored or after a refresh's checkpoint), and its
    checkpoint's ``extra`` ({} for a new one): the parts bound to a learner begin over it."""

    model: StreamingLDA
    vocab: Vocabulary
    extra: dict[str, Any]
    restored: bool = False  # back to a checkpoint after a non-finite step
    words_changed: bool = False  # its words are not those of the learner before it


@dataclass(frozen=True)
class Resumed:
    """This process resumes from a checkpoint's ``extra``: the parts kept once a process load
    their state (a restore keeps theirs as it is)."""

    extra: dict[str, Any]


@dataclass(frozen=True)
class ArticlePlaced:
    """An article read from the stream and placed by the session (``kind``: empty, heldout or
    train); ``text`` is handed on this once."""

    ref: EntryRef
    kind: Kind
    text: str


@dataclass(frozen=True)
class ArticleKept:
    """The reservoir kept an article in ``slot`` (None: it did not keep it)."""

    ref: EntryRef
    slot: int | None


@dataclass(frozen=True)
class HeldoutComplete:
    """The held-out set is complete, in today's words."""

    documents: list[list[int]]


@dataclass(frozen=True)
class BatchLearned:
    """A fresh minibatch learned: its tokens' word ids, its documents' E[n_dk] (n, K), their
    articles, and the documents seen after it."""

    words: torch.Tensor
    counts: torch.Tensor
    refs: Sequence[EntryRef]
    docs_seen: int


@dataclass(frozen=True)
class ArticlesListed:
    """The ids of the articles the topics' record lists now (after a minibatch)."""

    ids: frozenset[str]


@dataclass(frozen=True)
class Revisited:
    """Kept articles learned again: their reservoir ``slots`` and their E[n_dk] under today's
    model."""

    slots: Sequence[int]
    counts: torch.Tensor
    docs_seen: int


@dataclass(frozen=True)
class VocabularyChanged:
    """The learner moved to new words: new word j is old word ``keep[j]`` (-1: it entered), in
    ``documents[j]`` of the stream's documents (None where words are not counted)."""

    keep: torch.Tensor
    documents: Any  # np.ndarray | None


@dataclass(frozen=True)
class Evaluated:
    """A held-out evaluation's point, scored and about to be shown."""

    point: Scored


@dataclass(frozen=True)
class LabelsMoved:
    """Topic k is now what topic ``matched[k]`` was, from ``since`` documents on: articles,
    sizes, names, seeds, history and search rows follow."""

    matched: Sequence[int]
    since: int

    @property
    def moves(self) -> bool:
        return any(int(m) != k for k, m in enumerate(self.matched))


@dataclass(frozen=True)
class TopicsReshaped:
    """Topics were born, merged or retired (the learner's kept moves, ``model.topic_ids``
    already says so): what a part holds for slot ``j`` in ``merged`` goes to slot
    ``merged[j]``, and for a split parent's slot ``k`` in ``moved`` (its number went with the
    half more like it) to slot ``moved[k]``; what it holds for a slot in ``freed`` (merged
    away or retired) or ``born`` (a new number's, from nothing) is dropped."""

    moves: Sequence[TopicMove]
    freed: Sequence[int]
    merged: Mapping[int, int]
    born: Sequence[int]
    moved: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SeedsRequested:
    """The control hash's seeds sequence, read at a plan: the operator may have changed them."""

    seq: int


@dataclass(frozen=True)
class SeedsChanged:
    """The seeds changed (``prior``: and so did the learner's prior, which a group's other
    ranks get with the model); ``show``: a snapshot shows them now."""

    prior: bool
    show: bool = True


@dataclass(frozen=True)
class Stepped:
    """A sampler step was taken (fresh or a revisit)."""

    model: StreamingLDA


@dataclass(frozen=True)
class ModelDue:
    """The model changed in a way the API must see at once (words, a handed-off evaluation, a
    checkpoint, a restore): publish it (``snapshot``: and a snapshot once it has learned;
    ``always``: a snapshot even before, as after a restore to the vocabulary's checkpoint)."""

    snapshot: bool = False
    always: bool = False


@dataclass(frozen=True)
class StepEnded:
    """The loop's iteration ended after a step: publish what is due, else beat."""


@dataclass(frozen=True)
class Waiting:
    """Nothing to learn this iteration; ``idle``: the stream ran dry (``quiet()``: whether it
    has stayed so long enough, asked only once no stale snapshot was published)."""

    idle: bool = False
    quiet: Callable[[], bool] = lambda: False


@dataclass(frozen=True)
class Stopping:
    """The worker stops: show where learning stopped (before the final checkpoint)."""


@dataclass(frozen=True)
class Stopped:
    """The worker stopped, cleanly or not: the parts' threads end."""


Event = (
    LearnerBegun | Resumed | ArticlePlaced | ArticleKept | HeldoutComplete | BatchLearned
    | ArticlesListed | Revisited | VocabularyChanged | Evaluated | LabelsMoved | TopicsReshaped
    | SeedsRequested | SeedsChanged | Stepped | ModelDue | StepEnded | Waiting | Stopping
    | Stopped
)  # fmt: skip


# --- the parts --------------------------------------------------------------------------------
class Part:
    """One part of the worker: the events it handles, its checkpoint key and state, its figures.
    Every default does nothing; a part overrides what it uses."""

    key: str | None = None  # its state's key in a checkpoint's extra (None: nothing to keep)
    handles: tuple[type, ...] = ()  # the events it handles; the rest never reach it

    def handle(self, event: Any) -> Iterable[Event]:
        """Handle one event of a kind in ``handles``; what it answers goes to every part."""
        return ()

    def state_dict(self) -> Any:
        return None

    def load_state_dict(self, state: Any) -> None:
        pass

    def shown(self, model: StreamingLDA) -> dict[str, Any]:
        """Its fields of the worker's snapshot (``counters``: added to the worker's)."""
        return {}

    def published(
        self, model: StreamingLDA, vocab: Vocabulary, beta: torch.Tensor
    ) -> dict[str, Any]:
        """What it adds to the model published for the API (``beta``: its float32 beta_mean)."""
        return {}


P = TypeVar("P", bound=Part)


@dataclass
class Parts:
    """The worker's parts, in the order events reach them."""

    parts: list[Part] = field(default_factory=list)

    def announce(self, event: Event) -> list[Event]:
        """``event`` to every part that handles it, in order; a part's answers are announced at
        once, before the event goes on (a part later in the list sees what those before it
        answered). Every answer, in order, comes back for the loop."""
        answers: list[Event] = []
        for part in self.parts:
            if isinstance(event, part.handles):
                for answer in part.handle(event):
                    answers += [answer, *self.announce(answer)]
        return answers

    def add(self, part: Part) -> None:
        """One more part, last (what is shown, which reads the others' figures)."""
        self.parts.append(part)

    def listens(self, kind: type) -> bool:
        """Whether any part handles events of ``kind`` (a step hands in its documents' topics
        only if one does)."""
        return any(issubclass(kind, part.handles) for part in self.parts)

    def of(self, kind: type[P]) -> P | None:
        """The part of that class, if it is on."""
        return next((p for p in self.parts if isinstance(p, kind)), None)

    def state_dict(self) -> dict[str, Any]:
        """Each part's state under its key (none where it has nothing to keep)."""
        return {
            p.key: state
            for p in self.parts
            if p.key is not None and (state := p.state_dict()) is not None
        }

    def published(
        self, model: StreamingLDA, vocab: Vocabulary, beta: torch.Tensor
    ) -> dict[str, Any]:
        """Every part's fields of the published model."""
        fields: dict[str, Any] = {}
        for part in self.parts:
            fields.update(part.published(model, vocab, beta))
        return fields

    def shown(self, model: StreamingLDA) -> dict[str, Any]:
        """Every part's snapshot fields, their counters added up under ``counters``."""
        fields: dict[str, Any] = {}
        counters: Counter[str] = Counter()
        for part in self.parts:
            own = dict(part.shown(model))
            counters.update(own.pop("counters", {}))
            fields.update(own)
        return {**fields, "counters": dict(counters)}
