"""The seed words operators give topics: one hash, topic id -> JSON ``{"words", "strength"}``.

The API's admin routes and the worker (a seeds file at start, seeds following moved labels)
write them, each write bumping ``seeds_seq`` in the control hash in the same transaction; the
worker reads the hash again whenever that sequence grows, so a change takes effect at its next
step. The worker's copy is in its checkpoint; the API shows the seeds in effect from the
snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import redis

from service.keys import CONTROL_KEY, TOPIC_SEEDS_KEY
from service.store.redis_values import text

SEQ_FIELD = "seeds_seq"


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
        data = json.loads(value)
        return cls(tuple(str(w) for w in data["words"]), float(data["strength"]))


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
            seeds[int(text(key))] = TopicSeeds.from_json(value)
        except (ValueError, KeyError, TypeError):
            continue  # not seeds this module wrote
    return int(text(seq)) if seq is not None else 0, seeds
