"""The sparse CUDA kernel (lda/gibbs_sparse_cuda.py) under numba's CUDA simulator: draw for
draw the CPU sparse kernel (walking lists only) fed the same Philox uniforms, whose law
tests/lda/test_gibbs_sparse.py checks. The simulator is switched on when numba is first
imported, so the runs happen in one child process (this file run as a script), as in
tests/lda/test_gibbs_cuda.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
K, W, GAMMA, SWEEPS, BURN_IN = 6, 12, 0.1, 8, 3
KEY = (123456789, 987654321)
BASE = 7  # the batch's first global token index (a shard's start)


def _problem() -> tuple[torch.Tensor, list[list[int]]]:
    g = torch.Generator().manual_seed(5)
    beta = torch._sample_dirichlet(torch.full((K, W), 0.3, dtype=torch.float64), generator=g)
    docs = [torch.randint(W, (n,), generator=g).tolist() for n in (0, 1, 7, 12, 4)]
    return beta, docs


def _simulate() -> None:
    """The child: both kernels on the same problem and uniforms, as one JSON line."""
    import lda.gibbs_sparse as sparse
    from lda.batch import Batch
    from lda.gibbs_cuda import philox_uniforms, simulated
    from lda.gibbs_sparse_cuda import sparse_collapsed_gibbs_cuda

    assert simulated(), "run with NUMBA_ENABLE_CUDASIM=1"
    sys.setswitchinterval(1e-5)
    sparse.by_topic_from = lambda n_topics: n_topics + 1  # lists only, as the CUDA kernel
    beta, docs = _problem()
    batch = Batch.from_ids(docs)
    columns = sparse.gather_columns(beta, batch.words)
    z = torch.randint(K, (batch.n_tokens,), generator=torch.Generator().manual_seed(1))
    uniforms = torch.from_numpy(philox_uniforms(KEY, SWEEPS, batch.n_tokens, BASE))
    out: dict[str, Any] = {}
    for method in ("exact", "rao-blackwell"):
        rb = method == "rao-blackwell"
        cpu = sparse.sparse_collapsed_gibbs(columns, batch.offsets, GAMMA, z, uniforms, BURN_IN, rb)
        gpu = sparse_collapsed_gibbs_cuda(
            columns, batch.offsets, GAMMA, z, torch.tensor(KEY), BASE, SWEEPS, BURN_IN, rb,
            threads=2,
        )  # fmt: skip
        for name, (word_topic, document_topic) in (("cpu", cpu), ("cuda", gpu)):
            assert word_topic is not None
            out[f"{method}/{name}"] = [word_topic.tolist(), document_topic.tolist()]
    print(json.dumps(out))


@pytest.fixture(scope="module")
def simulation() -> dict[str, Any]:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    run = subprocess.run(
        [sys.executable, __file__], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    if run.returncode != 0:
        pytest.fail(f"the simulated runs failed:\n{run.stderr[-4000:]}")
    results: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
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


if __name__ == "__main__":
    _simulate()
