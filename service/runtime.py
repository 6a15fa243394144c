"""Process-wide runtime knobs shared by the commands (thread counts)."""

from __future__ import annotations

import torch


def set_threads(threads: int | None) -> None:
    """Use ``threads`` CPU threads in torch and in the compiled Gibbs kernel (None: all)."""
    if threads is None:
        return
    import numba

    torch.set_num_threads(threads)
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
