"""Two gloo ranks learning gamma_k keep the same gamma, and the one learner with both halves
learns it too (the minibatch's fixed-point sums are added over the ranks before the step)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import torch

from lda.batch import Batch
from lda.model import StreamingLDA
from lda.prior import PriorSchedule
from service.learn.distributed import DistributedReducer, Group, join, leave
from tests.lda.test_parallel import PER_RANK, STEPS, _config, _documents
from tests.support.gloo import two_ranks

pytestmark = pytest.mark.slow


def _learner() -> StreamingLDA:
    model = StreamingLDA(dataclasses.replace(_config("scir"), learn_gamma=True), seed=3)
    model.prior.schedule = PriorSchedule(burn_in=0)
    return model


def _rank(rank: int, rendezvous: str, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=rendezvous)
    torch.set_num_threads(1)
    join(Group(rank=rank, world_size=2, local_rank=rank), torch.device("cpu"))
    try:
        model = _learner()
        reducer = DistributedReducer(torch.device("cpu"))
        for step in range(STEPS):
            mine = _documents(step)[rank * PER_RANK : (rank + 1) * PER_RANK]
            if step == 1 and rank == 1:
                mine = []  # a rank with nothing to read still joins the sums
            model.update(Batch.from_ids(mine), reducer)
        torch.save({"gamma": model.prior.gamma, "theta": model.state.theta}, out)
    finally:
        leave()


def test_two_ranks_learn_the_gamma_of_one_learner(tmp_path: Path) -> None:
    ranks = two_ranks(_rank, tmp_path, timeout=120)
    single = _learner()
    for step in range(STEPS):
        documents = _documents(step)
        single.update(Batch.from_ids(documents[:PER_RANK] if step == 1 else documents))
    assert torch.equal(ranks[0]["gamma"], ranks[1]["gamma"])
    torch.testing.assert_close(ranks[0]["gamma"], single.prior.gamma, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ranks[0]["theta"], single.state.theta, rtol=1e-10, atol=1e-12)
    start = single.config.gamma
    assert start is not None
    assert not torch.equal(single.prior.gamma, torch.full_like(single.prior.gamma, start))
