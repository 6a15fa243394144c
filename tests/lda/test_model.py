"""StreamingLDA's contract: N/n scaling, shapes, and refusing an empty minibatch."""

from __future__ import annotations

import pytest
import torch

from lda.batch import Batch
from lda.model import LearnerConfig, StreamingLDA
from lda.sgmcmc.chain import all_finite


def test_corpus_size_fixed_or_growing_with_documents_seen():
    fixed = StreamingLDA(LearnerConfig(3, 10, corpus_size=500.0))
    growing = StreamingLDA(LearnerConfig(3, 10, corpus_size=500.0, corpus_growth=True))
    assert fixed.corpus_size(50) == growing.corpus_size(50) == 500.0
    fixed.docs_seen = growing.docs_seen = 1000
    assert fixed.corpus_size(50) == 500.0
    assert growing.corpus_size(50) == 1050.0  # this minibatch counts as seen


def test_update_keeps_beta_a_distribution_and_counts_documents():
    model = StreamingLDA(LearnerConfig(4, 12, sampler="sgrld", sweeps=4), seed=2)
    batch = Batch.from_ids([[0, 1, 2, 2], [5, 6], [11]])
    info = model.update(batch)
    assert model.docs_seen == 3 and model.tokens_seen == 7 and model.state.step == 1
    assert info.zero_guarded == 0
    beta = model.beta
    assert beta.shape == (4, 12) and bool((beta >= 0).all())
    torch.testing.assert_close(beta.sum(1), torch.ones(4, dtype=beta.dtype))
    ids, weights = model.top_words(5)
    assert ids.shape == weights.shape == (4, 5)
    assert bool((weights[:, :-1] >= weights[:, 1:]).all())


def test_empty_minibatch_is_refused():
    model = StreamingLDA(LearnerConfig(2, 5))
    with pytest.raises(ValueError, match="empty minibatch"):
        model.update(Batch.from_ids([]))


def test_unknown_sampler_and_bad_burn_in_are_refused():
    with pytest.raises(ValueError, match="unknown sampler"):
        LearnerConfig(2, 5, sampler="nuts")
    with pytest.raises(ValueError, match="burn_in"):
        LearnerConfig(2, 5, sweeps=4, burn_in=4)


@pytest.mark.parametrize(("sampler", "lazy"), [("scir", True), ("sgrld", False), ("sgld", False)])
def test_only_the_lazy_chain_draws_to_read_the_whole_sample(sampler: str, lazy: bool) -> None:
    model = StreamingLDA(LearnerConfig(3, 10, sampler=sampler), device="cpu")
    assert model.whole_reads_cost_draws is model.chain.whole_reads_cost_draws is lazy


def test_finiteness_check_handles_nan_inf_and_an_overflowing_sum():
    big = torch.full((4,), 1e308, dtype=torch.float64)  # finite entries, infinite sum
    assert all_finite(big)
    assert all_finite(torch.zeros(3, 2, dtype=torch.float64))
    for bad in (float("nan"), float("inf"), -float("inf")):
        assert not all_finite(torch.tensor([1.0, bad], dtype=torch.float64))


def test_defaults_follow_the_minibatch_in_one_place():
    """scaled_defaults: a sampler with a BatchScaling rule scales its schedule and mean decay
    with the documents per step (none below the reference); one without keeps its defaults."""
    from lda.config import DEFAULTS, scaled_defaults

    scir = DEFAULTS["scir"]
    schedule, decay = scaled_defaults("scir", 1000)
    assert schedule.a == pytest.approx(10 * scir.schedule.a)
    assert schedule.b == pytest.approx(scir.schedule.b / 10) and schedule.c == scir.schedule.c
    assert decay == pytest.approx(scir.mean_decay**10)
    assert scaled_defaults("scir", 50) == (scir.schedule, scir.mean_decay)
    assert scaled_defaults("sgld", 1000) == (DEFAULTS["sgld"].schedule, DEFAULTS["sgld"].mean_decay)


@pytest.mark.parametrize("sampler", ["scir", "sgrld"])
def test_a_revisit_steps_at_the_streams_n_and_step_size(sampler: str) -> None:
    """A revisit is a step like any other, but the documents seen, the schedule's position
    and a growing N stay the stream's (docs/samplers.md, "Revisiting a reservoir")."""
    config = LearnerConfig(4, 12, sampler=sampler, sweeps=4, corpus_size=5.0, corpus_growth=True)
    model = StreamingLDA(config, seed=2)
    fresh = Batch.from_ids([[0, 1, 2, 2], [5, 6], [11]])
    model.update(fresh)
    step_size, scale = model.step_size, model.corpus_size(0)
    assert scale == 5.0  # N = max(5, 3 documents seen)
    before = model.beta_mean.clone()
    model.update(Batch.from_ids([[0, 1], [5, 6, 7]]), revisit=True)
    assert model.docs_seen == 3 and model.tokens_seen == 7
    assert model.state.step == 2 and model.revisit_steps == 1 and model.revisited_docs == 2
    assert model.step_size == step_size and model.corpus_size(0) == scale
    assert not torch.equal(model.beta_mean, before)  # it learned
    model.update(fresh)
    assert model.step_size == config.schedule(2)  # two fresh steps: the schedule's position
    restored = StreamingLDA.from_state_dict(model.state_dict())
    assert (restored.revisit_steps, restored.revisited_docs) == (1, 2)
    assert restored.step_size == model.step_size


@pytest.mark.parametrize("sampler", ["scir", "sgrld"])
def test_document_counts_come_from_the_steps_own_sweeps_and_change_no_draw(sampler: str) -> None:
    """Asking for the documents' E[n_dk] hands over each document's expected topic counts
    (each row sums to its tokens) and leaves the chain exactly where it would have been."""
    config = LearnerConfig(4, 12, sampler=sampler, sweeps=4)
    watched, plain = StreamingLDA(config, seed=3), StreamingLDA(config, seed=3)
    batch = Batch.from_ids([[0, 1, 2, 2], [5, 6], [11, 11, 11]])
    seen: list[torch.Tensor] = []
    for _ in range(3):
        watched.update(batch, documents=seen.append)
        plain.update(batch)
    assert len(seen) == 3 and seen[0].shape == (3, 4) and seen[0].dtype == torch.float64
    torch.testing.assert_close(seen[-1].sum(1), torch.tensor([4.0, 2.0, 3.0], dtype=torch.float64))
    assert torch.equal(watched.beta, plain.beta) and torch.equal(watched.beta_mean, plain.beta_mean)
