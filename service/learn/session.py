"""The learning protocol, without Redis: what ``train``, the worker and the benchmark share.

A session turns documents into sampler steps the same way wherever they come from: a vocabulary
built from the first ``vocab_docs`` texts unless one is given, the first ``heldout`` documents
with a vocabulary word held out (never trained on), documents with none counted as empty, the
rest trained in minibatches of ``batch_size``, an evaluation due at each multiple of
``eval_every`` documents, and the learner's configuration from the model's settings
(:meth:`service.settings_learning.ModelSettings.learner_config`). Documents carry an opaque
``item`` (the worker's: a reference to the article, without its text; ``train``'s: nothing) that
comes back with each placement and each trained minibatch: the caller decides what storing,
acknowledging and scoring mean. What happens to the session on its own (the vocabulary built,
the held-out set complete, items a change of words left empty) it reports as
:class:`Events` (:meth:`LearningSession.take_events`).

Unless a vocabulary file was given (``vocab``), the session that holds out also counts the
stream's words (:class:`lda.word_counts.WordCounts`, ``vocab_counted`` words at most) and, at
each multiple of ``vocab_refresh`` documents learned, moves to the top ``vocab_size`` words of
the counts (:meth:`LearningSession.refresh`, docs/model.md "When the vocabulary changes"): the
learner's columns, the minibatch in hand and the held-out set (kept as text) follow.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

import numpy as np
import torch

from lda.batch import Batch
from lda.evaluation.perplexity import HeldoutSet
from lda.model import LearnerConfig, StreamingLDA
from lda.parallel import Layout, Reducer
from lda.remap import remap_indices
from lda.shaping import FixedTopics, Reshaped, Shaper, ShapingConfig, TopicShaper
from lda.vocab import STOP_WORDS, Vocabulary, build_vocabulary
from lda.word_counts import WordCounts, next_vocabulary
from service.settings_learning import ModelSettings

log = logging.getLogger(__name__)

# Words counted per vocabulary word by default (the setting vocab_counted).
COUNTED_PER_WORD = 4

Item = TypeVar("Item")
Kind = Literal["empty", "heldout", "train"]


class CannotLearn(Exception):
    """Learning cannot go on (no vocabulary could be built, the model does not fit in memory):
    waiting or retrying cannot help; the ``worker`` command ends the process with it."""


class VocabularyError(CannotLearn, ValueError):
    """No vocabulary could be built from the first documents."""


class ModelTooLarge(CannotLearn, MemoryError):
    """The learner's K x W parameters could not be allocated."""


@dataclass(frozen=True)
class Placed(Generic[Item]):
    """Where one offered document went: ``empty`` (no vocabulary word), ``heldout`` or
    ``train`` (buffered for a minibatch), with its text, handed back this once (the session
    keeps a trained document's word ids only)."""

    item: Item
    kind: Kind
    text: str = ""


@dataclass
class Events(Generic[Item]):
    """What happened in the session since the caller last asked."""

    began: bool = False  # a vocabulary was built from the first texts and the learner began
    heldout: bool = False  # the held-out set became complete (placed or restored)
    emptied: list[Item] = field(default_factory=list)  # in hand, left with no word by new words
    reshaped: list[Reshaped] = field(default_factory=list)  # topic moves kept (lda.shaping)


class LearningSession(Generic[Item]):
    """One learner fed document by document; see the module docstring for the protocol."""

    def __init__(
        self,
        config: ModelSettings,
        device: torch.device,
        holds_out: bool = True,
        ranks: int = 1,
        shaping: ShapingConfig | None = None,
    ) -> None:
        """``config``: the model's settings, validated at the edge; ``shaping``: the topic
        moves' settings (the shaper's defaults when None; unused while K is fixed);
        ``holds_out=False``: every document with a vocabulary word is trained (a group's ranks
        other than 0, whose held-out set is rank 0's); ``ranks``: the group's size (a step
        learns from every rank's minibatch)."""
        self.config = config
        self.device = device
        self.holds_out = holds_out
        self.ranks = ranks
        self.vocabulary: Vocabulary | None = None
        self.model: StreamingLDA | None = None
        # The held-out texts as placed (or restored), their encodings in today's words (those
        # with a word: a vocabulary change may leave some with none), and the set to score,
        # once all ``heldout`` are in; then nothing more is held out, whatever words change.
        self.heldout_texts: list[str] = []
        self.heldout_docs: list[list[int]] = []
        self.heldout_closed = False
        self.heldout: HeldoutSet | None = None
        self.waiting: list[tuple[Item, str]] = []  # texts held until a vocabulary exists
        self.stored_heldout: list[str] = []  # an earlier run's held-out texts: placed first
        self.buffer: list[tuple[Item, list[int]]] = []  # encoded, not trained yet
        self.next_eval = config.eval_every
        self.busy_s = 0.0  # in StreamingLDA.update, since this session began
        self.docs_here = 0
        self.tokens_here = 0
        # The stream's words, counted where refreshes are decided (None: the words are fixed).
        refreshes = holds_out and config.vocab is None and config.vocab_refresh > 0
        self.word_counts = WordCounts(self.counted) if refreshes else None
        self.next_refresh = config.vocab_refresh
        self.events: Events[Item] = Events()
        self.kept_words: frozenset[str] = frozenset()  # a refresh keeps (or brings in) these
        # What a fresh minibatch is learned through: one that moves topics, or that never does.
        self.shaper: Shaper = (
            TopicShaper(shaping, config.seed, self._top_words)
            if config.topics_move
            else FixedTopics()
        )

    def _top_words(self, ids: Sequence[int]) -> tuple[str, ...]:
        """Word ids as today's words (a topic move's record)."""
        assert self.vocabulary is not None
        return tuple(self.vocabulary.words[i] for i in ids)

    @property
    def counted(self) -> int:
        """Words whose counts are kept: the setting, else COUNTED_PER_WORD per vocabulary
        word (room for the words about to enter beside those in)."""
        return self.config.vocab_counted or COUNTED_PER_WORD * self.config.vocab_size

    # --- the learner -----------------------------------------------------------------------
    def new_model(self, n_words: int) -> StreamingLDA:
        """A fresh learner for a vocabulary of ``n_words``; ModelTooLarge, with one line to
        show, when K x W does not fit in memory."""
        config = self.config.learner_config(n_words, self.ranks)
        log.info("learner: %s", self._describe(config))
        try:
            return StreamingLDA(config, self.device, self.config.seed)
        except (RuntimeError, MemoryError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ModelTooLarge(
                f"cannot allocate the model ({config.n_topics} topics x {n_words} words): {first}"
            ) from exc

    def begin(self, vocabulary: Vocabulary, model: StreamingLDA | None = None) -> StreamingLDA:
        """Learn with ``model`` (resumed or restored; a new one when None) over
        ``vocabulary``; the next evaluation is the next multiple of eval_every."""
        before = self.vocabulary
        self.vocabulary = vocabulary
        if before is not None and before.words != vocabulary.words:
            # Another vocabulary (a group's rank 0 refreshed, or a restore went back before a
            # refresh): what is in hand follows it.
            self.events.emptied += self._remap_buffer(
                remap_indices(before.words, vocabulary.words), len(before)
            )
            self._encode_heldout()
        self._count_by_id()
        self.shaper.forget_minibatches()  # resumed, restored or new: the minibatches in hand go
        if model is not None and model.docs_seen > 0:
            self._resumed(model.config)
        self.model = self.new_model(len(vocabulary)) if model is None else model
        self.next_eval = _next_multiple(self.model.docs_seen, self.config.eval_every)
        if self.config.vocab_refresh > 0:
            self.next_refresh = _next_multiple(self.model.docs_seen, self.config.vocab_refresh)
        return self.model

    def forget_model(self) -> None:
        """No learner until the next :meth:`begin` (a group's rank waiting for rank 0's
        restored one)."""
        self.model = None

    def _describe(self, config: LearnerConfig) -> str:
        """The learner's sampler, size, documents per step, step schedule and mean decay."""
        assert config.schedule is not None
        s = config.schedule
        decay = "" if s.b is None else f" (1 + t/{s.b:g})^-{s.c:g}"
        return (
            f"{config.sampler}, K = {config.n_topics}, W = {config.n_words}, "
            f"{self.config.batch_size * self.ranks} documents per step, "
            f"step size {s.a:.4g}{decay}, mean decay {config.mean_decay:.4g}"
        )

    def _resumed(self, config: LearnerConfig) -> None:
        """Log a resumed model's learner, and warn where the settings would now give another
        (the checkpoint's stands: a sampler's state is only valid under its own settings)."""
        log.info("learner (from the checkpoint): %s", self._describe(config))
        wanted = self.config.learner_config(config.n_words, self.ranks).to_dict()
        kept = config.to_dict()
        changed = [f"{k} {kept[k]} (settings: {v})" for k, v in wanted.items() if kept.get(k) != v]
        if changed:
            log.warning(
                "the checkpoint's learner settings are kept; the current settings (or "
                "documents per step) would give: %s",
                "; ".join(changed),
            )

    @property
    def wanted(self) -> int:
        """How many documents to read next: the vocabulary's still missing, or a minibatch's."""
        if self.vocabulary is None:
            return max(self.config.vocab_docs - len(self.waiting), 0)
        return max(self.config.batch_size - len(self.buffer), 0)

    # --- documents -------------------------------------------------------------------------
    def offer(self, documents: Iterable[tuple[Item, str]]) -> list[Placed[Item]]:
        """Place each (item, text): held until the vocabulary's ``vocab_docs`` texts are in
        (then the vocabulary is built, the learner begun, and all of them placed), then empty,
        held out or buffered. Raises VocabularyError when no vocabulary can be built."""
        if self.vocabulary is None:
            self.waiting += documents
            if len(self.waiting) < self.config.vocab_docs:
                return []
            return self.flush()
        return self._place_all(documents)

    def flush(self) -> list[Placed[Item]]:
        """The source ended before ``vocab_docs`` texts: build the vocabulary from those held
        and place them (nothing to do once a vocabulary exists)."""
        if self.vocabulary is not None or not self.waiting:
            return []
        documents, self.waiting = self.waiting, []
        try:
            vocabulary = build_vocabulary((text for _, text in documents), self.config.vocab_size)
        except ValueError as exc:
            raise VocabularyError(f"cannot build a vocabulary: {exc}") from exc
        self.begin(vocabulary)
        self.events.began = True
        if self.stored_heldout:  # the held-out set an earlier run stored comes first
            self.restore_heldout(self.stored_heldout)
        return self._place_all(documents)

    def _place_all(self, documents: Iterable[tuple[Item, str]]) -> list[Placed[Item]]:
        assert self.vocabulary is not None
        placed: list[Placed[Item]] = []
        counts = self.word_counts
        for item, text in documents:
            if counts is None:
                kind = self._place(item, self.vocabulary.encode(text), text)
                placed.append(Placed(item, kind, text))
                continue
            ids, present, others = self.vocabulary.encode_split(text)
            kind = self._place(item, ids, text)
            if kind != "heldout":
                counts.add_encoded(present, others)
            placed.append(Placed(item, kind, text))
        return placed

    def _place(self, item: Item, ids: list[int], text: str) -> Kind:
        if not ids:
            return "empty"
        if self.holds_out and not self.heldout_closed and self.config.heldout:
            self.heldout_texts.append(text)
            self.heldout_docs.append(ids)
            if len(self.heldout_texts) >= self.config.heldout:
                self.heldout_closed = True
                self.heldout = HeldoutSet.from_documents(self.heldout_docs, self.device)
                self.events.heldout = True
            return "heldout"
        self.buffer.append((item, ids))
        return "train"

    def hold_stored(self, texts: list[str]) -> None:
        """Before the vocabulary: an earlier run's held-out texts (it left no checkpoint),
        placed first once the vocabulary exists, never trained on."""
        self.stored_heldout = texts
        log.info(
            "building a vocabulary of %d words from the first %d documents",
            self.config.vocab_size,
            self.config.vocab_docs,
        )

    def restore_heldout(self, texts: Iterable[str]) -> None:
        """The held-out set from its stored texts (after a restart), in arrival order: closed
        when they are ``heldout`` (each was stored with a word; today's words may leave some
        with none)."""
        self.heldout_texts = list(texts)[: self.config.heldout]
        self.heldout_closed = bool(self.config.heldout) and (
            len(self.heldout_texts) >= self.config.heldout
        )
        self._encode_heldout()
        if self.heldout is not None:
            self.events.heldout = True

    def _encode_heldout(self) -> None:
        """The held-out texts in today's words; the set to score once it is closed."""
        vocabulary = self.vocabulary
        assert vocabulary is not None
        encoded = (vocabulary.encode(text) for text in self.heldout_texts)
        self.heldout_docs = [ids for ids in encoded if ids]
        closed = self.heldout_closed and self.heldout_docs
        self.heldout = HeldoutSet.from_documents(self.heldout_docs, self.device) if closed else None

    # --- the vocabulary --------------------------------------------------------------------
    def refresh_due(self) -> bool:
        """True once per multiple of vocab_refresh documents learned, where words are counted
        (several at once count as one)."""
        model, refresh, counts = self.model, self.config.vocab_refresh, self.word_counts
        if counts is None or model is None or model.docs_seen < self.next_refresh:
            return False
        if counts.documents < refresh:  # counting began late (a checkpoint without counts)
            return False
        self.next_refresh = _next_multiple(model.docs_seen, refresh)
        return True

    def next_words(self) -> list[str] | None:
        """The top vocab_size words of the stream's counts, chosen as the first vocabulary
        was, with every word of ``kept_words`` (the seed words) in place of the last chosen, in
        the order :func:`lda.word_counts.next_vocabulary` gives; None when they are today's
        words."""
        counts, old = self.word_counts, self.vocabulary
        assert counts is not None and old is not None
        chosen = counts.top(self.config.vocab_size, stop_words=STOP_WORDS)
        if chosen and self.kept_words:
            forced = sorted(self.kept_words.difference(chosen))
            chosen = chosen[: max(0, self.config.vocab_size - len(forced))] + forced
        words = next_vocabulary(old.words, chosen)
        return None if not chosen or words == old.words else words

    def refresh(self, words: list[str] | None = None) -> torch.Tensor | None:
        """Move to ``words`` (:meth:`next_words` when None); the map from the old words
        (``keep[j]``: new word j's old id, -1 for one that enters), or None, nothing done, when
        there is no change. The learner's columns follow
        (:meth:`lda.model.StreamingLDA.remap_vocabulary`), and so do the minibatch in hand
        (its documents lose the words that leave) and the held-out set (its texts encoded
        again: the same texts, some perhaps with no word left); items in hand left with no
        word wait in :meth:`take_emptied`."""
        model, old = self.model, self.vocabulary
        assert model is not None and old is not None
        words = self.next_words() if words is None else words
        if words is None:
            return None
        keep = remap_indices(old.words, words)
        model.remap_vocabulary(keep)
        self.shaper.forget_minibatches()
        self.events.emptied += self._remap_buffer(keep, len(old))
        self.vocabulary = Vocabulary(words, old.version + 1)
        self._count_by_id()
        self._encode_heldout()
        return keep

    def take_emptied(self) -> list[Item]:
        """The items in hand that a change of words left with no word (to count as empty, as
        if placed so), handed over once."""
        emptied, self.events.emptied = self.events.emptied, []
        return emptied

    def take_reshaped(self) -> list[Reshaped]:
        """The topic moves kept since the last call, handed over once."""
        reshaped, self.events.reshaped = self.events.reshaped, []
        return reshaped

    def take_events(self) -> Events[Item]:
        """What happened since the last call (see :class:`Events`), handed over once."""
        events, self.events = self.events, Events()
        return events

    def _remap_buffer(self, keep: torch.Tensor, n_old: int) -> list[Item]:
        """The minibatch in hand in new word ids (``keep`` as a refresh makes it, from a
        vocabulary of ``n_old`` words); the items left with no word, taken out."""
        new_id = np.full(n_old, -1, dtype=np.int64)
        kept = keep.numpy()
        staying = np.flatnonzero(kept >= 0)
        new_id[kept[staying]] = staying
        remapped = []
        for item, ids in self.buffer:
            moved = new_id[np.asarray(ids, dtype=np.int64)]
            remapped.append((item, moved[moved >= 0].tolist()))
        self.buffer = [(item, ids) for item, ids in remapped if ids]
        return [item for item, ids in remapped if not ids]

    def counts_state(self) -> dict[str, Any] | None:
        """The stream's word counts, for a checkpoint (None where words are not counted)."""
        return None if self.word_counts is None else self.word_counts.state_dict()

    def load_counts_state(self, state: dict[str, Any] | None) -> None:
        """A checkpoint's word counts (none in older ones: counting starts over)."""
        if self.word_counts is not None and state is not None:
            self.word_counts = WordCounts.from_state_dict(state, self.counted)
            self._count_by_id()

    def _count_by_id(self) -> None:
        """The vocabulary's words are counted by id (encoding finds them anyway)."""
        if self.word_counts is not None and self.vocabulary is not None:
            self.word_counts.use_vocabulary(self.vocabulary.words)

    # --- minibatches -----------------------------------------------------------------------
    @property
    def batch_ready(self) -> bool:
        """A whole minibatch is buffered."""
        return len(self.buffer) >= self.config.batch_size

    def take(self, most: int | None = None) -> tuple[list[Item], Batch]:
        """The next minibatch (at most batch_size documents, or ``most``) out of the buffer."""
        size = self.config.batch_size if most is None else min(most, self.config.batch_size)
        taken, self.buffer = self.buffer[:size], self.buffer[size:]
        return [item for item, _ in taken], Batch.from_ids([ids for _, ids in taken], self.device)

    def learn(
        self,
        batch: Batch,
        reducer: Reducer | None = None,
        where: Layout | None = None,
        *,
        revisit: bool = False,
        step_scale: float = 1.0,
        documents: Callable[[torch.Tensor], None] | None = None,
    ) -> None:
        """One sampler step on ``batch`` (with a group's ``reducer``, on every rank's union);
        raises lda.model.NonFiniteError and leaves the learner as it was if theta would not be
        finite. A fresh minibatch goes through the shaper (moves may be decided before its
        step); a ``revisit``'s step is ``step_scale`` times the stream's. Only the step is
        timed: the throughput reported is the learner's on fresh documents (a revisit counts
        apart)."""
        model = self.model
        assert model is not None
        started = time.perf_counter()
        if revisit:
            model.update(
                batch, reducer, where, revisit=True, step_scale=step_scale, documents=documents
            )
            return
        reshaped = self.shaper.update(model, batch, documents, reducer, where)
        if reshaped is not None:
            self.events.reshaped.append(reshaped)
        self.busy_s += time.perf_counter() - started
        self.docs_here += batch.n_documents
        self.tokens_here += batch.n_tokens

    def encode(self, texts: Iterable[str]) -> tuple[list[int], Batch | None]:
        """Texts as a minibatch in today's vocabulary, those with no word of it left out (None
        when none has one), and which texts it holds: how a revisit reads the articles the
        reservoir kept as text."""
        assert self.vocabulary is not None
        encoded = [(i, ids) for i, ids in enumerate(map(self.vocabulary.encode, texts)) if ids]
        documents = [ids for _, ids in encoded]
        batch = Batch.from_ids(documents, self.device) if documents else None
        return [i for i, _ in encoded], batch

    def evaluation_due(self) -> bool:
        """True once per multiple of eval_every reached (several at once count as one)."""
        model = self.model
        if model is None or model.docs_seen < self.next_eval:
            return False
        self.next_eval = _next_multiple(model.docs_seen, self.config.eval_every)
        return True

    def rates(self) -> tuple[float, float]:
        """This process's docs/s and tokens/s while learning."""
        busy = max(self.busy_s, 1e-9)
        return self.docs_here / busy, self.tokens_here / busy


def _next_multiple(docs: int, every: int) -> int:
    """The first multiple of ``every`` past ``docs``: when the next evaluation or refresh is due."""
    return (docs // every + 1) * every
