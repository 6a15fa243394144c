"""The seed words operators give topics: one hash, topic id -> JSON ``{"words", "strength"}``.

The API's admin routes and the worker (a seeds file at start, seeds following moved labels)
write them, each write bumping ``seeds_seq`` in the control hash in the same transaction; the
worker reads the hash again whenever that sequence grows, so a change takes effect at its next
step. The worker's copy is in its checkpoint; the API shows the seeds in effect from the
snapshot.

Seeds read back are checked as the API checks what it writes (:func:`checked`): an entry that is
not seeds (a word that is no learner's token or too long, a strength outside its range) is
skipped and logged, never handed to the worker, whose prior it could otherwise break.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import redis

from service.keys import CONTROL_KEY, TOPIC_SEEDS_KEY
from service.store.redis_values import text

SEQ_FIELD = "seeds_seq"
# The range of a seed's strength (docs/topics.md, "Seeded topics"). The floor keeps its
# pseudo-counts s = strength N L / (100 K) positive and normal in float32 at any K (with N, L
# >= 1, s >= 1e-5 / K), where a subnormal strength rounded them to 0; the ceiling bounds what is
# read back (the API's bound is the setting seed_strength_max, below it).
SEED_STRENGTH_MIN = 1e-3
SEED_STRENGTH_CEILING = 1e6
SEED_TOKEN_CHARS = 100  # a seed word's most characters, as the learner tokenises it

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TopicSeeds:
    """One topic's seed words (as the learner tokenises them) and their strength (the percent
    of an average topic's tokens each word's pseudo-counts stand for)."""

    words: tuple[str, ...]
    strength: float

    def to_json(self) -> str:
        return json.dumps({"words": list(self.words), "strength": self.strength})

    @classmethod
    def from_json(cls, value: str | bytes) -> TopicSeeds:
        """Seeds as :meth:`to_json` wrote them, checked (:func:`checked`); ValueError if not."""
        try:
            data = json.loads(value)
        except RecursionError as exc:
            raise ValueError("nested too deeply") from exc
        if not isinstance(data, dict) or set(data) != {"words", "strength"}:
            raise ValueError('not {"words", "strength"}')
        return checked(data["words"], data["strength"])


def strength_error(strength: object, strongest: float = SEED_STRENGTH_CEILING) -> str | None:
    """What is wrong with ``strength`` (None: nothing): a number (not a bool or text), finite,
    at least SEED_STRENGTH_MIN and at most ``strongest``."""
    if isinstance(strength, bool) or not isinstance(strength, int | float):
        return "strength must be a number"
    try:
        value = float(strength)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        return "strength must be a finite number"
    if not SEED_STRENGTH_MIN <= value <= strongest:
        low, high = f"{SEED_STRENGTH_MIN:g}", f"{strongest:g}"
        return f"strength {value:g}: it must be at least {low} and at most {high}"
    return None


def word_error(word: str) -> str | None:
    """What is wrong with a seed ``word`` read back (None: nothing): it must be one of the
    learner's tokens, in its form, of at most SEED_TOKEN_CHARS characters."""
    if not 0 < len(word) <= SEED_TOKEN_CHARS:
        return f"a word of {len(word)} characters: the most is {SEED_TOKEN_CHARS}"
    if seed_words([word]) != (word,):
        return f"{word!r} is not a token as the learner makes them"
    return None


def checked(words: object, strength: object) -> TopicSeeds:
    """Seeds read back, checked as the API checks them: ValueError saying what is wrong."""
    if not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words):
        raise ValueError("words must be a list of one or more texts")
    wrong = strength_error(strength) or next(filter(None, map(word_error, words)), None)
    if wrong is not None:
        raise ValueError(wrong)
    assert isinstance(strength, int | float)
    return TopicSeeds(tuple(words), float(strength))


def seed_words(words: Iterable[str]) -> tuple[str, ...]:
    """The learner's tokens of ``words`` (:mod:`lda.tokens`; a word may give several, or
    none), each once, in order."""
    from lda.tokens import words as tokens_of  # numba: loaded by those who seed, not export

    tokens: dict[str, None] = {}
    for word in words:
        tokens.update(dict.fromkeys(tokens_of(word).decode("utf-8").split()))
    return tuple(tokens)


def _write(client: redis.Redis, change: Any) -> int:
    """``change(pipe)`` and the sequence's bump in one MULTI; the sequence after it."""
    pipe = client.pipeline(transaction=True)
    change(pipe)
    pipe.hincrby(CONTROL_KEY, SEQ_FIELD, 1)
    return int(pipe.execute()[-1])


def set_topic_seeds(client: redis.Redis, k: int, seeds: TopicSeeds) -> int:
    """Seed topic ``k`` (replacing its seeds); the new sequence."""
    return _write(client, lambda pipe: pipe.hset(TOPIC_SEEDS_KEY, str(k), seeds.to_json()))


def clear_topic_seeds(client: redis.Redis, k: int) -> int:
    """Remove topic ``k``'s seeds (none is fine); the new sequence."""
    return _write(client, lambda pipe: pipe.hdel(TOPIC_SEEDS_KEY, str(k)))


def replace_topic_seeds(client: redis.Redis, seeds: Mapping[int, TopicSeeds]) -> int:
    """Every topic's seeds at once (the worker's: a seeds file, moved labels); the new
    sequence."""

    def change(pipe: Any) -> None:
        pipe.delete(TOPIC_SEEDS_KEY)
        if seeds:
            pipe.hset(TOPIC_SEEDS_KEY, mapping={str(k): s.to_json() for k, s in seeds.items()})

    return _write(client, change)


def read_topic_seeds(client: redis.Redis) -> tuple[int, dict[int, TopicSeeds]]:
    """(the sequence, every seeded topic's seeds), read together."""
    pipe = client.pipeline(transaction=True)
    pipe.hget(CONTROL_KEY, SEQ_FIELD)
    pipe.hgetall(TOPIC_SEEDS_KEY)
    seq, raw = pipe.execute()
    seeds: dict[int, TopicSeeds] = {}
    for key, value in raw.items():
        try:
            k = int(text(key))
            if k < 0:
                raise ValueError("a negative topic")
            seeds[k] = TopicSeeds.from_json(value)
        except (ValueError, TypeError) as exc:
            # Not seeds this module wrote: skipped (the others stand), never a crash.
            log.warning("seeds of topic %.40r in Redis skipped: %s", key, exc)
    return int(text(seq)) if seq is not None else 0, seeds
