"""Topic moves over two gloo ranks: rank 0 decides from its own documents, both ranks make the
same moves, so their learners stay bitwise equal, topic numbers included. Real processes and a
real process group (gloo over loopback)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from lda.batch import Batch
from lda.model import LearnerConfig, StreamingLDA
from lda.shaping import ShapingConfig, TopicShaper
from service.learn.distributed import DistributedReducer, Group, join, leave
from tests.support.gloo import two_ranks

pytestmark = pytest.mark.slow

SLOTS, LIVE, W, STEPS, PER_RANK = 8, 5, 40, 10, 12
DECIDING = ShapingConfig(every=2, start_after=2, window=2, births=2, junk_npmi=None)


def _documents(step: int) -> list[list[int]]:
    """Documents each mostly from one of four blocks of ten words."""
    g = torch.Generator().manual_seed(100 + step)
    docs = []
    for _ in range(2 * PER_RANK):
        block = int(torch.randint(4, (1,), generator=g))
        docs.append((block * 10 + torch.randint(10, (30,), generator=g)).tolist())
    return docs


def _rank(rank: int, rendezvous: str, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=rendezvous)
    torch.set_num_threads(1)
    join(Group(rank=rank, world_size=2, local_rank=rank), torch.device("cpu"))
    try:
        config = LearnerConfig(SLOTS, W, sweeps=4, corpus_size=200.0, live_topics=LIVE)
        model = StreamingLDA(config, seed=3)
        shaper = TopicShaper(DECIDING, seed=7, clock=lambda: 1.0, accept=lambda *_: True)
        reducer = DistributedReducer(torch.device("cpu"))
        for step in range(STEPS):
            mine = _documents(step)[rank * PER_RANK : (rank + 1) * PER_RANK]
            shaper.update(model, Batch.from_ids(mine), reducer=reducer)
        torch.save(
            {
                "theta": model.state.theta,
                "ids": model.topic_ids.state_dict(),
                "gamma": model.prior.gamma,
                "decisions": dict(shaper.decisions),
                "docs": model.docs_seen,
            },
            out,
        )
    finally:
        leave()


def test_two_ranks_make_rank_0s_moves_and_stay_equal(tmp_path: Path) -> None:
    ranks = two_ranks(_rank, tmp_path)
    assert ranks[0]["docs"] == ranks[1]["docs"] == STEPS * 2 * PER_RANK
    assert ranks[0]["ids"]["moves"], "moves were made (else the equality says nothing)"
    assert ranks[0]["ids"] == ranks[1]["ids"]
    assert torch.equal(ranks[0]["theta"], ranks[1]["theta"])
    assert torch.equal(ranks[0]["gamma"], ranks[1]["gamma"])
    assert ranks[0]["decisions"] == ranks[1]["decisions"]
