"""Gibbs expectations (Eq. S.19) against exact enumeration of the collapsed posterior."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from lda.batch import Batch
from lda.gibbs import GibbsConfig, gibbs_expectations

K = 3
GAMMA = 0.1  # small, so forgetting to remove the current token's count (n_dk^-j) shows


def exact_token_topics(beta: torch.Tensor, words: list[int], gamma: float) -> torch.Tensor:
    """E[1{z_j = k}] under p(z) ∝ prod_j beta[z_j, x_j] * DirMult(n_d.(z); gamma)."""
    n_topics = beta.shape[0]
    out = torch.zeros(len(words), n_topics, dtype=torch.float64)
    total = 0.0
    for z in itertools.product(range(n_topics), repeat=len(words)):
        counts = [z.count(k) for k in range(n_topics)]
        weight = math.exp(sum(math.lgamma(c + gamma) for c in counts))
        for j, k in enumerate(z):
            weight *= float(beta[k, words[j]])
        total += weight
        for j, k in enumerate(z):
            out[j, k] += weight
    return out / total


@pytest.fixture
def problem() -> tuple[torch.Tensor, list[list[int]]]:
    g = torch.Generator().manual_seed(7)
    beta = torch._sample_dirichlet(torch.full((K, 6), 0.5, dtype=torch.float64), generator=g)
    docs = [[0, 1, 2, 1], [3, 3, 4, 5], [], [5, 0, 2]]
    return beta, docs


@pytest.mark.parametrize("method", ["exact", "rao-blackwell", "uncollapsed"])
def test_expectations_match_enumeration(problem, method):
    beta, docs = problem
    sweeps, burn_in = 20_000, 200
    config = GibbsConfig(GAMMA, sweeps, burn_in, method)
    result = gibbs_expectations(
        beta, Batch.from_ids(docs), config, torch.Generator().manual_seed(1)
    )
    start = 0
    for words in docs:
        if not words:
            continue
        truth = exact_token_topics(beta, words, GAMMA)
        got = result.token_topics[start : start + len(words)]
        # Monte Carlo error of an average of ~20k correlated indicators is below 0.01;
        # a sampler using n_dk instead of n_dk^-j is off by more than 0.05 here.
        assert torch.allclose(got, truth, atol=0.02), (got, truth)
        start += len(words)


def test_counts_sum_to_document_lengths(problem):
    beta, docs = problem
    result = gibbs_expectations(
        beta, Batch.from_ids(docs), GibbsConfig(GAMMA, 10, 5), torch.Generator().manual_seed(2)
    )
    lengths = torch.tensor([len(d) for d in docs], dtype=torch.float64)
    assert torch.allclose(result.document_topic().sum(1), lengths)
    topic_word = result.topic_word(6)
    assert topic_word.shape == (K, 6)
    assert math.isclose(float(topic_word.sum()), sum(len(d) for d in docs))


@pytest.mark.parametrize("method", ["exact", "rao-blackwell"])
def test_kernel_and_torch_backends_agree_draw_for_draw(method):
    g = torch.Generator().manual_seed(3)
    beta = torch._sample_dirichlet(torch.full((5, 40), 0.3, dtype=torch.float64), generator=g)
    docs = [torch.randint(40, (int(n),), generator=g).tolist() for n in [0, 1, 17, 33, 5, 60]]
    batch = Batch.from_ids(docs)
    runs = [
        gibbs_expectations(
            beta, batch, GibbsConfig(0.05, 12, 4, method, b), torch.Generator().manual_seed(9)
        )
        for b in ("auto", "torch")
    ]
    # Same draws; the Rao-Blackwellised probabilities agree up to summation order.
    torch.testing.assert_close(runs[0].token_topics, runs[1].token_topics, rtol=0, atol=1e-12)


def test_same_seed_same_result_and_bad_burn_in(problem):
    beta, docs = problem
    batch = Batch.from_ids(docs)
    a = gibbs_expectations(beta, batch, GibbsConfig(GAMMA, 8, 2), torch.Generator().manual_seed(5))
    b = gibbs_expectations(beta, batch, GibbsConfig(GAMMA, 8, 2), torch.Generator().manual_seed(5))
    assert torch.equal(a.token_topics, b.token_topics)
    with pytest.raises(ValueError, match="burn_in"):
        gibbs_expectations(beta, batch, GibbsConfig(GAMMA, 8, 8), torch.Generator())


def test_the_device_draw_from_beta_is_the_same_in_chunks(monkeypatch):
    """The torch draw of a start from p(k | w) gathers its tokens' rows a chunk at a time:
    any chunk size gives the topics one whole gather gives."""
    import lda.gibbs.start as gibbs

    g = torch.Generator().manual_seed(4)
    cdf_t = torch.rand(9, 7, generator=g, dtype=torch.float64).cumsum(dim=1)
    words = torch.randint(9, (50,), generator=g)
    u = torch.rand(50, generator=g, dtype=torch.float64)
    whole = gibbs.draw_by_word_torch(cdf_t, words, u)
    monkeypatch.setattr(gibbs, "DRAW_CHUNK_ENTRIES", 7 * 3)  # 3 tokens a chunk
    assert torch.equal(gibbs.draw_by_word_torch(cdf_t, words, u), whole)
    expected = (cdf_t[words] <= (u * cdf_t[words, -1])[:, None]).sum(dim=1).clamp(max=6)
    assert torch.equal(whole, expected)
