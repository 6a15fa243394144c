"""Two gloo ranks learning 25 + 25 documents per step equal one learner with the 50.

Real processes and a real process group (gloo over loopback). Every rank draws the whole
minibatch's random numbers and uses its slice, and the ranks' expected counts are summed with
all_reduce, so theta must match the single learner's to floating-point summation order, and be
bitwise equal across the ranks.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from lda.batch import Batch
from lda.model import LearnerConfig, StreamingLDA
from service.learn.distributed import DistributedReducer, Group, join, leave
from tests.support.gloo import free_port

pytestmark = pytest.mark.slow

K, W, STEPS, PER_RANK = 6, 40, 4, 25


def _documents(step: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(100 + step)
    lengths = torch.randint(0, 30, (2 * PER_RANK,), generator=g).tolist()
    return [torch.randint(W, (n,), generator=g).tolist() for n in lengths]


def _config(sampler: str, dtype: str = "float64") -> LearnerConfig:
    return LearnerConfig(n_topics=K, n_words=W, sampler=sampler, sweeps=6, dtype=dtype)


class _Recording(DistributedReducer):
    """The real reducer, noting the dtype and size of every tensor it sums."""

    def __init__(self, device: torch.device) -> None:
        super().__init__(device)
        self.summed: list[tuple[str, int]] = []

    def sum_(self, tensor: torch.Tensor) -> None:
        self.summed.append((str(tensor.dtype), tensor.numel()))
        super().sum_(tensor)


def _rank(rank: int, sampler: str, dtype: str, rendezvous: str, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=rendezvous)
    torch.set_num_threads(1)
    join(Group(rank=rank, world_size=2, local_rank=rank), torch.device("cpu"))
    try:
        model = StreamingLDA(_config(sampler, dtype), seed=3)
        reducer = _Recording(torch.device("cpu"))
        for step in range(STEPS):
            mine = _documents(step)[rank * PER_RANK : (rank + 1) * PER_RANK]
            if step == 1 and rank == 1:
                mine = []  # a rank with nothing to read still joins the step
            model.update(Batch.from_ids(mine), reducer)
        theta = model.state.theta
        torch.save({"theta": theta, "docs": model.docs_seen, "summed": reducer.summed}, out)
    finally:
        leave()


@pytest.mark.parametrize(
    ("sampler", "dtype"),
    [("sgrld", "float64"), ("sgrhmc", "float64"), ("scir", "float64"), ("scir", "float32")],
)
def test_two_ranks_equal_one_learner_with_both_halves(
    tmp_path: Path, sampler: str, dtype: str
) -> None:
    outs = [str(tmp_path / f"rank{r}.pt") for r in range(2)]
    port = free_port()
    context = mp.get_context("spawn")
    procs = [
        context.Process(target=_rank, args=(r, sampler, dtype, port, outs[r])) for r in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    ranks = [torch.load(o) for o in outs]

    single = StreamingLDA(_config(sampler, dtype), seed=3)
    for step in range(STEPS):
        documents = _documents(step)
        if step == 1:
            documents = documents[:PER_RANK]
        single.update(Batch.from_ids(documents))

    assert torch.equal(ranks[0]["theta"], ranks[1]["theta"])
    assert ranks[0]["docs"] == single.docs_seen == 3 * 2 * PER_RANK + PER_RANK
    # float32: the ranks' counts are rounded to float32 before they are summed, the single
    # learner's are not; each entry of theta then differs by float32 roundings only.
    rtol, atol = (1e-10, 1e-12) if dtype == "float64" else (1e-5, 1e-6)
    torch.testing.assert_close(ranks[0]["theta"], single.state.theta, rtol=rtol, atol=atol)
    counts = [(kind, n) for kind, n in ranks[0]["summed"] if n > W]  # not the word mask
    assert counts and all(kind == f"torch.{dtype}" for kind, _ in counts)
    # Not a vacuous equality: the learner moved away from its start.
    assert not torch.allclose(
        single.state.theta, StreamingLDA(_config(sampler, dtype), seed=3).state.theta
    )
