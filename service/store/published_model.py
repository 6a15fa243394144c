"""The model for ``/infer`` and export: beta_mean, its vocabulary and the stream's figures,
published by the worker in one hash and loaded by the API only when ``version`` changes.

The hash: ``version``, ``docs_seen``, ``topics``, ``vocab_size``, ``vocab_version``, ``gamma``
(a learned, per-topic prior: their mean, the vector itself as K float64 little-endian bytes in
``gamma_topics``; a model without that field, as older workers wrote, is symmetric),
``published_at``, ``topic_ids`` (while topics move: each row's topic number, comma-separated;
absent while K is fixed, when row k is topic k), beta as W×K float32 little-endian bytes
(``layout`` "words": a word's column is contiguous) in ``beta_parts`` fields ``beta:0``,
``beta:1``, ... of whole words, the vocabulary joined by newlines, and :class:`StreamFigures`'
fields. What older workers wrote instead is read by :mod:`service.store.compat`.
:func:`read_model` needs raw bytes: use :func:`service.store.redis_client.connect`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import redis

from lda.gamma import Gamma, gamma_vector, symmetric_value
from lda.topic_ids import Identity, saved
from service.keys import MODEL_KEY
from service.store import compat
from service.store.redis_values import finite, raw_bytes, text
from service.store.search import FIELDS as INDEX_FIELDS
from service.store.search import IndexRows

if TYPE_CHECKING:  # the worker hands a torch tensor; the API reads without torch
    import torch


@dataclass(frozen=True)
class PublishedModel:
    """beta and its vocabulary as the API loads them."""

    version: str
    docs_seen: int
    gamma: Gamma  # a scalar, or one value per topic (lda.gamma)
    beta: np.ndarray  # (K, W) float32, a view of the word-major values read
    vocab: list[str]
    published_at: float
    # The stream's figures published with beta (None from a worker that predates them).
    stream: StreamFigures | None = None
    # The version of ``vocab`` (0 from a worker before vocabularies changed).
    vocab_version: int = 0
    # The kept articles' shares published with it, as the hash's fields, parsed by the first
    # search that needs them (:func:`service.store.search.index_rows`; None: none).
    index_fields: Mapping[str, Any] | None = None
    # Each row's topic number: while K is fixed (none given, or a model from before numbers)
    # row k is topic k (lda.topic_ids.Identity).
    topic_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.topic_ids:
            object.__setattr__(self, "topic_ids", Identity.of(self.n_topics))

    @property
    def n_topics(self) -> int:
        return int(self.beta.shape[0])

    @property
    def fixed(self) -> bool:
        """K is fixed: row k is topic k, as before numbers."""
        return saved(self.topic_ids) is None

    def number(self, k: int) -> int:
        """The number of row ``k``'s topic."""
        return self.topic_ids[k]


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
        if not compat.has_stream_figures(fields):
            return None
        n = int(text(fields["doc_sample"]))
        return cls(
            term_frequency=np.frombuffer(raw_bytes(fields["term_frequency"]), dtype="<f8"),
            topic_size=np.frombuffer(raw_bytes(fields["topic_size"]), dtype="<f8"),
            doc_lengths=np.frombuffer(raw_bytes(fields["doc_lengths"]), dtype="<i8"),
            doc_topic=np.frombuffer(raw_bytes(fields["doc_topic"]), dtype="<f4").reshape(
                n, n_topics
            ),
        )


STREAM_FIELDS = ("term_frequency", "topic_size", "doc_lengths", "doc_topic", "doc_sample")


def publish_model(
    client: redis.Redis,
    beta: torch.Tensor,
    vocab: Sequence[str],
    *,
    docs_seen: int,
    gamma: Gamma,
    at: float | None = None,
    stream: StreamFigures | None = None,
    vocab_version: int = 0,
    index: IndexRows | None = None,
    topic_ids: Sequence[int] | None = None,
) -> str:
    """Store beta (K×W) with its vocabulary and the vocabulary's version (and the ``stream``'s
    figures, the kept articles' shares: ``index``, and each row's topic number while topics
    move: ``topic_ids``, left out for a fixed K's identity) in one atomic HSET; returns the new
    version."""
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
        **_gamma_fields(gamma, int(array.shape[1])),
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
    numbers = saved(topic_ids)
    if numbers is not None:
        if len(numbers) != beta.shape[0]:
            raise ValueError(f"{len(numbers)} topic numbers for {beta.shape[0]} topics")
        fields["topic_ids"] = ",".join(str(n) for n in numbers)
    if index is not None:
        if index.n_topics != beta.shape[0]:
            raise ValueError(f"the index is of {index.n_topics} topics, beta of {beta.shape[0]}")
        fields.update(index.fields())
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
    return None if raw is None else text(raw)


def read_model_summary(client: redis.Redis) -> tuple[str, int] | None:
    """(version, docs_seen) of the published model without its matrix, or None."""
    version, docs_seen = client.hmget(MODEL_KEY, ["version", "docs_seen"])
    if version is None:
        return None
    return text(version), int(text(docs_seen or "0"))


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
        if compat.model_written_whole(head):
            break
        k, w = int(text(head["topics"])), int(text(head["vocab_size"]))
        flat = np.empty(k * w, dtype="<f4")
        if _read_parts(client, int(text(head["beta_parts"])), flat.view(np.uint8)):
            vocab = client.hget(MODEL_KEY, "vocab")
            names = [*STREAM_FIELDS, *INDEX_FIELDS]
            extra: list[Any] = client.hmget(MODEL_KEY, names)
            if vocab is not None and client.hget(MODEL_KEY, "version") == head["version"]:
                stream = dict(zip(names, extra, strict=True))
                return _published({**head, **stream, "vocab": vocab}, flat)
    raw: Mapping[bytes | str, bytes | str] = client.hgetall(MODEL_KEY)
    if not raw:
        return None
    fields = {text(k): v for k, v in raw.items()}
    blob = compat.whole_beta(fields)
    # A view of the reply's bytes, not a copy: read-only, which its readers respect (inference
    # gathers columns of it).
    return _published(fields, np.frombuffer(blob, dtype="<f4"))


# The model's fields but beta and the vocabulary, read first.
_MODEL_HEAD = (
    "version", "docs_seen", "topics", "vocab_size", "vocab_version", "layout", "gamma",
    "gamma_topics", "published_at", "beta_parts", "topic_ids",
)  # fmt: skip


def _gamma_fields(gamma: Gamma, n_topics: int) -> dict[str, Any]:
    """``gamma`` (the scalar; for a per-topic prior their mean, which an older reader takes
    for a symmetric one) and, for a per-topic prior, ``gamma_topics``."""
    vector = gamma_vector(gamma, n_topics)  # finite and positive, or a ValueError
    value = symmetric_value(gamma)
    if value is not None:
        return {"gamma": repr(finite(value, "gamma"))}
    return {
        "gamma": repr(float(vector.mean())),
        "gamma_topics": np.asarray(vector, dtype="<f8").tobytes(),
    }


def _read_gamma(fields: Mapping[str, Any], n_topics: int) -> Gamma:
    """The published prior: the per-topic vector when there is one, else the scalar."""
    raw = fields.get("gamma_topics")
    if raw is None:
        return float(text(fields["gamma"]))
    vector = np.frombuffer(raw_bytes(raw), dtype="<f8")
    if vector.shape[0] != n_topics:
        raise ValueError(f"gamma_topics holds {vector.shape[0]} values for {n_topics} topics")
    return tuple(float(g) for g in vector)


def _read_parts(client: redis.Redis, parts: int, into: np.ndarray) -> bool:
    """Copy beta's ``parts`` into ``into`` (bytes) one at a time; False if they do not fill it
    exactly (a model published meanwhile)."""
    at = 0
    for i in range(parts):
        part = client.hget(MODEL_KEY, f"beta:{i}")
        if part is None or at + len(part) > into.size:
            return False
        into[at : at + len(part)] = np.frombuffer(raw_bytes(part), dtype=np.uint8)
        at += len(part)
    return at == into.size


def _published(fields: Mapping[str, Any], flat: np.ndarray) -> PublishedModel:
    """The model of ``fields`` (the hash's, decoded names) with beta's float32 values."""
    k, w = int(text(fields["topics"])), int(text(fields["vocab_size"]))
    return PublishedModel(
        version=text(fields["version"]),
        docs_seen=int(text(fields["docs_seen"])),
        gamma=_read_gamma(fields, k),
        beta=compat.model_beta(flat, fields, k, w),
        vocab=text(fields["vocab"]).split("\n"),
        published_at=float(text(fields["published_at"])),
        stream=StreamFigures.from_fields(fields, k),
        vocab_version=compat.model_vocab_version(fields),
        index_fields=(
            {name: fields.get(name) for name in INDEX_FIELDS}
            if fields.get("index:rows") is not None
            else None
        ),
        topic_ids=_read_topic_ids(fields.get("topic_ids"), k),
    )


def _read_topic_ids(raw: Any, n_topics: int) -> tuple[int, ...]:
    """The rows' topic numbers (the identity: published while K was fixed)."""
    if raw is None:
        return Identity.of(n_topics)
    ids = tuple(int(n) for n in text(raw).split(","))
    if len(ids) != n_topics:
        raise ValueError(f"topic_ids holds {len(ids)} numbers for {n_topics} topics")
    return ids
