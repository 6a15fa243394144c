"""Each topic's record over the evaluations: size, coherence, drift and top words.

The worker appends one point per scored evaluation (every topic at once, one sorted-set member
scored by docs_seen, as the perplexity points are) and keeps the newest ``keep``; the API
serves one topic's column of them (``GET /topics/{id}/history``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import redis

from service.keys import TOPIC_HISTORY_KEY
from service.store.perplexity import append_scored, truncate_scored


@dataclass(frozen=True)
class HistoryPoint:
    """Every topic after ``docs_seen`` documents: its share of the stream's tokens, NPMI
    coherence (None without held-out documents), JS drift in bits since the evaluation before
    (None for the first), whether its words changed a lot since then (drift above
    lda.config.CHANGED_BITS), and its top words."""

    docs_seen: int
    at: float
    size: list[float | None]
    coherence: list[float | None]
    drift: list[float | None]
    changed: list[bool]
    words: list[list[str]]
    # Per topic, its id at the point before (the drift matching's; None: labels stayed or no
    # point before), so one topic's history follows it through a label move.
    matched: list[int] | None = None
    # Each column's topic number while topics move (None: K fixed, column k is topic k).
    ids: list[int] | None = None

    @property
    def n_topics(self) -> int:
        return len(self.words)

    @classmethod
    def known(cls, data: dict[str, Any]) -> HistoryPoint:
        """The point of ``data``'s fields this code knows (a newer worker's left out)."""
        return cls(**{k: v for k, v in data.items() if k in _FIELDS})

    def column(self, number: int) -> int | None:
        """Topic ``number``'s column at this point (None: it was not live then)."""
        if self.ids is None:
            return number if 0 <= number < self.n_topics else None
        try:
            return self.ids.index(number)
        except ValueError:
            return None

    def topic(self, k: int) -> dict[str, Any]:
        """Topic ``k``'s figures at this point."""
        return {
            "docs_seen": self.docs_seen,
            "at": self.at,
            "size": self.size[k],
            "coherence": self.coherence[k],
            "drift": self.drift[k],
            "changed": self.changed[k],
            "words": self.words[k],
        }


_FIELDS = frozenset(f.name for f in fields(HistoryPoint))


def _finite_or_none(values: Sequence[float | None]) -> list[float | None]:
    return [None if v is None or not math.isfinite(v) else float(v) for v in values]


def append_topic_history(client: redis.Redis, point: HistoryPoint, *, keep: int) -> None:
    """Add a point (replacing one at the same docs_seen) and keep only the newest ``keep``."""
    data = asdict(point)
    data["coherence"] = _finite_or_none(point.coherence)
    data["drift"] = _finite_or_none(point.drift)
    if point.ids is None:  # K fixed: the points as they were before numbers
        del data["ids"]
    member = json.dumps(data, separators=(",", ":"), allow_nan=False)
    append_scored(client, TOPIC_HISTORY_KEY, member, point.docs_seen, keep=keep)


def truncate_topic_history(client: redis.Redis, after_docs: int) -> int:
    """Drop points beyond ``after_docs`` (after resuming an older checkpoint); how many went."""
    return truncate_scored(client, TOPIC_HISTORY_KEY, after_docs)


def read_topic_history(client: redis.Redis) -> list[HistoryPoint]:
    """Every point kept, in docs_seen order."""
    raw: list[Any] = client.zrange(TOPIC_HISTORY_KEY, 0, -1)
    return [HistoryPoint.known(json.loads(m)) for m in raw]


def topic_history_signature(client: redis.Redis) -> tuple[int, bytes | str | None]:
    """(number of points, newest member): changes whenever a point is added, replaced or
    dropped; two commands."""
    pipe = client.pipeline(transaction=True)
    pipe.zcard(TOPIC_HISTORY_KEY)
    pipe.zrange(TOPIC_HISTORY_KEY, -1, -1)
    count, newest = pipe.execute()
    return int(count), (newest[0] if newest else None)
