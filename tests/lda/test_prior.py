"""The learned document-topic prior (lda.prior): Minka's fixed point, batch and stochastic,
recovers a known asymmetric Dirichlet-multinomial's gamma (fixed seeds)."""

from __future__ import annotations

import torch

from lda.gamma import gamma_total, gamma_vector, symmetric_value
from lda.prior import LearnedPrior, PriorSchedule, fixed_point, minka_sums

TRUE = torch.tensor([0.05, 0.1, 0.3, 1.0, 2.0], dtype=torch.float64)


def draw_counts(n_docs: int, length: int, seed: int) -> torch.Tensor:
    """(n, K) topic counts of documents drawn from Dirichlet-multinomial(TRUE)."""
    generator = torch.Generator().manual_seed(seed)
    pi = torch._sample_dirichlet(TRUE.expand(n_docs, -1).contiguous(), generator=generator)
    pi = pi.clamp_min(1e-300)
    z = torch.multinomial(pi, length, replacement=True, generator=generator)
    counts = torch.zeros(n_docs, TRUE.numel(), dtype=torch.float64)
    return counts.scatter_add_(1, z, torch.ones_like(z, dtype=torch.float64))


def relative_error(gamma: torch.Tensor) -> float:
    return float(((gamma - TRUE).abs() / TRUE).max())


def test_batch_fixed_point_recovers_the_asymmetric_prior() -> None:
    counts = draw_counts(2500, 40, seed=1)
    gamma = fixed_point(counts, torch.full((5,), 0.5, dtype=torch.float64), iterations=100)
    assert relative_error(gamma) < 0.1
    # A symmetric prior (the best single value) is far off.
    assert relative_error(torch.full((5,), float(gamma.mean()))) > 1.0


def test_stochastic_fixed_point_recovers_it_from_a_stream() -> None:
    prior = LearnedPrior(0.5, 5, learn=True, schedule=PriorSchedule(burn_in=5))
    for step in range(150):
        prior.observe_counts(draw_counts(100, 40, seed=100 + step))
    assert relative_error(prior.gamma) < 0.15
    assert isinstance(prior.value, tuple)


def test_a_wrong_digamma_term_fails() -> None:
    """The denominator's gamma_0 matters: using gamma_k there (a plausible slip) is far off."""
    counts = draw_counts(2500, 40, seed=1)
    gamma = torch.full((5,), 0.5, dtype=torch.float64)
    digamma = torch.special.digamma
    lengths = counts.sum(1, keepdim=True)
    for _ in range(100):
        num = (digamma(counts + gamma) - digamma(gamma)).sum(0)
        den = (digamma(lengths + gamma) - digamma(gamma)).sum(0)
        gamma = (gamma * num / den).clamp_min(1e-4)
    assert relative_error(gamma) > 0.5


def test_an_unused_topic_falls_to_the_floor_not_zero() -> None:
    schedule = PriorSchedule(burn_in=0, floor=1e-3)
    prior = LearnedPrior(0.1, 3, learn=True, schedule=schedule)
    counts = torch.tensor([[10.0, 5.0, 0.0], [3.0, 12.0, 0.0]] * 20, dtype=torch.float64)
    for _ in range(200):
        prior.observe_counts(counts)
    assert float(prior.gamma[2]) == 1e-3
    assert float(prior.gamma[0]) > 0.1 and float(prior.gamma[1]) > 0.1


def test_fixed_prior_never_moves_and_burn_in_waits() -> None:
    counts = draw_counts(50, 40, seed=3)
    fixed = LearnedPrior(0.1, 5, learn=False)
    waiting = LearnedPrior(0.1, 5, learn=True, schedule=PriorSchedule(burn_in=3))
    for _ in range(3):
        fixed.observe_counts(counts)
        waiting.observe_counts(counts)
    assert fixed.value == 0.1 and waiting.value == 0.1
    waiting.observe_counts(counts)
    assert waiting.value != 0.1


def test_state_round_trip_and_old_state() -> None:
    prior = LearnedPrior(0.1, 5, learn=True, schedule=PriorSchedule(burn_in=0))
    prior.observe_counts(draw_counts(50, 40, seed=4))
    again = LearnedPrior.from_state_dict(prior.state_dict(), 0.1, 5, learn=True)
    assert torch.equal(again.gamma, prior.gamma) and again.updates == prior.updates
    assert LearnedPrior.from_state_dict(None, 0.2, 5, learn=True).value == 0.2


def test_minka_sums_skip_empty_documents() -> None:
    counts = torch.tensor([[0.0, 0.0], [2.0, 1.0]], dtype=torch.float64)
    num, den, n = minka_sums(counts, torch.tensor([0.5, 0.5], dtype=torch.float64))
    assert n == 1 and den > 0 and num.shape == (2,)


def test_gamma_helpers() -> None:
    assert list(gamma_vector(0.1, 3)) == [0.1, 0.1, 0.1]
    assert symmetric_value((0.2, 0.2)) == 0.2 and symmetric_value((0.1, 0.2)) is None
    assert abs(gamma_total((0.1, 0.2), 2) - 0.3) < 1e-12


def test_shape_only_keeps_the_total_and_orders_the_topics() -> None:
    schedule = PriorSchedule(burn_in=0, learn_total=False)
    prior = LearnedPrior(0.5, 5, learn=True, schedule=schedule)
    for step in range(100):
        prior.observe_counts(draw_counts(100, 40, seed=300 + step))
    assert abs(float(prior.gamma.sum()) - 2.5) < 1e-9
    assert torch.equal(prior.gamma.argsort(), TRUE.argsort())
