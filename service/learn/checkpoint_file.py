"""Atomic checkpoints: write a temporary file, flush it to disk, then rename over the old one.

A checkpoint is loaded with torch's ``weights_only`` unpickler, which builds tensors, containers
and plain values only, plus the numpy arrays the topics' record keeps: whoever can write the
data volume cannot make the worker run code by planting a checkpoint. Nor can a planted file
ask for more memory than it holds: nothing in a checkpoint is larger than the file itself, so
before anything is allocated each record of the archive (a tensor's bytes, the pickle) is held
to the file's size, and so are the bytes values and numpy arrays the pickle asks to build
(``bytes(n)``, ``_reconstruct``'s shape); torch's own types that allocate from a count
(:data:`ALLOCATORS`) are refused by name. torch already refuses a tensor whose storage is not
its record's size before allocating it.
"""

from __future__ import annotations

import math
import os
import pickle
import pickletools
import re
import tempfile
import zipfile
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from numpy._core.multiarray import _reconstruct
from torch._utils import IMPORT_MAPPING, NAME_MAPPING
from torch.serialization import get_unsafe_globals_in_checkpoint

# torch's own safe types that build an object of any size from a number (bytearray(n) fills n
# bytes; the typed tensor classes allocate n elements, on the GPU for torch.cuda's): never in
# a checkpoint torch.save writes, so refused before the pickle is read. (torch.Tensor stays:
# it names the class of a tensor with attributes, and allocates without touching the memory.)
ALLOCATORS = re.compile(r"builtins\.bytearray|torch(\.cuda)?(\.sparse)?\.[A-Za-z0-9]+Tensor")
NDARRAY = "numpy.ndarray"
RECONSTRUCT = "numpy._core.multiarray._reconstruct"
DTYPES: list[Any] = [np.dtype, *(getattr(np.dtypes, name) for name in np.dtypes.__all__)]


class _ArrayClass:
    """What a checkpoint's ``numpy.ndarray`` names: :data:`RECONSTRUCT`'s first argument, never a
    class it may build itself (an array of any shape) with NEWOBJ."""


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


def _refused(path: str | Path, why: str) -> CheckpointRefused:
    return CheckpointRefused(
        f"refusing to load the checkpoint {path}: {why}; move it away to start afresh"
    )


def _file_bound(path: str | Path) -> int:
    """The file's size, once each record of the archive is found to fit in it (a record that
    inflates past it is asking for memory the file does not hold) and its pickle to name none
    of the :data:`ALLOCATORS`."""
    size = os.path.getsize(path)
    try:
        with zipfile.ZipFile(path) as archive:
            records = archive.infolist()
            for record in records:
                if record.file_size > size:
                    why = f"its record {record.filename} inflates to {record.file_size:,} bytes"
                    raise _refused(path, f"{why}, more than the file's {size:,}")
            pickles = [r for r in records if r.filename.endswith("/data.pkl")]
            named = _globals(archive.read(pickles[0])) if len(pickles) == 1 else set()
    except zipfile.BadZipFile as exc:
        raise _refused(path, "it is not the zip archive torch.save writes") from exc
    allocators = sorted(name for name in named if ALLOCATORS.fullmatch(name))
    if allocators:
        raise _refused(path, f"it names {', '.join(allocators)}, which no checkpoint holds")
    return size


def _globals(data: bytes) -> set[str]:
    """The names a pickle's GLOBAL instructions give, as torch's unpickler reads them (an
    unreadable pickle: none, torch says why)."""
    named = set()
    try:
        for opcode, arg, _ in pickletools.genops(data):
            if opcode.name == "GLOBAL" and isinstance(arg, str):
                module, _, name = arg.partition(" ")
                module, name = NAME_MAPPING.get(
                    (module, name), (IMPORT_MAPPING.get(module, module), name)
                )
                named.add(f"{module}.{name}")
    except ValueError:
        return named
    return named


def safe_globals(path: str | Path, bound: int) -> list[Any]:
    """What a checkpoint may name beyond torch's own safe types: bytes and numpy arrays (their
    rebuild function, class, dtype and its concrete classes), each held to ``bound`` bytes
    before it is allocated; nothing that runs code."""

    def bounded_bytes(*args: Any) -> bytes:
        # bytes(n) allocates n bytes; a checkpoint's empty bytes pickles as bytes()
        if args and isinstance(args[0], int) and args[0] > bound:
            raise _refused(path, f"it asks for bytes({args[0]:,}), more than the file holds")
        return bytes(*args)

    def bounded_reconstruct(subtype: Any, shape: Any, dtype: Any) -> np.ndarray:
        if subtype is not _ArrayClass:
            raise _refused(path, f"it asks to build a {subtype!r} as an array")
        dims = shape if isinstance(shape, tuple | list) else (shape,)
        nbytes = math.prod(int(n) for n in dims) * np.dtype(dtype).itemsize
        if nbytes > bound:
            raise _refused(path, f"it asks for an array of {nbytes:,} bytes, more than it holds")
        return cast(np.ndarray, _reconstruct(np.ndarray, shape, dtype))

    named: list[Any] = [(bounded_bytes, "builtins.bytes"), (bounded_reconstruct, RECONSTRUCT)]
    # The class arrays are: allowed for their state (BUILD), under a name no GLOBAL can give
    # (every GLOBAL's name holds a dot), so the pickle names _ArrayClass instead.
    named += [
        (_ArrayClass, NDARRAY),
        (np.ndarray, "arrays built by " + RECONSTRUCT.replace(".", " ")),
    ]
    return named + DTYPES


def _allowed_names() -> set[str]:
    return {NDARRAY, RECONSTRUCT, "builtins.bytes"} | {
        f"{g.__module__}.{g.__qualname__}" for g in DTYPES
    }


def load_checkpoint(path: str | Path, device: torch.device | str = "cpu") -> dict[str, Any]:
    """Load a checkpoint saved by :func:`save_checkpoint` onto ``device``, refusing one that
    would build anything but tensors, numpy arrays and plain values, or anything larger than
    the file."""
    allowed = safe_globals(path, _file_bound(path))
    try:
        with torch.serialization.safe_globals(allowed):
            payload: dict[str, Any] = torch.load(Path(path), map_location=device, weights_only=True)
    except pickle.UnpicklingError as exc:
        named = sorted(set(get_unsafe_globals_in_checkpoint(path)) - _allowed_names())
        raise _refused(
            path,
            f"it names {', '.join(named) or 'code'}, and a streamlda checkpoint holds only "
            "tensors, arrays and plain values",
        ) from exc
    return payload
