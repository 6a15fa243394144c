"""Atomic checkpoints: write a temporary file, flush it to disk, then rename over the old one.

A checkpoint is loaded with torch's ``weights_only`` unpickler, which builds tensors, containers
and plain values only, plus the numpy arrays the topics' record keeps: whoever can write the
data volume cannot make the worker run code by planting a checkpoint.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy._core.multiarray import _reconstruct
from torch.serialization import get_unsafe_globals_in_checkpoint

# What a checkpoint may hold beyond torch's own safe types: bytes, and numpy arrays (their
# rebuild function, class, dtype and its concrete classes); nothing that runs code.
SAFE_GLOBALS: list[Any] = [
    bytes,  # an empty bytes value pickles as a call of bytes()
    _reconstruct,
    np.ndarray,
    np.dtype,
    *(getattr(np.dtypes, name) for name in np.dtypes.__all__),
]


class CheckpointRefused(ValueError):
    """A checkpoint that names something a streamlda checkpoint never holds: it is not loaded."""


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> None:
    """Save ``payload`` so that ``path`` always holds either the old or the new checkpoint."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            torch.save(payload, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def load_checkpoint(path: str | Path, device: torch.device | str = "cpu") -> dict[str, Any]:
    """Load a checkpoint saved by :func:`save_checkpoint` onto ``device``, refusing one that
    would build anything but tensors, numpy arrays and plain values."""
    try:
        with torch.serialization.safe_globals(SAFE_GLOBALS):
            payload: dict[str, Any] = torch.load(Path(path), map_location=device, weights_only=True)
    except pickle.UnpicklingError as exc:
        allowed = {f"{g.__module__}.{g.__qualname__}" for g in SAFE_GLOBALS}
        named = sorted(set(get_unsafe_globals_in_checkpoint(path)) - allowed)
        raise CheckpointRefused(
            f"refusing to load the checkpoint {path}: it names {', '.join(named) or 'code'}, "
            "and a streamlda checkpoint holds only tensors, arrays and plain values; move it "
            "away to start afresh"
        ) from exc
    return payload
