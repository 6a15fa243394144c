"""JSON bodies of the read endpoints, built from what the refresher read (no pydantic per word).

They follow the models of :mod:`service.api.schemas` (the OpenAPI schema); a test checks that.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from lda.model import Estimate
from service.snapshot import PerplexityPoint, Snapshot, WordWeight


def dumps(data: Any) -> bytes:
    """Compact JSON bytes (NaN refused: the schema has no place for it)."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).encode("utf-8")


def iso(unix: float) -> str:
    """A unix time as ISO 8601 UTC, as pydantic writes a datetime."""
    return datetime.fromtimestamp(unix, tz=UTC).isoformat().replace("+00:00", "Z")


def _words(words: list[WordWeight], top: int) -> list[dict[str, Any]]:
    return [{"word": w.word, "weight": w.weight} for w in words[:top]]


def topics(snapshot: Snapshot, top: int, estimate: Estimate) -> bytes:
    """``TopicsOut``: every topic of the ``estimate`` with its ``top`` words."""
    return dumps(
        {
            "docs_seen": snapshot.docs_seen,
            "updated_at": iso(snapshot.updated_at),
            "sampler": snapshot.sampler,
            "estimate": estimate,
            "topics": [
                {"id": i, "words": _words(words, top)}
                for i, words in enumerate(snapshot.words(estimate))
            ],
        }
    )


def one_topic(snapshot: Snapshot, topic_id: int, top: int, estimate: Estimate) -> bytes:
    """``OneTopicOut``: one topic of the ``estimate`` (its id must be in range), ``top`` words."""
    return dumps(
        {
            "id": topic_id,
            "words": _words(snapshot.words(estimate)[topic_id], top),
            "docs_seen": snapshot.docs_seen,
            "updated_at": iso(snapshot.updated_at),
            "sampler": snapshot.sampler,
            "estimate": estimate,
        }
    )


def point(p: PerplexityPoint) -> bytes:
    """``PerplexityPointOut``."""
    return dumps(
        {
            "docs_seen": p.docs_seen,
            "perplexity": p.perplexity,
            "perplexity_avg": p.perplexity_avg,
            "coherence": p.coherence,
            "diversity": p.diversity,
            "at": iso(p.at),
        }
    )


def perplexity(latest: bytes | None, history: list[bytes]) -> bytes:
    """``PerplexityOut`` from points already rendered by :func:`point`."""
    return b'{"latest":%s,"history":[%s]}' % (latest or b"null", b",".join(history))
