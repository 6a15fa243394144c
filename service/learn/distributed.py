"""torch.distributed for the worker: the process group torchrun describes, and its reducer.

``torchrun`` (or ``streamlda up --workers N``) sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR`` and ``MASTER_PORT``; without them there is one rank and no process group.
gloo serves CPUs, NCCL GPUs (one per local rank).
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

# A rank that waits longer than this in a collective gives up (and torchrun restarts the group):
# long enough for a checkpoint or a held-out set, short enough that a dead peer is noticed.
COLLECTIVE_TIMEOUT_S = 300


@dataclass(frozen=True)
class Group:
    """This process's place in the group of workers."""

    rank: int
    world_size: int
    local_rank: int

    @property
    def leader(self) -> bool:
        """Rank 0 checkpoints, evaluates and publishes."""
        return self.rank == 0


def environment_group(environ: dict[str, str] | None = None) -> Group:
    """The group torchrun's variables describe (one rank when they are absent)."""
    env = os.environ if environ is None else environ
    world = int(env.get("WORLD_SIZE", "1"))
    rank = int(env.get("RANK", "0"))
    local = int(env.get("LOCAL_RANK", str(rank)))
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"RANK={rank} and WORLD_SIZE={world} do not describe a group")
    return Group(rank=rank, world_size=world, local_rank=local)


def join(group: Group, device: torch.device) -> None:
    """Initialise the default process group (a no-op for one rank).

    The rendezvous keys live under a prefix of torchrun's restart count: torchrun's store
    outlives a failed round, and a restarted rank that read its peer's address from the round
    before connected to a dead port (gloo's "connectFullMesh failed", seen in the kill -9
    test)."""
    if group.world_size == 1 or dist.is_initialized():
        return
    backend = "nccl" if device.type == "cuda" else "gloo"
    timeout = datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_S)
    agent_store = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    base = dist.TCPStore(
        os.environ.get("MASTER_ADDR", "127.0.0.1"),
        int(os.environ["MASTER_PORT"]),
        world_size=None if agent_store else group.world_size,
        is_master=not agent_store and group.rank == 0,
        timeout=timeout,
    )
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    dist.init_process_group(
        backend,
        store=dist.PrefixStore(f"streamlda/attempt-{attempt}", base),
        rank=group.rank,
        world_size=group.world_size,
        timeout=timeout,
    )


def leave() -> None:
    """Destroy the process group if there is one."""
    if dist.is_initialized():
        dist.destroy_process_group()


class DistributedReducer:
    """:class:`lda.parallel.Reducer` over the default process group."""

    def __init__(self, device: torch.device) -> None:
        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()
        self.device = device

    def sizes(self, documents: int, tokens: int) -> list[tuple[int, int]]:
        mine = torch.tensor([documents, tokens], dtype=torch.int64, device=self.device)
        every = [torch.empty_like(mine) for _ in range(self.world_size)]
        dist.all_gather(every, mine)
        return [(int(t[0]), int(t[1])) for t in every]

    def sum_(self, tensor: torch.Tensor) -> None:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)

    def exchange(self, values: list[float]) -> list[list[float]]:
        """Every rank's small vector of numbers (flags, counts, rates), in rank order."""
        mine = torch.tensor(values, dtype=torch.float64, device=self.device)
        every = [torch.empty_like(mine) for _ in range(self.world_size)]
        dist.all_gather(every, mine)
        return [t.tolist() for t in every]

    def gather_objects(self, value: Any) -> list[Any]:
        """Every rank's picklable ``value``, in rank order, on every rank."""
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, value)
        return out

    def broadcast_object(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank."""
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]
