"""The kept articles' topic shares as the worker publishes them with the model and the API reads
them: fields ``index:*`` of the model hash (:mod:`service.store.published_model`), so they
change with its version and are read when it changes.

The fields: ``index:rows`` (N), ``index:keep`` (S), ``index:topics`` (N x S int16 topic ids,
-1 pads), ``index:shares`` (N x S float32), ``index:tokens`` (N float32: each article's length
in vocabulary tokens), ``index:at`` (N int64: documents seen when its shares were computed), all
little-endian bytes, and ``index:refs``, JSON of each row's [title, id, source].
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.store.redis_values import raw_bytes, text

FIELDS = (
    "index:rows", "index:keep", "index:topics", "index:shares", "index:tokens", "index:at",
    "index:refs",
)  # fmt: skip


@dataclass(frozen=True)
class IndexRows:
    """Kept articles: each one's reference (title, id, source), largest shares, length and the
    documents seen when its shares were computed."""

    refs: list[tuple[str, str, str]]
    topics: np.ndarray  # (N, S) int16, -1 pads
    shares: np.ndarray  # (N, S) float32
    tokens: np.ndarray  # (N,) float32
    at: np.ndarray  # (N,) int64
    n_topics: int

    def __post_init__(self) -> None:
        n = len(self.refs)
        if self.topics.shape != self.shares.shape or self.topics.shape[:1] != (n,):
            raise ValueError(f"{n} refs, topics {self.topics.shape}, shares {self.shares.shape}")
        if self.tokens.shape != (n,) or self.at.shape != (n,):
            raise ValueError("one length and one time per row")
        if n and not np.isfinite(self.shares).all():
            raise ValueError("the index has non-finite shares: never publish NaN")

    def fields(self) -> dict[str, Any]:
        """The model hash's fields for these rows."""
        return {
            "index:rows": len(self.refs),
            "index:keep": int(self.topics.shape[1]),
            "index:topics": np.asarray(self.topics, dtype="<i2").tobytes(),
            "index:shares": np.asarray(self.shares, dtype="<f4").tobytes(),
            "index:tokens": np.asarray(self.tokens, dtype="<f4").tobytes(),
            "index:at": np.asarray(self.at, dtype="<i8").tobytes(),
            "index:refs": json.dumps([list(r) for r in self.refs], ensure_ascii=False),
        }


def index_rows(fields: Mapping[str, Any], n_topics: int) -> IndexRows | None:
    """The rows among a model hash's ``fields`` (names decoded; None: published without)."""
    if fields.get("index:rows") is None:
        return None
    n, keep = int(text(fields["index:rows"])), int(text(fields["index:keep"]))
    refs = json.loads(raw_bytes(fields["index:refs"]).decode("utf-8"))
    return IndexRows(
        refs=[(str(t), str(i), str(s)) for t, i, s in refs],
        topics=np.frombuffer(raw_bytes(fields["index:topics"]), dtype="<i2").reshape(n, keep),
        shares=np.frombuffer(raw_bytes(fields["index:shares"]), dtype="<f4").reshape(n, keep),
        tokens=np.frombuffer(raw_bytes(fields["index:tokens"]), dtype="<f4"),
        at=np.frombuffer(raw_bytes(fields["index:at"]), dtype="<i8"),
        n_topics=n_topics,
    )
