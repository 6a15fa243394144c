"""The snapshot: what the worker tells the API after each update (each topic's top words in
beta_mean and in the current sample, progress, throughput, the topics' quality and articles),
as JSON beside a version token that is replaced with it.

:func:`publish_snapshot` writes both and beats the heart in one MULTI, so a reader never sees
half an update; the readers accept clients with or without ``decode_responses``. The other keys
the worker writes have their own modules: :mod:`service.store.heartbeat`,
:mod:`service.store.perplexity`, :mod:`service.store.published_model`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import redis

from lda.config import Estimate
from lda.topic_ids import Identity, position, saved
from service.keys import HEARTBEAT_KEY, SNAPSHOT_KEY, SNAPSHOT_VERSION_KEY
from service.store import compat
from service.store.redis_values import finite, text
from service.store.topic_article import TopicArticle
from service.store.topic_moves import set_topic_moves


@dataclass(frozen=True)
class WordWeight:
    """One word of a topic and its probability beta[k, w]."""

    word: str
    weight: float


@dataclass(frozen=True)
class Snapshot:
    """What the worker tells the API after each update (top words, progress, throughput).

    ``topics`` are beta_mean's top words, the topics served; ``sample_topics`` the current
    sample's, as many words each (the sample's whole K×W matrix stays with the worker)."""

    docs_seen: int
    updated_at: float
    sampler: str
    step_size: float
    device: str
    vocab_size: int
    topics: list[list[WordWeight]]
    sample_topics: list[list[WordWeight]]
    docs_per_s: float = 0.0
    tokens_per_s: float = 0.0
    # Documents learned a second over the last minute of wall time, fresh and revisited, and
    # the reservoir revisits come from: articles held, revisits per article so far.
    fresh_docs_per_s: float = 0.0
    revisit_docs_per_s: float = 0.0
    # Seconds from a fresh article's arrival in the queue to the end of the step that learned
    # it, over the last minute: median and 95th percentile (None: none learned in it).
    fresh_wait_s: float | None = None
    fresh_wait_p95_s: float | None = None
    reservoir_articles: int = 0
    reservoir_passes: float = 0.0
    counters: dict[str, int] = field(default_factory=dict)
    rank_docs_per_s: list[float] = field(default_factory=list)  # per rank of a group
    idle_since: float | None = None  # unix time the worker found the stream empty (rates 0)
    # Per topic of ``topics`` (absent from older workers' snapshots): as of the evaluation at
    # ``quality_docs``, NPMI coherence (None without held-out documents), JS divergence in bits
    # since the evaluation before (None for the first) and the documents seen when it last
    # moved more than lda.config.CHANGED_BITS; and for each of its words the 5-95% interval of
    # its weight over the chain's recent samples (None until two samples held the word).
    checkpoint_at: float | None = None  # unix time of the last checkpoint written
    quality_docs: int | None = None
    topic_coherence: list[float | None] | None = None
    topic_drift: list[float] | None = None
    topic_changed_at: list[int] | None = None
    intervals: list[list[list[float | None]]] | None = None
    # Per topic (absent from older workers' snapshots): its share of the stream's tokens (a
    # running average of the minibatches' expectations, summing to 1), and the articles most
    # about it, largest aged share first, each a row [title, article id, source, share, docs
    # seen when learned] (see TopicArticle; docs/topics.md says how they are ranked and aged).
    topic_size: list[float] | None = None
    topic_articles: list[list[list[Any]]] | None = None
    # Per topic, a name suggested by its first words by relevance (lda.relevance), as of the
    # model last published (None from older workers).
    topic_suggested: list[str] | None = None
    # The version of the vocabulary the topics' words come from: 0 the first, one more at each
    # refresh of the word list (0 from workers before vocabularies changed).
    vocab_version: int = 0
    # Per topic, the seed words an operator gave it (an empty list for none; None from workers
    # before seeds): docs/topics.md, "Seeded topics".
    topic_seeds: list[list[str]] | None = None
    # Per topic, beside ``topic_articles``, each article's [share_bound, tokens]: how sure its
    # share is given its length (a field of its own, so an API from before it reads the rows as
    # ever; None from workers before it).
    topic_article_bounds: list[list[list[float]]] | None = None
    # Each listed topic's number (docs/topics.md, "Topics that shape themselves"): every
    # per-topic list above holds the listed topics, in this order; while topics move, the live
    # ones only. While K is fixed (none given, or a snapshot from before numbers), topic k is
    # number k (lda.topic_ids.Identity), absent from the JSON.
    topic_ids: Sequence[int] = ()

    def __post_init__(self) -> None:
        if not self.topic_ids:
            object.__setattr__(self, "topic_ids", Identity.of(len(self.topics)))

    @property
    def world_size(self) -> int:
        """Ranks learning together: 1 for a single worker."""
        return max(1, len(self.rank_docs_per_s))

    @property
    def n_topics(self) -> int:
        return len(self.topics)

    @property
    def fixed(self) -> bool:
        """K is fixed: the topics are listed by slot, as before numbers."""
        return saved(self.topic_ids) is None

    def number(self, k: int) -> int:
        """The number of the ``k``-th listed topic (``k`` itself while K is fixed)."""
        return self.topic_ids[k]

    def position(self, number: int) -> int | None:
        """Where topic ``number`` is listed, or None when no live topic has it."""
        return position(self.topic_ids, number)

    def words(self, estimate: Estimate) -> list[list[WordWeight]]:
        """Each topic's top words in beta_mean (``mean``) or in the current sample (``sample``)."""
        return self.topics if estimate == "mean" else self.sample_topics

    def articles(self, k: int) -> list[TopicArticle]:
        """The articles behind topic ``k``, most about it first (none before a worker kept any)."""
        if self.topic_articles is None or not 0 <= k < len(self.topic_articles):
            return []
        rows = self.topic_articles[k]
        bounds = self.topic_article_bounds
        sure: list[list[float]] | list[None] = (
            bounds[k] if bounds is not None and k < len(bounds) else []
        )
        if len(sure) != len(rows):  # an older worker's snapshot, or a damaged one
            sure = [None] * len(rows)
        return [TopicArticle.from_row(row, s) for row, s in zip(rows, sure, strict=True)]

    def to_json(self) -> str:
        # Shallow: asdict would deep-copy every WordWeight first, the bulk of the cost.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("topics", "sample_topics"):
            data[name] = [[[w.word, w.weight] for w in words] for words in getattr(self, name)]
        data["topic_ids"] = saved(self.topic_ids)
        if data["topic_ids"] is None:  # K fixed: the JSON of the snapshots before numbers
            del data["topic_ids"]
        return json.dumps(data, separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> Snapshot:
        data: dict[str, Any] = json.loads(text)
        compat.sample_as_mean(data)
        for name in ("topics", "sample_topics"):
            data[name] = [[WordWeight(str(w), float(p)) for w, p in t] for t in data[name]]
        return cls.known(data)

    @classmethod
    def known(cls, data: dict[str, Any]) -> Snapshot:
        """The snapshot of ``data``'s fields this code knows: a newer worker's additions are
        left out, so an API from before them keeps serving while workers are upgraded."""
        return cls(**compat.known_fields(cls, data))


if TYPE_CHECKING:  # the worker's side hands torch tensors; the API reads without torch
    import torch

    Ranked = tuple[torch.Tensor, torch.Tensor]  # (K, n) weights and ids, most probable first


def ranked(beta: torch.Tensor, n: int) -> Ranked:
    """Each topic's ``n`` most probable words (row of ``beta``): weights and ids."""
    import torch

    return torch.topk(beta.detach().float().cpu(), min(n, beta.shape[1]), dim=1)


def top_words(
    beta: torch.Tensor, vocab: Sequence[str], n: int, ranks: Ranked | None = None
) -> list[list[WordWeight]]:
    """The ``n`` most probable words of each topic (row of ``beta``), most probable first
    (``ranks``: :func:`ranked` of the same beta and n, when the caller has it already)."""
    import torch

    if beta.dim() != 2 or beta.shape[1] != len(vocab):
        raise ValueError(f"beta is {tuple(beta.shape)}, expected (K, {len(vocab)})")
    if not bool(torch.isfinite(beta).all()):
        raise ValueError("beta has non-finite entries: never publish NaN")
    return ranked_words(ranked(beta, n) if ranks is None else ranks, vocab)


def ranked_words(ranks: Ranked, vocab: Sequence[str]) -> list[list[WordWeight]]:
    """The words and weights of ``ranks`` ((K, n) weights and word ids, most probable first),
    as the snapshot carries them; non-finite weights are refused."""
    import torch

    values, indices = ranks
    if not bool(torch.isfinite(values).all()):
        raise ValueError("beta has non-finite entries: never publish NaN")
    return [
        [WordWeight(vocab[i], float(v)) for v, i in zip(row_v, row_i, strict=True)]
        for row_v, row_i in zip(values.tolist(), indices.tolist(), strict=True)
    ]


def publish_snapshot(
    client: redis.Redis, snapshot: Snapshot, topic_moves: str | None = None
) -> None:
    """Replace the snapshot and beat the heart, atomically (with ``topic_moves``: the topic
    numbers' body, :func:`service.store.topic_moves.moves_body`, in the same MULTI)."""
    for name in ("step_size", "docs_per_s", "tokens_per_s", "updated_at"):
        finite(getattr(snapshot, name), name)
    pipe = client.pipeline(transaction=True)
    pipe.set(SNAPSHOT_KEY, snapshot.to_json())
    pipe.set(SNAPSHOT_VERSION_KEY, uuid.uuid4().hex)
    pipe.set(HEARTBEAT_KEY, repr(snapshot.updated_at))
    if topic_moves is not None:
        set_topic_moves(pipe, topic_moves)
    pipe.execute()


def read_snapshot(client: redis.Redis) -> Snapshot | None:
    """The latest snapshot, or None before the worker's first update."""
    raw = client.get(SNAPSHOT_KEY)
    return None if raw is None else Snapshot.from_json(raw)


def read_snapshot_version(client: redis.Redis) -> str | None:
    """The current snapshot's version token (one small GET), or None when there is none.

    A snapshot written before version tokens existed has none: :func:`read_versioned_snapshot`
    then names it by a hash of its text.
    """
    raw = client.get(SNAPSHOT_VERSION_KEY)
    return None if raw is None else text(raw)


def read_raw_snapshot(client: redis.Redis) -> tuple[str, bytes] | None:
    """(version, text) of the snapshot, read together in one MULTI (a snapshot without a
    version token is named by a hash of its text), or None before the first update."""
    pipe = client.pipeline(transaction=True)
    pipe.get(SNAPSHOT_VERSION_KEY)
    pipe.get(SNAPSHOT_KEY)
    version, raw = pipe.execute()
    if raw is None:
        return None
    snapshot = raw if isinstance(raw, bytes) else raw.encode("utf-8")
    return compat.snapshot_name(version, snapshot), snapshot


def read_versioned_snapshot(client: redis.Redis) -> tuple[str, Snapshot] | None:
    """(version, snapshot) read together in one MULTI, or None before the first update."""
    raw = read_raw_snapshot(client)
    return None if raw is None else (raw[0], Snapshot.from_json(raw[1]))
