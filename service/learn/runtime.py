"""Process-wide runtime knobs shared by the commands (thread counts)."""

from __future__ import annotations

import ctypes
import ctypes.util

import torch


def set_threads(threads: int | None) -> None:
    """Give the compiled Gibbs kernel ``threads`` cores (None: all) and torch one thread.

    The learner's torch work is small, memory-bound whole-matrix arithmetic, which torch's
    thread pool made several times slower, while the Gibbs kernel, parallel over documents, is
    where extra cores pay off (docs/defaults.md, "Threads").
    """
    import numba

    torch.set_num_threads(1)
    if threads is not None:
        limit = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
        numba.set_num_threads(min(threads, limit))


def release_freed_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; nothing
    elsewhere). Memory Python frees in the middle of the heap (strings, small arrays) otherwise
    stays in the process's resident set; large tensors are mapped and returned at once."""
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)
