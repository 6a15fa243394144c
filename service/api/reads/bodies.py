"""JSON bodies of the read endpoints, built from what the refresher read (no pydantic per word).

They follow the models of :mod:`service.api.schemas` (the OpenAPI schema); a test checks that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from lda.config import Estimate
from service.api.http.compact_json import dumps
from service.api.reads.relevance import Ranking
from service.store.perplexity import PerplexityPoint
from service.store.snapshot import Snapshot, WordWeight

TopicOrder = Literal["id", "coherence", "size"]
# Default ``top`` of /topics and /topics/{id} (bounded by the setting topic_words).
TOPICS_TOP = 10
ONE_TOPIC_TOP = 20


def iso(unix: float) -> str:
    """A unix time as ISO 8601 UTC, as pydantic writes a datetime."""
    return datetime.fromtimestamp(unix, tz=UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class Labels:
    """What the topics are called: the operators' names by topic number, and a suggested name
    for every topic listed (its first words by relevance)."""

    names: Mapping[int, str]
    suggested: Sequence[str]


def _words(
    snapshot: Snapshot,
    topic_id: int,
    top: int,
    estimate: Estimate,
    uncertainty: bool,
    ranking: Ranking | None,
) -> list[dict[str, Any]]:
    """The topic's ``top`` words, by probability or by ``ranking``'s relevance; with
    ``uncertainty`` their intervals (beta_mean's words only: null for the sample's, before the
    worker has two samples, and for a relevant word outside the snapshot's top words)."""
    served: list[WordWeight] = snapshot.words(estimate)[topic_id]
    words = served[:top] if ranking is None else ranking.words(topic_id, top)
    if not uncertainty:
        return [{"word": w.word, "weight": w.weight} for w in words]
    bounds = snapshot.intervals[topic_id] if snapshot.intervals and estimate == "mean" else None
    if bounds is not None and ranking is not None:
        at = {w.word: i for i, w in enumerate(served)}
        found = [at.get(w.word) for w in words]
        picked = [[None, None] if i is None else bounds[i] for i in found]
    else:
        picked = [[None, None] if bounds is None else bounds[i] for i in range(len(words))]
    return [
        {"word": w.word, "weight": w.weight, "low": low, "high": high}
        for w, (low, high) in zip(words, picked, strict=True)
    ]


def _label(snapshot: Snapshot, labels: Labels, topic_id: int) -> dict[str, Any]:
    size = snapshot.topic_size
    return {
        "size": None if size is None or topic_id >= len(size) else size[topic_id],
        "name": labels.names.get(snapshot.number(topic_id)),
        "suggested_name": labels.suggested[topic_id],
        **_seeds(snapshot, topic_id),
    }


def _seeds(snapshot: Snapshot, topic_id: int) -> dict[str, Any]:
    """The topic's seed words in effect, and those among the top words the snapshot carries."""
    given = snapshot.topic_seeds
    seeds = given[topic_id] if given is not None and topic_id < len(given) else []
    top = {w.word for w in snapshot.topics[topic_id]}
    return {"seeds": seeds, "seeds_in_top": [w for w in seeds if w in top]}


def _quality(snapshot: Snapshot, topic_id: int) -> dict[str, Any]:
    coherence, drift = snapshot.topic_coherence, snapshot.topic_drift
    return {
        "coherence": None if coherence is None else coherence[topic_id],
        "drift": None if drift is None else drift[topic_id],
    }


def _highest_first(name: str) -> Any:
    """A sort key: the topic's ``name`` figure, highest first, topics without one last."""

    def key(topic: dict[str, Any]) -> tuple[bool, float]:
        value = topic[name]
        return value is None, -(value or 0.0)

    return key


def _articles(snapshot: Snapshot, topic_id: int) -> list[dict[str, Any]]:
    return [
        {
            "title": a.title,
            "id": a.id,
            "source": a.source,
            "share": a.share,
            "share_bound": a.share_bound,
            "tokens": a.tokens,
            "docs_seen": a.docs_seen,
            "url": a.url,
        }
        for a in snapshot.articles(topic_id)
    ]


def topics(
    snapshot: Snapshot,
    labels: Labels,
    top: int,
    estimate: Estimate,
    uncertainty: bool = False,
    sort: TopicOrder = "id",
    ranking: Ranking | None = None,
) -> bytes:
    """``TopicsOut``: every topic of the ``estimate`` with its ``top`` words (by ``ranking``'s
    relevance when given, beta_mean's only)."""
    listed = [
        {
            "id": snapshot.number(k),
            "words": _words(snapshot, k, top, estimate, uncertainty, ranking),
            **_quality(snapshot, k),
            **_label(snapshot, labels, k),
        }
        for k in range(snapshot.n_topics)
    ]
    if sort != "id":
        listed.sort(key=_highest_first(sort))  # stable: ties keep id order
    return dumps(
        {
            "docs_seen": snapshot.docs_seen,
            "updated_at": iso(snapshot.updated_at),
            "sampler": snapshot.sampler,
            "estimate": estimate,
            "relevance": None if ranking is None else ranking.lam,
            "quality_docs": snapshot.quality_docs,
            "topics": listed,
        }
    )


def one_topic(
    snapshot: Snapshot,
    labels: Labels,
    topic_id: int,
    top: int,
    estimate: Estimate,
    uncertainty: bool = False,
    ranking: Ranking | None = None,
) -> bytes:
    """``OneTopicOut``: one topic of the ``estimate`` (``topic_id``: its place in the snapshot,
    which must be in range), ``top`` words, and the articles behind it."""
    changed = snapshot.topic_changed_at
    return dumps(
        {
            "id": snapshot.number(topic_id),
            "words": _words(snapshot, topic_id, top, estimate, uncertainty, ranking),
            **_quality(snapshot, topic_id),
            **_label(snapshot, labels, topic_id),
            "docs_seen": snapshot.docs_seen,
            "updated_at": iso(snapshot.updated_at),
            "sampler": snapshot.sampler,
            "estimate": estimate,
            "relevance": None if ranking is None else ranking.lam,
            "quality_docs": snapshot.quality_docs,
            "changed_at_docs": None if changed is None else changed[topic_id],
            "articles": _articles(snapshot, topic_id),
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
            "vocab_version": p.vocab_version,
            "at": iso(p.at),
        }
    )


def perplexity(latest: bytes | None, history: list[bytes]) -> bytes:
    """``PerplexityOut`` from points already rendered by :func:`point`."""
    return b'{"latest":%s,"history":[%s]}' % (latest or b"null", b",".join(history))
