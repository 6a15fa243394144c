"""The CUDA kernels take a per-topic gamma_k, under numba's CUDA simulator (one child process, as
tests/lda/gibbs/test_dense_cuda.py explains; STREAMLDA_CUDA_TESTS=device runs it on the GPU):
the sparse kernel draws as the CPU sparse kernel fed the same uniforms, and the dense kernel's
expectations match exact enumeration under the asymmetric prior, which the symmetric prior of
the same total misses."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch

from tests.lda.gibbs.test_sparse_cuda import side_by_side
from tests.support.cuda_child import simulated

pytestmark = pytest.mark.slow

GAMMA = (0.02, 0.3, 1.5, 0.1, 0.6, 0.05)  # one a topic of test_sparse_cuda's problem (K = 6)
DENSE_GAMMA = (0.02, 0.3, 1.5)
DENSE_DOCS = [[1], [0, 1], [3, 4], [0]]
DENSE_SWEEPS = 1200


def _tiny_beta() -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    return torch._sample_dirichlet(torch.full((3, 6), 0.5, dtype=torch.float64), generator=g)


def _simulate() -> None:
    """The child: the sparse kernels side by side, then the dense CUDA kernel, one JSON line."""
    from lda.batch import Batch
    from lda.gibbs import GibbsConfig, gibbs_expectations

    out, _, _ = side_by_side(GAMMA)
    config = GibbsConfig(DENSE_GAMMA, DENSE_SWEEPS, 20, "exact", "cuda")
    dense = gibbs_expectations(
        _tiny_beta(), Batch.from_ids(DENSE_DOCS), config, torch.Generator().manual_seed(11)
    )
    out["dense"] = dense.document_topic().tolist()
    print(json.dumps(out))


@pytest.fixture(scope="module")
def simulation() -> dict[str, Any]:
    results = simulated(__file__)
    return results


@pytest.mark.parametrize("method", ["exact", "rao-blackwell"])
def test_sparse_cuda_draws_as_the_cpu_sparse_kernel_under_gamma_k(simulation, method):
    cpu = [torch.tensor(x, dtype=torch.float64) for x in simulation[f"{method}/cpu"]]
    gpu = [torch.tensor(x, dtype=torch.float64) for x in simulation[f"{method}/cuda"]]
    if method == "exact":
        assert torch.equal(gpu[0], cpu[0]) and torch.equal(gpu[1], cpu[1])
    else:
        for a, b in zip(gpu, cpu, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_dense_cuda_matches_enumeration_under_gamma_k(simulation):
    from tests.lda.gibbs.test_asymmetric_gamma import exact_document_topics

    beta = _tiny_beta()
    got = torch.tensor(simulation["dense"], dtype=torch.float64)
    mean = sum(DENSE_GAMMA) / len(DENSE_GAMMA)
    worst_right = worst_symmetric = 0.0
    for d, words in enumerate(DENSE_DOCS):
        right = exact_document_topics(beta, words, DENSE_GAMMA)
        symmetric = exact_document_topics(beta, words, (mean, mean, mean))
        worst_right = max(worst_right, float((got[d] - right).abs().max()) / len(words))
        worst_symmetric = max(worst_symmetric, float((got[d] - symmetric).abs().max()) / len(words))
    # The tolerance of tests/lda/gibbs/test_dense_cuda.py's enumeration test (0.05 a token);
    # the symmetric prior is further off than that.
    assert worst_right < 0.05
    assert worst_symmetric > 0.1


if __name__ == "__main__":
    _simulate()
