"""JSON bodies of the read endpoints, built from what the refresher read (no pydantic per word).

They follow the models of :mod:`service.api.schemas` (the OpenAPI schema); a test checks that.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from lda.config import Estimate
from service.api.http.compact_json import dumps
from service.store.snapshot import PerplexityPoint, Snapshot

TopicOrder = Literal["id", "coherence"]
# Default ``top`` of /topics and /topics/{id} (bounded by the setting topic_words).
TOPICS_TOP = 10
ONE_TOPIC_TOP = 20


def iso(unix: float) -> str:
    """A unix time as ISO 8601 UTC, as pydantic writes a datetime."""
    return datetime.fromtimestamp(unix, tz=UTC).isoformat().replace("+00:00", "Z")


def _words(
    snapshot: Snapshot, topic_id: int, top: int, estimate: Estimate, uncertainty: bool
) -> list[dict[str, Any]]:
    """The topic's ``top`` words; with ``uncertainty`` their intervals (beta_mean's words only:
    null for the sample's, and before the worker has two samples)."""
    words = snapshot.words(estimate)[topic_id][:top]
    if not uncertainty:
        return [{"word": w.word, "weight": w.weight} for w in words]
    bounds = snapshot.intervals[topic_id] if snapshot.intervals and estimate == "mean" else None
    return [
        {
            "word": w.word,
            "weight": w.weight,
            "low": None if bounds is None else bounds[i][0],
            "high": None if bounds is None else bounds[i][1],
        }
        for i, w in enumerate(words)
    ]


def _quality(snapshot: Snapshot, topic_id: int) -> dict[str, Any]:
    coherence, drift = snapshot.topic_coherence, snapshot.topic_drift
    return {
        "coherence": None if coherence is None else coherence[topic_id],
        "drift": None if drift is None else drift[topic_id],
    }


def _by_coherence(topic: dict[str, Any]) -> tuple[bool, float]:
    coherence = topic["coherence"]
    return coherence is None, -(coherence or 0.0)


def topics(
    snapshot: Snapshot,
    top: int,
    estimate: Estimate,
    uncertainty: bool = False,
    sort: TopicOrder = "id",
) -> bytes:
    """``TopicsOut``: every topic of the ``estimate`` with its ``top`` words."""
    listed = [
        {"id": k, "words": _words(snapshot, k, top, estimate, uncertainty), **_quality(snapshot, k)}
        for k in range(snapshot.n_topics)
    ]
    if sort == "coherence":
        listed.sort(key=_by_coherence)  # stable: ties keep id order
    return dumps(
        {
            "docs_seen": snapshot.docs_seen,
            "updated_at": iso(snapshot.updated_at),
            "sampler": snapshot.sampler,
            "estimate": estimate,
            "quality_docs": snapshot.quality_docs,
            "topics": listed,
        }
    )


def one_topic(
    snapshot: Snapshot, topic_id: int, top: int, estimate: Estimate, uncertainty: bool = False
) -> bytes:
    """``OneTopicOut``: one topic of the ``estimate`` (its id must be in range), ``top`` words."""
    changed = snapshot.topic_changed_at
    return dumps(
        {
            "id": topic_id,
            "words": _words(snapshot, topic_id, top, estimate, uncertainty),
            **_quality(snapshot, topic_id),
            "docs_seen": snapshot.docs_seen,
            "updated_at": iso(snapshot.updated_at),
            "sampler": snapshot.sampler,
            "estimate": estimate,
            "quality_docs": snapshot.quality_docs,
            "changed_at_docs": None if changed is None else changed[topic_id],
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
