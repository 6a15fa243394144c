"""The sparse CUDA kernel (lda/gibbs/sparse_cuda.py) under numba's CUDA simulator: draw for
draw the CPU sparse kernel (walking lists only) fed the same Philox uniforms, whose law
tests/lda/gibbs/test_sparse.py checks. The simulator is switched on when numba is first
imported, so the runs happen in one child process (this file run as a script), as in
tests/lda/gibbs/test_dense_cuda.py; STREAMLDA_CUDA_TESTS=device runs it on the GPU instead.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
import torch

from tests.support.cuda_child import check_target, simulated

pytestmark = pytest.mark.slow

K, W, GAMMA, SWEEPS, BURN_IN = 6, 12, 0.1, 8, 3
KEY = (123456789, 987654321)
BASE = 7  # the batch's first global token index (a shard's start)


def _problem() -> tuple[torch.Tensor, list[list[int]]]:
    g = torch.Generator().manual_seed(5)
    beta = torch._sample_dirichlet(torch.full((K, W), 0.3, dtype=torch.float64), generator=g)
    docs = [torch.randint(W, (n,), generator=g).tolist() for n in (0, 1, 7, 12, 4)]
    return beta, docs


def side_by_side(gamma: Any) -> tuple[dict[str, Any], torch.Tensor, Any]:
    """In the child: the CPU sparse kernel (walking lists only, as the CUDA kernel) and the CUDA
    kernel on _problem() with the same Philox uniforms, at ``gamma`` (a scalar or gamma_k):
    their results by method and side, beta and the batch."""
    import lda.gibbs.sparse as sparse
    from lda.batch import Batch
    from lda.gibbs.dense_cuda import philox_uniforms
    from lda.gibbs.sparse_cuda import sparse_collapsed_gibbs_cuda

    check_target()
    sys.setswitchinterval(1e-5)
    torch.set_num_threads(1)
    sparse.by_topic_from = lambda n_topics: n_topics + 1  # lists only, as the CUDA kernel
    beta, docs = _problem()
    batch = Batch.from_ids(docs)
    columns = sparse.gather_columns(beta, batch.words)
    z = torch.randint(K, (batch.n_tokens,), generator=torch.Generator().manual_seed(1))
    uniforms = torch.from_numpy(philox_uniforms(KEY, SWEEPS, batch.n_tokens, BASE))
    out: dict[str, Any] = {}
    for method in ("exact", "rao-blackwell"):
        rb = method == "rao-blackwell"
        cpu = sparse.sparse_collapsed_gibbs(columns, batch.offsets, gamma, z, uniforms, BURN_IN, rb)
        gpu = sparse_collapsed_gibbs_cuda(
            columns, batch.offsets, gamma, z, torch.tensor(KEY), BASE, SWEEPS, BURN_IN, rb,
            threads=2,
        )  # fmt: skip
        for name, (word_topic, document_topic) in (("cpu", cpu), ("cuda", gpu)):
            assert word_topic is not None and document_topic is not None
            out[f"{method}/{name}"] = [word_topic.tolist(), document_topic.tolist()]
    return out, beta, batch


def _simulate() -> None:
    """The child: both kernels on the same problem and uniforms, as one JSON line."""
    out, beta, batch = side_by_side(GAMMA)
    out.update(_wired(beta, batch))
    print(json.dumps(out))


def _wired(beta: torch.Tensor, batch: Any) -> dict[str, Any]:
    """gibbs_expectations(kernel="sparse") on the cuda backend against the kernel called by
    hand with the draws the generator gives (a start from beta, then the Philox key), and a
    learner whose config asks for the sparse kernel on the cuda backend."""
    import lda.gibbs.sparse as sparse
    from lda.config import LearnerConfig
    from lda.gibbs import GibbsConfig, gibbs_expectations
    from lda.gibbs.sparse_cuda import device_columns, sparse_collapsed_gibbs_cuda
    from lda.model import StreamingLDA

    out: dict[str, Any] = {}
    for method in ("exact", "rao-blackwell"):
        config = GibbsConfig(GAMMA, SWEEPS, BURN_IN, method, "cuda", "beta", "sparse")
        wired = gibbs_expectations(beta, batch, config, torch.Generator().manual_seed(3))
        g = torch.Generator().manual_seed(3)
        u = torch.rand(batch.n_tokens, generator=g, dtype=torch.float64)
        start = sparse.topics_from_columns(sparse.gather_columns(beta, batch.words), u)
        key = torch.randint(0, 2**32, (2,), generator=g)
        columns = device_columns(beta, batch.words)
        by_hand = sparse_collapsed_gibbs_cuda(
            columns, batch.offsets, GAMMA, start, key, 0, SWEEPS, BURN_IN,
            method == "rao-blackwell",
        )  # fmt: skip
        assert by_hand[0] is not None
        dense = torch.zeros(K, W, dtype=torch.float64)
        dense[:, columns.word_ids] = by_hand[0].T / (SWEEPS - BURN_IN)
        out[f"wired/{method}"] = [wired.topic_word(W).tolist(), dense.tolist()]
    config = LearnerConfig(
        n_topics=K, n_words=W, sampler="sgrld", sweeps=6, gibbs_backend="cuda",
        gibbs_kernel="sparse",
    )  # fmt: skip
    import lda.gibbs.sparse_cuda

    calls = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return sparse_collapsed_gibbs_cuda(*args, **kwargs)

    lda.gibbs.sparse_cuda.sparse_collapsed_gibbs_cuda = counting  # type: ignore[assignment]
    try:
        model = StreamingLDA(config, seed=0)
        for _ in range(2):
            model.update(batch)
    finally:
        lda.gibbs.sparse_cuda.sparse_collapsed_gibbs_cuda = sparse_collapsed_gibbs_cuda
    out["learner_calls"] = len(calls)
    out["learner_finite"] = bool(torch.isfinite(model.state.theta).all())
    return out


@pytest.fixture(scope="module")
def simulation() -> dict[str, Any]:
    results = simulated(__file__)
    return results


@pytest.mark.parametrize("method", ["exact", "rao-blackwell"])
def test_cuda_draws_as_the_cpu_sparse_kernel(simulation, method):
    cpu = [torch.tensor(x, dtype=torch.float64) for x in simulation[f"{method}/cpu"]]
    gpu = [torch.tensor(x, dtype=torch.float64) for x in simulation[f"{method}/cuda"]]
    _, docs = _problem()
    lengths = torch.tensor([len(d) for d in docs], dtype=torch.float64)
    torch.testing.assert_close(cpu[1].sum(1), lengths * (SWEEPS - BURN_IN))
    if method == "exact":  # integer counts: equal
        assert torch.equal(gpu[0], cpu[0]) and torch.equal(gpu[1], cpu[1])
    else:  # the same conditionals, summed in another order
        for a, b in zip(gpu, cpu, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["exact", "rao-blackwell"])
def test_gibbs_expectations_runs_the_sparse_cuda_kernel_when_asked(simulation, method):
    wired, by_hand = (torch.tensor(x) for x in simulation[f"wired/{method}"])
    assert wired.sum() > 0
    torch.testing.assert_close(wired, by_hand, rtol=0, atol=1e-12)


def test_a_learner_on_the_cuda_backend_can_ask_for_the_sparse_kernel(simulation):
    assert simulation["learner_calls"] == 2  # one kernel launch per update
    assert simulation["learner_finite"]


if __name__ == "__main__":
    _simulate()
