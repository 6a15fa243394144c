"""The perplexity history: one JSON point per evaluation in a sorted set scored by docs_seen,
written by the worker and served by the API; and the sorted-set history both this and the
topics' record (:mod:`service.store.topic_history`) are kept in."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import redis

from service.keys import PERPLEXITY_KEY
from service.store.compat import known_fields
from service.store.redis_values import finite


@dataclass(frozen=True)
class PerplexityPoint:
    """Held-out perplexity after ``docs_seen`` documents: this sample's and the averaged one."""

    docs_seen: int
    perplexity: float
    perplexity_avg: float
    at: float
    coherence: float | None = None  # absent from points of workers that predate coherence
    diversity: float | None = None
    # The vocabulary version of the topics scored (None from workers before versions existed):
    # perplexities under different vocabularies are not comparable.
    vocab_version: int | None = None

    @classmethod
    def from_json(cls, text: str | bytes) -> PerplexityPoint:
        """The point of ``text``, a newer worker's additions left out."""
        data: dict[str, Any] = json.loads(text)
        return cls(**known_fields(cls, data))


def append_perplexity(client: redis.Redis, point: PerplexityPoint, *, keep: int) -> None:
    """Add a point (replacing one at the same docs_seen) and keep only the newest ``keep``."""
    finite(point.perplexity, "perplexity")
    finite(point.perplexity_avg, "perplexity_avg")
    member = json.dumps(asdict(point), separators=(",", ":"))
    append_scored(client, PERPLEXITY_KEY, member, point.docs_seen, keep=keep)


def append_scored(client: redis.Redis, key: str, member: str, docs: int, *, keep: int) -> None:
    """Add ``member`` to the sorted set ``key`` at ``docs`` (replacing one at the same docs) and
    keep the newest ``keep``, in one MULTI: the perplexity and topic histories."""
    pipe = client.pipeline(transaction=True)
    pipe.zremrangebyscore(key, docs, docs)
    pipe.zadd(key, {member: docs})
    pipe.zremrangebyrank(key, 0, -keep - 1)
    pipe.execute()


def truncate_scored(client: redis.Redis, key: str, after_docs: int) -> int:
    """Drop the members of ``key`` beyond ``after_docs``; how many went."""
    return int(client.zremrangebyscore(key, f"({after_docs}", "+inf"))


def truncate_perplexity(client: redis.Redis, after_docs: int) -> int:
    """Drop points beyond ``after_docs`` (after resuming an older checkpoint); how many went."""
    return truncate_scored(client, PERPLEXITY_KEY, after_docs)


def read_perplexity(client: redis.Redis, since: int | None = None) -> list[PerplexityPoint]:
    """Points in docs_seen order; with ``since``, only those strictly after it."""
    low = "-inf" if since is None else f"({since}"
    raw: list[Any] = client.zrangebyscore(PERPLEXITY_KEY, low, "+inf")
    return [PerplexityPoint.from_json(m) for m in raw]


def perplexity_signature(client: redis.Redis) -> tuple[int, bytes | str | None]:
    """(number of points, newest member): changes whenever a point is added, replaced or dropped
    by :func:`append_perplexity` or :func:`truncate_perplexity`; two cheap commands."""
    pipe = client.pipeline(transaction=True)
    pipe.zcard(PERPLEXITY_KEY)
    pipe.zrange(PERPLEXITY_KEY, -1, -1)
    count, newest = pipe.execute()
    return int(count), (newest[0] if newest else None)


def latest_perplexity(client: redis.Redis) -> PerplexityPoint | None:
    """The point with the most documents seen, or None."""
    raw: list[Any] = client.zrange(PERPLEXITY_KEY, -1, -1)
    return PerplexityPoint.from_json(raw[0]) if raw else None
