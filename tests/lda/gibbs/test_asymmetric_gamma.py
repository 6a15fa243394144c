"""Every CPU Gibbs path takes a per-topic gamma_k: their expectations match exact enumeration of
the collapsed posterior under an asymmetric prior, which the symmetric prior of the same total
misses (fixed seeds)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from lda.batch import Batch
from lda.evaluation.perplexity import document_topic_proportions
from lda.gibbs import GibbsConfig, gibbs_expectations

GAMMA = (0.02, 0.3, 1.5)  # far from symmetric: a path that ignores gamma_k is far off
DOCS = [[0, 1, 2, 1], [3, 3, 4, 5], [], [5, 0, 2]]


def exact_document_topics(beta: torch.Tensor, words: list[int], gamma: tuple[float, ...]):
    """E[n_dk] under p(z) ∝ prod_j beta[z_j, x_j] prod_k Gamma(n_dk + gamma_k)."""
    n_topics = beta.shape[0]
    out = torch.zeros(n_topics, dtype=torch.float64)
    total = 0.0
    for z in itertools.product(range(n_topics), repeat=len(words)):
        counts = [z.count(k) for k in range(n_topics)]
        weight = math.exp(sum(math.lgamma(c + g) for c, g in zip(counts, gamma, strict=True)))
        for j, k in enumerate(z):
            weight *= float(beta[k, words[j]])
        total += weight
        out += weight * torch.tensor(counts, dtype=torch.float64)
    return out / total


def beta_of() -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    return torch._sample_dirichlet(torch.full((3, 6), 0.5, dtype=torch.float64), generator=g)


PATHS = [
    ("exact", "cpu", "dense"),
    ("rao-blackwell", "cpu", "dense"),
    ("exact", "cpu", "sparse"),
    ("rao-blackwell", "cpu", "sparse"),
    ("rao-blackwell", "torch", "auto"),
    ("uncollapsed", "torch", "auto"),
]


def error(beta: torch.Tensor, got: torch.Tensor, gamma: tuple[float, ...]) -> float:
    worst = 0.0
    for d, words in enumerate(DOCS):
        if words:
            truth = exact_document_topics(beta, words, gamma)
            worst = max(worst, float((got[d] - truth).abs().max()))
    return worst


@pytest.mark.parametrize(("method", "backend", "kernel"), PATHS)
def test_every_cpu_path_matches_enumeration_under_asymmetric_gamma(method, backend, kernel):
    beta = beta_of()
    sweeps = 300 if method == "rao-blackwell" and backend == "torch" else 4000
    config = GibbsConfig(GAMMA, sweeps, 50, method, backend, kernel=kernel)
    got = gibbs_expectations(beta, Batch.from_ids(DOCS), config, torch.Generator().manual_seed(1))
    # The largest error of any E[n_dk] here: 0.01-0.05 for the compiled collapsed paths, 0.17
    # for the torch twin (fewer sweeps: it is slow), 0.21 for the slow-mixing uncollapsed one;
    # against the symmetric prior of the same total, above 1.0.
    assert error(beta, got.document_topic(), GAMMA) < 0.25
    mean = sum(GAMMA) / len(GAMMA)
    assert error(beta, got.document_topic(), (mean, mean, mean)) > 0.6


def test_heldout_proportions_add_gamma_k():
    beta = beta_of()
    batch = Batch.from_ids([[0, 1, 2]])
    config = GibbsConfig(GAMMA, 3, 1, "exact", "cpu", init="beta")
    pi = document_topic_proportions(beta, batch, config, torch.Generator().manual_seed(0))
    assert torch.allclose(pi.sum(1), torch.ones(1, dtype=torch.float64))
    # With the counts out, pi is (E[n_dk] + gamma_k) / (3 + gamma_0): at least gamma_k / (n + g0).
    floor = torch.tensor(GAMMA, dtype=torch.float64) / (3 + sum(GAMMA))
    assert bool((pi[0] >= floor - 1e-12).all())


def test_a_symmetric_tuple_takes_the_scalar_path_draw_for_draw():
    beta = beta_of()
    batch = Batch.from_ids(DOCS)
    for kernel in ("dense", "sparse"):
        a = GibbsConfig(0.1, 6, 2, "rao-blackwell", "cpu", kernel=kernel)
        b = GibbsConfig((0.1, 0.1, 0.1), 6, 2, "rao-blackwell", "cpu", kernel=kernel)
        ra = gibbs_expectations(beta, batch, a, torch.Generator().manual_seed(3))
        rb = gibbs_expectations(beta, batch, b, torch.Generator().manual_seed(3))
        assert torch.equal(ra.document_topic(), rb.document_topic())
