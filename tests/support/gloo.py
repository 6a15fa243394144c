"""Two real processes joined in a gloo group over loopback: the harness of the data-parallel
tests (each rank's function saves what it learned to its own file)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.multiprocessing as mp


def free_port() -> str:
    """A TCP port on 127.0.0.1 free now, for the group's rendezvous."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def two_ranks(
    rank: Callable[[int, str, str], None], folder: Path, timeout: float = 180.0
) -> list[Any]:
    """``rank(r, port, out)`` run in two spawned processes; what each saved to ``out``."""
    outs = [str(folder / f"rank{r}.pt") for r in range(2)]
    port = free_port()
    context = mp.get_context("spawn")
    procs = [context.Process(target=rank, args=(r, port, outs[r])) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=timeout)
        assert p.exitcode == 0
    return [torch.load(o) for o in outs]
