"""Data parallelism: ranks hold disjoint documents of one global minibatch (docs/model.md).

Documents are independent given beta, so a global minibatch's Gibbs expectations are the sum of
each rank's. Every rank draws the random numbers of the *whole* minibatch from the same
generator and uses its slice (:class:`Shard`), so N ranks learn draw for draw what one learner
does with all their documents, and their generators, hence the sampler step's noise and theta,
stay identical. A :class:`Reducer` sums across ranks; ``lda`` only sees the protocol (the
``torch.distributed`` one lives in :mod:`service.learn.distributed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch


@dataclass(frozen=True)
class Shard:
    """This rank's tokens within the global minibatch: ``[start, start + own)`` of ``total``."""

    start: int
    total: int

    def take(self, draws: torch.Tensor, own: int) -> torch.Tensor:
        """This rank's slice of draws made for every token of the minibatch (last dim)."""
        return draws[..., self.start : self.start + own]


class Reducer(Protocol):
    """Sums over the ranks of a group; every rank calls each method in the same order."""

    rank: int
    world_size: int

    def sizes(self, documents: int, tokens: int) -> list[tuple[int, int]]:
        """Every rank's (documents, tokens) in this step, in rank order."""
        ...

    def sum_(self, tensor: torch.Tensor) -> None:
        """Replace ``tensor`` by its sum over the ranks (the same result on every rank)."""
        ...


@dataclass(frozen=True)
class Layout:
    """The global minibatch as this rank sees it."""

    shard: Shard
    documents: int  # over all ranks
    tokens: int  # over all ranks


def layout(reducer: Reducer | None, documents: int, tokens: int) -> Layout:
    """Where this rank's ``tokens`` sit among all ranks' (one collective call)."""
    if reducer is None or reducer.world_size == 1:
        return Layout(Shard(0, tokens), documents, tokens)
    sizes = reducer.sizes(documents, tokens)
    start = sum(t for _, t in sizes[: reducer.rank])
    total = sum(t for _, t in sizes)
    return Layout(Shard(start, total), sum(d for d, _ in sizes), total)
