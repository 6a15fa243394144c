"""infer_topics: the fixed point for pi with beta held fixed."""

from __future__ import annotations

import pytest
import torch

from lda.inference import infer_topics


def separated_beta(k: int = 3, words_per_topic: int = 4) -> torch.Tensor:
    beta = torch.zeros(k, k * words_per_topic)
    for i in range(k):
        beta[i, i * words_per_topic : (i + 1) * words_per_topic] = 1.0 / words_per_topic
    return beta


def test_words_of_one_topic_give_the_posterior_mean_of_that_topic() -> None:
    gamma, n = 0.1, 10
    pi = infer_topics(separated_beta(), torch.tensor([0, 1, 2, 3, 0, 1, 2, 3, 0, 1]), gamma)
    assert pi[0] == pytest.approx((n + gamma) / (n + 3 * gamma))
    assert pi[1] == pytest.approx(gamma / (n + 3 * gamma))
    assert sum(pi) == pytest.approx(1.0)


def test_a_half_and_half_document_splits_evenly() -> None:
    pi = infer_topics(separated_beta(), torch.tensor([0, 1, 4, 5] * 5), gamma=0.01)
    assert pi[0] == pytest.approx(pi[1], abs=1e-9)
    assert pi[2] < 1e-3


def test_shared_words_follow_the_evidence_of_the_rest() -> None:
    # Word 0 is equally likely under both topics; words 1 and 2 belong to topic 0 only.
    beta = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.0, 0.5]])
    pi = infer_topics(beta, torch.tensor([0, 0, 0, 1, 1, 1]), gamma=0.01, iterations=1000)
    assert pi[0] > 0.99


def test_no_words_give_the_uniform_prior_mean() -> None:
    assert (
        infer_topics(separated_beta(), torch.tensor([], dtype=torch.long), 0.1)
        == [pytest.approx(1 / 3)] * 3
    )
