"""Seeded topics, as the worker sees them: each topic's seed words and their strength, and the
prior they put on the learner (docs/topics.md, "Seeded topics").

An operator seeds a topic through the API (:mod:`service.store.topic_seeds`, read again when
the control hash's ``seeds_seq`` grows) or with a seeds file at start. Words are kept as text,
tokenised by the learner's rule (:func:`lda.vocab.tokenize`); the prior
(:class:`lda.sgmcmc.seeds.SeedPrior`) is built for today's vocabulary whenever the seeds or the
words change. A seed word outside the vocabulary waits, pending, and a vocabulary refresh
always keeps (or brings in) every seed word. A seeded topic's label is pinned by the drift
matching, so it keeps its number; its seeds are in the checkpoint (a part under ``seeds``).

Seeds are set per topic *number*. While K is fixed numbers are the learner's slots; while topics
move (lda.topic_ids) a number lives in the slot ``topic_ids.slot_of`` says, and a seed for a
number that is gone or was never given is refused: skipped, with a warning, and counted.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import redis

from lda.config import SEED_TOKENS_PER_DOCUMENT
from lda.model import StreamingLDA
from lda.sgmcmc.seeds import SeedPrior, pseudo_counts
from lda.vocab import Vocabulary
from service.learn.events import (
    Event,
    LabelsMoved,
    LearnerBegun,
    Part,
    Resumed,
    SeedsChanged,
    SeedsRequested,
    TopicsReshaped,
    VocabularyChanged,
)
from service.learn.session import LearningSession
from service.store.redis_retry import RedisRetry
from service.store.topic_seeds import (
    TopicSeeds,
    checked,
    read_topic_seeds,
    replace_topic_seeds,
    seed_words,
)

log = logging.getLogger(__name__)


class SeedsError(ValueError):
    """A seeds file or request that cannot be used; the message says why."""


def tokenised(given: Mapping[int, Sequence[str]], strength: float) -> dict[int, TopicSeeds]:
    """Each topic's words as the learner tokenises them, at ``strength``, checked as the API
    checks an operator's seeds; SeedsError for a bad word or strength, or a topic left with no
    word."""
    seeds: dict[int, TopicSeeds] = {}
    for k, words in given.items():
        tokens = seed_words(words)
        if not tokens:
            raise SeedsError(f"topic {k}'s seeds {list(words)!r} hold no word")
        try:
            seeds[k] = checked(list(tokens), strength)
        except ValueError as exc:
            raise SeedsError(f"topic {k}'s seeds: {exc}") from None
    return seeds


def seed_prior(
    seeds: Mapping[int, TopicSeeds], vocab: Vocabulary, model: StreamingLDA
) -> SeedPrior:
    """The prior of ``seeds`` over ``vocab`` for ``model``: its words only (the others wait),
    each strength as pseudo-counts for the learner's N, K and tokens per document (measured once
    it has learned: lda.sgmcmc.seeds.pseudo_counts)."""
    n_topics, n = model.config.n_topics, model.docs_seen
    per_document = model.tokens_seen / n if n else SEED_TOKENS_PER_DOCUMENT
    corpus = model.corpus_size(0)
    return SeedPrior.of(
        (k, vocab.index[word], pseudo_counts(s.strength, corpus, per_document, n_topics))
        for k, s in seeds.items()
        if 0 <= k < n_topics
        for word in s.words
        if word in vocab.index
    )


class Seeds(Part):
    """Each topic's seeds, the prior they put on the learner (the one place it is set:
    :meth:`follow`), and their copy in Redis."""

    key = "seeds"
    handles = (
        Resumed, LearnerBegun, SeedsRequested, LabelsMoved, TopicsReshaped, VocabularyChanged
    )  # fmt: skip

    def __init__(
        self,
        session: LearningSession[Any],
        client: redis.Redis,
        retry: RedisRetry,
        given: Mapping[int, TopicSeeds],
    ) -> None:
        """``given``: a seeds file's, set at start over what the checkpoint and Redis hold."""
        self.session = session
        self.client = client
        self.redis = retry
        self.given = dict(given)
        self.topics: dict[int, TopicSeeds] = {}
        self.seq = 0  # the control hash's seeds_seq these seeds answer
        self.refused: frozenset[int] = frozenset()  # seeded numbers with no live topic now
        self.refusals = 0  # numbers refused so far (each time one starts being refused)

    def handle(self, event: Any) -> Iterable[Event]:
        """The checkpoint's seeds once a process; the prior over each learner begun and each
        change of words; an operator's change; labels that moved (Redis follows) and topics
        reshaped (a number newly live takes its seeds)."""
        match event:
            case Resumed(extra=extra):
                self.load_state_dict(extra.get(self.key))
            case LearnerBegun() | VocabularyChanged():
                self.follow()
            case SeedsRequested(seq=seq) if self.poll(seq):
                return (SeedsChanged(prior=self.follow()),)
            case LabelsMoved() if self.numbered(self.session.model):
                # The numbers moved with their topics: so do the prior's slots, not the seeds.
                if self.follow():
                    return (SeedsChanged(prior=True, show=False),)
            case LabelsMoved(matched=matched) if self.move(matched):
                # The evaluation's snapshot shows them.
                return (SeedsChanged(prior=self.follow(), show=False),)
            case TopicsReshaped() if self.follow():
                return (SeedsChanged(prior=True, show=False),)
        return ()

    # --- where they come from -----------------------------------------------------------------
    def start(self) -> None:
        """At start, after the checkpoint's seeds were loaded: Redis's if they are newer, else
        these are written back (Redis lost them); then the seeds file's topics over them."""
        seq, stored = self._read()
        if seq > self.seq:
            self.topics, self.seq = stored, seq
        elif stored != self.topics:
            self._write()
        if self.given:
            self.topics.update(self.given)
            self._write()
        if self.topics:
            log.info("seeded topics: %s", ", ".join(str(k) for k in sorted(self.topics)))

    def poll(self, seq: int) -> bool:
        """The control hash's ``seeds_seq`` is ``seq``: read the seeds again if it grew; True
        if they changed."""
        if seq <= self.seq:
            return False
        new_seq, stored = self._read()
        changed = stored != self.topics
        self.topics, self.seq = stored, max(seq, new_seq)
        if changed:
            log.info("seeds changed: seeded topics %s", sorted(self.topics) or "none")
        return changed

    def move(self, matched: Sequence[int]) -> bool:
        """Seeds follow their topics as names do: topic k is now what topic ``matched[k]`` was
        (a seeded topic is pinned, so this moves only seeds set after the beta matched was
        handed off); True if any moved (Redis follows)."""
        moved = {k: self.topics[int(m)] for k, m in enumerate(matched) if int(m) in self.topics}
        if moved == self.topics:
            return False
        self.topics = moved
        self._write()
        return True

    def _read(self) -> tuple[int, dict[int, TopicSeeds]]:
        return self.redis("reading the seeds", functools.partial(read_topic_seeds, self.client))

    def _write(self) -> None:
        write = functools.partial(replace_topic_seeds, self.client, dict(self.topics))
        self.seq = self.redis("writing the seeds", write)

    # --- what they do -------------------------------------------------------------------------
    def words(self) -> frozenset[str]:
        """Every seed word: a vocabulary refresh keeps them all."""
        return frozenset(word for s in self.topics.values() for word in s.words)

    @staticmethod
    def numbered(model: StreamingLDA | None) -> bool:
        """Whether seeds are by topic number, each in the slot its number lives in, the number
        following its topic when labels move (topics moved: lda.topic_ids); while K is fixed
        numbers are the slots, and seeds move with the labels as names do."""
        return model is not None and not model.topic_ids.fixed

    def slotted(self, model: StreamingLDA) -> dict[int, TopicSeeds]:
        """The seeds by the slot their number lives in (while K is fixed, numbers are slots, a
        number past K waiting); a seed whose number is gone or was never given is refused (a
        warning, counted, the first time)."""
        if not self.numbered(model):
            self._refuse(frozenset())
            return dict(self.topics)
        ids = model.topic_ids
        slots = {k: ids.slot_of(k) if k >= 0 else None for k in self.topics}
        self._refuse(frozenset(k for k, slot in slots.items() if slot is None))
        return {slot: self.topics[k] for k, slot in slots.items() if slot is not None}

    def _refuse(self, numbers: frozenset[int]) -> None:
        for k in sorted(numbers - self.refused):
            log.warning("topic %d's seeds refused: no live topic has that number", k)
        self.refusals += len(numbers - self.refused)
        self.refused = numbers

    def pinned(self) -> list[int]:
        """The seeded topics' slots, whose labels the drift matching keeps."""
        model = self.session.model
        return sorted(self.topics if model is None else self.slotted(model))

    def follow(self) -> bool:
        """The session keeps every seed word through a refresh, and its learner (if any) takes
        the seeds' prior; True if the prior changed."""
        session = self.session
        session.kept_words = self.words()
        model, vocab = session.model, session.vocabulary
        return model is not None and vocab is not None and self.apply(model, vocab)

    def apply(self, model: StreamingLDA, vocab: Vocabulary) -> bool:
        """Put the seeds' prior over ``vocab`` on ``model`` if it differs from the one it has;
        True if it changed."""
        prior = seed_prior(self.slotted(model), vocab, model)
        if prior.triples() == model.seeds.triples():
            return False
        model.set_seeds(prior)
        return True

    def shown(self, model: StreamingLDA) -> dict[str, Any]:
        """Each slot's seed words, for the snapshot (none: an empty list), and the seeds
        refused so far."""
        slotted = self.slotted(model)
        n_topics = model.config.n_topics
        seeds = [list(slotted[k].words) if k in slotted else [] for k in range(n_topics)]
        return {"topic_seeds": seeds, "counters": {"seeds_refused": self.refusals}}

    # --- checkpoint ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "topics": {str(k): [list(s.words), s.strength] for k, s in self.topics.items()},
        }

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """A checkpoint's seeds (None: one written before seeds, with none)."""
        if state is None:
            return
        self.seq = int(state.get("seq", 0))
        self.topics = {
            int(k): TopicSeeds(tuple(str(w) for w in words), float(strength))
            for k, (words, strength) in state.get("topics", {}).items()
        }
