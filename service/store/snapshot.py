"""The Redis schema between the worker (writer) and the API (reader).

Its keys (names and who reads what: :mod:`service.keys`) are the snapshot (the top words of
beta_mean and of the current sample), its version token, the heartbeat, the perplexity history,
the model for ``/infer`` (hash: version, docs_seen, topics, vocab_size, vocab_version (absent
from older workers: 0), gamma, published_at, beta (the worker's beta_mean) as W×K float32
little-endian bytes (``layout`` "words", a word's column contiguous; a hash without ``layout``
holds K×W) in ``beta_parts`` fields ``beta:0``, ``beta:1``, ... of whole words (a hash from
before the parts holds it in one field, ``beta``), vocab joined by newlines; the API reloads it
only when ``version`` changes) and the control hash the API writes (``paused`` "1"/"0", and
``checkpoint_seq``, a counter the worker answers by checkpointing when it grows).

Each writer is one atomic Redis command or one MULTI/EXEC, so a reader never sees half an
update. Readers accept clients with or without ``decode_responses`` except :func:`read_model`,
which needs raw bytes: use :func:`service.store.redis_client.connect`.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np
import redis

from lda.config import Estimate
from service.keys import (
    CONTROL_KEY,
    DEFAULT_COUNTERS_KEY,
    HEARTBEAT_KEY,
    MODEL_KEY,
    PERPLEXITY_KEY,
    SNAPSHOT_KEY,
    SNAPSHOT_VERSION_KEY,
)


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _finite(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{what} must be finite, got {value!r}: never publish NaN")
    return float(value)


# --- snapshot --------------------------------------------------------------------------


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

    @property
    def world_size(self) -> int:
        """Ranks learning together: 1 for a single worker."""
        return max(1, len(self.rank_docs_per_s))

    @property
    def n_topics(self) -> int:
        return len(self.topics)

    def words(self, estimate: Estimate) -> list[list[WordWeight]]:
        """Each topic's top words in beta_mean (``mean``) or in the current sample (``sample``)."""
        return self.topics if estimate == "mean" else self.sample_topics

    def articles(self, k: int) -> list[TopicArticle]:
        """The articles behind topic ``k``, most about it first (none before a worker kept any)."""
        if self.topic_articles is None or not 0 <= k < len(self.topic_articles):
            return []
        return [TopicArticle.from_row(row) for row in self.topic_articles[k]]

    def to_json(self) -> str:
        # Shallow: asdict would deep-copy every WordWeight first, the bulk of the cost.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("topics", "sample_topics"):
            data[name] = [[[w.word, w.weight] for w in words] for words in getattr(self, name)]
        return json.dumps(data, separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> Snapshot:
        data: dict[str, Any] = json.loads(text)
        # A worker from before beta_mean published its sample as ``topics``, and only that.
        data.setdefault("sample_topics", data["topics"])
        for name in ("topics", "sample_topics"):
            data[name] = [[WordWeight(str(w), float(p)) for w, p in t] for t in data[name]]
        return cls.known(data)

    @classmethod
    def known(cls, data: dict[str, Any]) -> Snapshot:
        """The snapshot of ``data``'s fields this code knows: a newer worker's additions are
        left out, so an API from before them keeps serving while workers are upgraded."""
        names = _SNAPSHOT_FIELDS
        return cls(**{k: v for k, v in data.items() if k in names})


# The live source's articles link to Wikipedia by page id; a file source's have no link.
WIKIPEDIA_SOURCE = "wikipedia"
WIKIPEDIA_PAGE_URL = "https://en.wikipedia.org/?curid={id}"


@dataclass(frozen=True)
class TopicArticle:
    """One article behind a topic: its title, id (the page id for Wikipedia), source, its
    share of the topic in the Gibbs expectations it was learned with, and the documents seen
    when it was learned."""

    title: str
    id: str
    source: str
    share: float
    docs_seen: int

    @property
    def url(self) -> str | None:
        """The article on Wikipedia for the live source; None for a file source."""
        if self.source != WIKIPEDIA_SOURCE or not self.id.isdigit():
            return None
        return WIKIPEDIA_PAGE_URL.format(id=self.id)

    def row(self) -> list[Any]:
        return [self.title, self.id, self.source, self.share, self.docs_seen]

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> TopicArticle:
        title, article_id, source, share, docs_seen = row
        return cls(str(title), str(article_id), str(source), float(share), int(docs_seen))


_SNAPSHOT_FIELDS = frozenset(f.name for f in fields(Snapshot))


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


def publish_snapshot(client: redis.Redis, snapshot: Snapshot) -> None:
    """Replace the snapshot and beat the heart, atomically."""
    for name in ("step_size", "docs_per_s", "tokens_per_s", "updated_at"):
        _finite(getattr(snapshot, name), name)
    pipe = client.pipeline(transaction=True)
    pipe.set(SNAPSHOT_KEY, snapshot.to_json())
    pipe.set(SNAPSHOT_VERSION_KEY, uuid.uuid4().hex)
    pipe.set(HEARTBEAT_KEY, repr(snapshot.updated_at))
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
    return None if raw is None else _text(raw)


def read_raw_snapshot(client: redis.Redis) -> tuple[str, bytes] | None:
    """(version, text) of the snapshot, read together in one MULTI (a snapshot without a
    version token is named by a hash of its text), or None before the first update."""
    pipe = client.pipeline(transaction=True)
    pipe.get(SNAPSHOT_VERSION_KEY)
    pipe.get(SNAPSHOT_KEY)
    version, raw = pipe.execute()
    if raw is None:
        return None
    text = raw if isinstance(raw, bytes) else raw.encode("utf-8")
    name = _text(version) if version is not None else "sha256:" + hashlib.sha256(text).hexdigest()
    return name, text


def read_versioned_snapshot(client: redis.Redis) -> tuple[str, Snapshot] | None:
    """(version, snapshot) read together in one MULTI, or None before the first update."""
    raw = read_raw_snapshot(client)
    return None if raw is None else (raw[0], Snapshot.from_json(raw[1]))


def beat(client: redis.Redis, at: float | None = None) -> None:
    """Mark the worker alive (call while it waits for documents, too)."""
    client.set(HEARTBEAT_KEY, repr(time.time() if at is None else at))


def read_heartbeat(client: redis.Redis) -> float | None:
    """Unix time of the worker's last heartbeat, or None if it never beat."""
    raw = client.get(HEARTBEAT_KEY)
    return None if raw is None else float(_text(raw))


# --- perplexity history ----------------------------------------------------------------


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
        """The point of ``text``, a newer worker's additions left out (as in
        :meth:`Snapshot.known`), so an older API keeps serving while workers are upgraded."""
        data: dict[str, Any] = json.loads(text)
        return cls(**{k: v for k, v in data.items() if k in _POINT_FIELDS})


_POINT_FIELDS = frozenset(f.name for f in fields(PerplexityPoint))


def append_perplexity(client: redis.Redis, point: PerplexityPoint, *, keep: int) -> None:
    """Add a point (replacing one at the same docs_seen) and keep only the newest ``keep``."""
    _finite(point.perplexity, "perplexity")
    _finite(point.perplexity_avg, "perplexity_avg")
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


# --- the model for /infer --------------------------------------------------------------


@dataclass(frozen=True)
class PublishedModel:
    """beta and its vocabulary as the API loads them."""

    version: str
    docs_seen: int
    gamma: float
    beta: np.ndarray  # (K, W) float32, a view of the word-major values read
    vocab: list[str]
    published_at: float
    # The stream's figures published with beta (None from a worker that predates them).
    stream: StreamFigures | None = None
    # The version of ``vocab`` (0 from a worker before vocabularies changed).
    vocab_version: int = 0

    @property
    def n_topics(self) -> int:
        return int(self.beta.shape[0])


@dataclass(frozen=True)
class StreamFigures:
    """What the stream says beside beta, for relevance ranking and export: each vocabulary
    word's count in the tokens learned (fresh, not revisited), each topic's share of the
    stream's tokens, and a bounded uniform sample of the learned documents' lengths (tokens
    in the vocabulary) and topic shares (rows sum to 1)."""

    term_frequency: np.ndarray  # (W,) float64
    topic_size: np.ndarray  # (K,) float64, sums to 1
    doc_lengths: np.ndarray  # (n,) int64
    doc_topic: np.ndarray  # (n, K) float32

    def fields(self) -> dict[str, Any]:
        """The model hash's fields for these figures (little-endian bytes)."""
        for name in ("term_frequency", "topic_size", "doc_topic"):
            if not _all_finite(np.asarray(getattr(self, name), dtype=np.float64)):
                raise ValueError(f"{name} has non-finite entries: never publish NaN")
        return {
            "term_frequency": np.asarray(self.term_frequency, dtype="<f8").tobytes(),
            "topic_size": np.asarray(self.topic_size, dtype="<f8").tobytes(),
            "doc_lengths": np.asarray(self.doc_lengths, dtype="<i8").tobytes(),
            "doc_topic": np.asarray(self.doc_topic, dtype="<f4").tobytes(),
            "doc_sample": len(self.doc_lengths),
        }

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any], n_topics: int) -> StreamFigures | None:
        """The figures of a model hash's ``fields`` (names decoded), or None without them."""
        if fields.get("term_frequency") is None or fields.get("doc_sample") is None:
            return None
        n = int(_text(fields["doc_sample"]))
        return cls(
            term_frequency=np.frombuffer(_bytes(fields["term_frequency"]), dtype="<f8"),
            topic_size=np.frombuffer(_bytes(fields["topic_size"]), dtype="<f8"),
            doc_lengths=np.frombuffer(_bytes(fields["doc_lengths"]), dtype="<i8"),
            doc_topic=np.frombuffer(_bytes(fields["doc_topic"]), dtype="<f4").reshape(n, n_topics),
        )


STREAM_FIELDS = ("term_frequency", "topic_size", "doc_lengths", "doc_topic", "doc_sample")


def publish_model(
    client: redis.Redis,
    beta: torch.Tensor,
    vocab: Sequence[str],
    *,
    docs_seen: int,
    gamma: float,
    at: float | None = None,
    stream: StreamFigures | None = None,
    vocab_version: int = 0,
) -> str:
    """Store beta (K×W) with its vocabulary and the vocabulary's version (and the ``stream``'s
    figures) in one atomic HSET; returns the new version."""
    import torch

    if beta.dim() != 2 or beta.shape[1] != len(vocab):
        raise ValueError(f"beta is {tuple(beta.shape)}, expected (K, {len(vocab)})")
    # Word-major (W x K): a word's column is one run of bytes (a reader can take the columns
    # it needs), and the lazy chain's beta_mean is laid out so already (no copy).
    words = beta.detach().to("cpu", torch.float32).T.contiguous()
    array = words.numpy().astype("<f4", copy=False)
    if not _all_finite(array):
        raise ValueError("beta has non-finite entries: never publish NaN")
    if any("\n" in w for w in vocab):
        raise ValueError("vocabulary words must not contain newlines")
    if vocab_version < 0:
        raise ValueError(f"vocab_version must be 0 or more, got {vocab_version}")
    version = uuid.uuid4().hex
    # Views of the array's own bytes, not copies (a K x W float32 matrix), in parts a reader
    # copies one at a time (see read_model).
    rows = max(1, MODEL_PART_BYTES // (4 * array.shape[1]))
    parts: dict[str, Any] = {
        f"beta:{i}": array[start : start + rows].data.cast("B")
        for i, start in enumerate(range(0, array.shape[0], rows))
    }
    pipe = client.pipeline(transaction=True)
    pipe.delete(MODEL_KEY)  # no part of an earlier, larger model stays behind
    fields: dict[Any, Any] = {
        "version": version,
        "docs_seen": docs_seen,
        "topics": array.shape[1],
        "vocab_size": array.shape[0],
        "vocab_version": int(vocab_version),
        "layout": "words",
        "gamma": repr(_finite(gamma, "gamma")),
        "published_at": repr(time.time() if at is None else at),
        "beta_parts": len(parts),
        **parts,
        "vocab": "\n".join(vocab),
    }
    if stream is not None:
        if stream.term_frequency.shape != (len(vocab),) or stream.topic_size.shape != (
            beta.shape[0],
        ):
            raise ValueError("the stream's figures do not match beta's shape")
        fields.update(stream.fields())
    pipe.hset(MODEL_KEY, mapping=fields)
    pipe.execute()
    return version


# beta goes to Redis in parts of at most this many bytes (whole words each).
MODEL_PART_BYTES = 16 * 2**20
# Reads of the model in parts before one whole, atomic read (see read_model).
MODEL_READ_TRIES = 3


def _all_finite(array: np.ndarray) -> bool:
    """Every entry of a float32 array finite, with nothing of its size allocated (isfinite's
    masks, the size of the array, were a large part of the worker's peak at K = 1,000): a
    float64 sum of float32 values cannot overflow, and NaN and infinities carry through it, so
    it is finite exactly when they all are."""
    return bool(np.isfinite(array.sum(dtype=np.float64)))


def read_model_version(client: redis.Redis) -> str | None:
    """The published model's version (one cheap HGET), or None before the first."""
    raw = client.hget(MODEL_KEY, "version")
    return None if raw is None else _text(raw)


def read_model_summary(client: redis.Redis) -> tuple[str, int] | None:
    """(version, docs_seen) of the published model without its matrix, or None."""
    version, docs_seen = client.hmget(MODEL_KEY, ["version", "docs_seen"])
    if version is None:
        return None
    return _text(version), int(_text(docs_seen or "0"))


def read_model(client: redis.Redis) -> PublishedModel | None:
    """The whole published model, or None before the first (needs a bytes client).

    beta's parts are read one at a time, each copied into one array, and the version read again
    after them (a model published meanwhile: read again). The whole hash in one reply went
    through redis-py's buffer, its bytes and a trimmed copy, nearly three times the model at an
    API process's peak; this holds the array and one part. The last try (a worker republishing
    faster than the reads) reads the hash whole, atomically."""
    for _ in range(MODEL_READ_TRIES - 1):
        values: list[Any] = client.hmget(MODEL_KEY, list(_MODEL_HEAD))
        head = dict(zip(_MODEL_HEAD, values, strict=True))
        if head["version"] is None:
            return None
        if head["beta_parts"] is None:
            break  # written whole, by a worker from before the parts
        k, w = int(_text(head["topics"])), int(_text(head["vocab_size"]))
        flat = np.empty(k * w, dtype="<f4")
        if _read_parts(client, int(_text(head["beta_parts"])), flat.view(np.uint8)):
            vocab = client.hget(MODEL_KEY, "vocab")
            extra: list[Any] = client.hmget(MODEL_KEY, list(STREAM_FIELDS))
            if vocab is not None and client.hget(MODEL_KEY, "version") == head["version"]:
                stream = dict(zip(STREAM_FIELDS, extra, strict=True))
                return _published({**head, **stream, "vocab": vocab}, flat)
    raw: Mapping[bytes | str, bytes | str] = client.hgetall(MODEL_KEY)
    if not raw:
        return None
    fields = {_text(k): v for k, v in raw.items()}
    if "beta" in fields:
        blob = _bytes(fields["beta"])
    else:
        blob = b"".join(
            _bytes(fields[f"beta:{i}"]) for i in range(int(_text(fields["beta_parts"])))
        )
    # A view of the reply's bytes, not a copy: read-only, which its readers respect (inference
    # gathers columns of it).
    return _published(fields, np.frombuffer(blob, dtype="<f4"))


# The model's fields but beta and the vocabulary, read first.
_MODEL_HEAD = (
    "version", "docs_seen", "topics", "vocab_size", "vocab_version", "layout", "gamma",
    "published_at", "beta_parts",
)  # fmt: skip


def _read_parts(client: redis.Redis, parts: int, into: np.ndarray) -> bool:
    """Copy beta's ``parts`` into ``into`` (bytes) one at a time; False if they do not fill it
    exactly (a model published meanwhile)."""
    at = 0
    for i in range(parts):
        part = client.hget(MODEL_KEY, f"beta:{i}")
        if part is None or at + len(part) > into.size:
            return False
        into[at : at + len(part)] = np.frombuffer(_bytes(part), dtype=np.uint8)
        at += len(part)
    return at == into.size


def _bytes(value: Any) -> bytes:
    if not isinstance(value, bytes):
        raise TypeError(
            "read_model needs a client without decode_responses "
            "(see service.store.redis_client.connect)"
        )
    return value


def _published(fields: Mapping[str, Any], flat: np.ndarray) -> PublishedModel:
    """The model of ``fields`` (the hash's, decoded names) with beta's float32 values."""
    k, w = int(_text(fields["topics"])), int(_text(fields["vocab_size"]))
    values = flat
    # (K, W) either way; word-major storage unless the worker predates it.
    words = _text(fields.get("layout") or b"topics") == "words"
    beta = values.reshape(w, k).T if words else values.reshape(k, w)
    return PublishedModel(
        version=_text(fields["version"]),
        docs_seen=int(_text(fields["docs_seen"])),
        gamma=float(_text(fields["gamma"])),
        beta=beta,
        vocab=_text(fields["vocab"]).split("\n"),
        published_at=float(_text(fields["published_at"])),
        stream=StreamFigures.from_fields(fields, k),
        vocab_version=int(_text(fields.get("vocab_version") or b"0")),
    )


# --- control: API -> worker --------------------------------------------------------------


@dataclass(frozen=True)
class Control:
    """What the operator asked for: pause state and how many checkpoints were requested."""

    paused: bool = False
    checkpoint_seq: int = 0


def set_paused(client: redis.Redis, paused: bool) -> None:
    """Ask the worker to stop (or resume) taking minibatches; it stays so across restarts."""
    client.hset(CONTROL_KEY, "paused", "1" if paused else "0")


def request_checkpoint(client: redis.Redis) -> int:
    """Ask for a checkpoint now; the worker checkpoints when checkpoint_seq grows."""
    return int(client.hincrby(CONTROL_KEY, "checkpoint_seq", 1))


def read_control(client: redis.Redis) -> Control:
    """The operator's current requests (defaults when none were made)."""
    raw: Mapping[bytes | str, bytes | str] = client.hgetall(CONTROL_KEY)
    fields = {_text(k): _text(v) for k, v in raw.items()}
    return Control(
        paused=fields.get("paused") == "1",
        checkpoint_seq=int(fields.get("checkpoint_seq", 0)),
    )


# --- what others write: scraper counters and the queue -----------------------------------


def read_scraper_counters(
    client: redis.Redis, key: str = DEFAULT_COUNTERS_KEY
) -> dict[str, int | float]:
    """The scrapers' counters (fetched, queued, skipped:<reason>, updated_at, ...) as numbers."""
    raw: Mapping[bytes | str, bytes | str] = client.hgetall(key)
    counters: dict[str, int | float] = {}
    for name, value in raw.items():
        text = _text(value)
        try:
            counters[_text(name)] = int(text) if text.lstrip("-").isdigit() else float(text)
        except ValueError:
            continue
    return dict(sorted(counters.items()))


@dataclass(frozen=True)
class QueueStats:
    """Length of the article stream and entries delivered to workers but not acknowledged."""

    length: int
    pending: int


def read_queue(client: redis.Redis, stream: str, group: str) -> QueueStats:
    """XLEN and the consumer group's pending count (0 before the group exists)."""
    length = int(client.xlen(stream))
    try:
        summary: Any = client.xpending(stream, group)
    except redis.ResponseError as exc:
        if "NOGROUP" not in str(exc):
            raise
        return QueueStats(length=length, pending=0)
    return QueueStats(length=length, pending=int(summary["pending"]))
