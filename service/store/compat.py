"""What workers of other versions wrote, read as this version's: every allowance the store's
readers make for an older writer (and for a newer one, whose additions are left out), in one
place, so each can go once no such writer is left.

A field an older worker did not write reads as its dataclass default (the snapshot's, the
perplexity point's and the published model's say what that means); what needs more than a
default is here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import fields
from functools import cache
from typing import Any

import numpy as np

from service.store.redis_values import raw_bytes, text


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def known_fields(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """``data``'s fields that the dataclass ``cls`` has: a newer worker's additions are left
    out, so an API from before them keeps serving while workers are upgraded."""
    names = _field_names(cls)
    return {k: v for k, v in data.items() if k in names}


def sample_as_mean(data: dict[str, Any]) -> None:
    """A snapshot's ``sample_topics`` from its ``topics`` when it has none: a worker from
    before beta_mean published its sample as ``topics``, and only that."""
    if "sample_topics" not in data and "topics" in data:
        data["sample_topics"] = data["topics"]


def snapshot_name(version: bytes | str | None, snapshot: bytes) -> str:
    """The snapshot's version token, or, for a snapshot written before tokens existed, a hash
    of its text."""
    if version is not None:
        return text(version)
    return "sha256:" + hashlib.sha256(snapshot).hexdigest()


def model_written_whole(head: Mapping[str, Any]) -> bool:
    """True for a model hash written by a worker from before the parts: beta in one field,
    ``beta``, and no ``beta_parts``."""
    return head.get("beta_parts") is None


def whole_beta(model: Mapping[str, Any]) -> bytes:
    """beta's bytes from a whole model hash (names decoded): one field, or every part."""
    if "beta" in model:
        return raw_bytes(model["beta"])
    parts = int(text(model["beta_parts"]))
    return b"".join(raw_bytes(model[f"beta:{i}"]) for i in range(parts))


def model_beta(values: np.ndarray, model: Mapping[str, Any], k: int, w: int) -> np.ndarray:
    """beta (K, W) over the model's float32 ``values``: stored word-major (``layout``
    "words"), or topic-major by a worker from before the layout."""
    words = text(model.get("layout") or b"topics") == "words"
    return values.reshape(w, k).T if words else values.reshape(k, w)


def model_vocab_version(model: Mapping[str, Any]) -> int:
    """The version of the model's vocabulary: 0 from a worker before vocabularies changed."""
    return int(text(model.get("vocab_version") or b"0"))


def has_stream_figures(model: Mapping[str, Any]) -> bool:
    """False for a model hash from a worker that predates the stream's figures."""
    return model.get("term_frequency") is not None and model.get("doc_sample") is not None
