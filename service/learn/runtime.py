"""Process-wide runtime knobs shared by the commands (thread counts)."""

from __future__ import annotations

import torch


def set_threads(threads: int | None) -> None:
    """Give the compiled Gibbs kernel ``threads`` cores (None: all) and torch one thread.

    The learner's torch work is small, memory-bound whole-matrix arithmetic; measured on
    these 2-core machines, torch's thread pool made it 4-10x slower (BENCHMARKS.md), while
    the Gibbs kernel, parallel over documents, is where extra cores pay off.
    """
    import numba

    torch.set_num_threads(1)
    if threads is not None:
        limit = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
        numba.set_num_threads(min(threads, limit))
