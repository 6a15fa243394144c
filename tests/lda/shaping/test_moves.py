"""Topic moves (docs/model.md, "Topic moves") on every sampler: a merge that adds the rows, a
retired row drawn from the prior, a division that keeps the row sum, K kept and a learner that
goes on learning."""

from __future__ import annotations

import pytest
import torch
from scipy import stats

from lda.batch import Batch
from lda.model import LearnerConfig, StreamingLDA
from lda.prior import GAMMA_FLOOR
from lda.sgmcmc.averaging import ExponentialMean
from lda.sgmcmc.chain import DenseChain, all_finite
from lda.sgmcmc.samplers import init_state
from lda.sgmcmc.scir.chain import LazySCIRChain
from lda.sgmcmc.seeds import SeedPrior
from lda.shaping.divide import divide
from lda.shaping.moves import merge, retire

K, W = 5, 30
# Every sampler; SCIR both ways: lazy (the CPU's chain) and dense (the GPU's, built here).
CHAINS = ["sgld", "sghmc", "sgrld", "sgrhmc", "scir", "scir-dense"]
BATCHES = [
    [[0, 1, 2, 2, 5], [3, 4, 29], [10, 11, 12, 12]],
    [[20, 21, 0], [5, 5, 6, 7], [8, 9]],
    [[15, 16, 17], [0, 3], [22, 23, 23]],
]
KS_BOUND = 1.95  # x 1/sqrt(n): the two-sided KS critical value at p = 0.001


def _learner(name: str, n_words: int = W, alpha: float | None = None) -> StreamingLDA:
    sampler = "scir" if name == "scir-dense" else name
    config = LearnerConfig(
        K, n_words, sampler=sampler, sweeps=4, corpus_size=50.0, alpha=alpha, learn_gamma=True
    )
    chain = None
    if name == "scir-dense":
        state = init_state("scir", K, n_words, torch.Generator().manual_seed(3), torch.float64)
        assert config.mean_decay is not None
        chain = DenseChain(config, state, ExponentialMean(config.mean_decay))
    model = StreamingLDA(config, seed=3, chain=chain)
    assert isinstance(model.chain, LazySCIRChain) == (name == "scir")
    return model


def _trained(name: str, n_words: int = W, alpha: float | None = None) -> StreamingLDA:
    model = _learner(name, n_words, alpha)
    for ids in BATCHES:
        model.update(Batch.from_ids(ids))
    # an asymmetric gamma, so the moves' gamma rules show
    model.prior.gamma = torch.linspace(0.05, 0.25, K, dtype=torch.float64)
    return model


@pytest.mark.parametrize("name", CHAINS)
def test_a_merge_adds_the_rows_and_their_gammas(name: str) -> None:
    model = _trained(name)
    theta = model.state.theta.clone()
    gamma = model.prior.gamma.clone()
    merge(model, 1, 3, torch.Generator().manual_seed(5))
    after = model.state.theta
    # theta_kw estimates alpha + n_kw: the merged row is the two rows' counts added, at each
    # column's clock for the lazy chain; its beta their sum normalised.
    assert torch.equal(after[1], theta[1] + theta[3])
    if not isinstance(model.chain, LazySCIRChain):  # the lazy chain's beta draws stale columns
        summed = theta[1] + theta[3]
        torch.testing.assert_close(model.beta[1], summed / summed.sum())
    torch.testing.assert_close(model.beta_mean.sum(dim=1), torch.ones(K, dtype=torch.float64))
    assert float(model.prior.gamma[1]) == pytest.approx(float(gamma[1] + gamma[3]))
    assert float(model.prior.gamma[3]) == GAMMA_FLOOR
    assert model.state.theta.shape == (K, W)  # K unchanged: slot 3 is free, not gone


@pytest.mark.parametrize("name", ["scir", "scir-dense", "sgrld", "sghmc"])
def test_a_retired_row_is_drawn_from_the_prior(name: str) -> None:
    """theta_kw ~ Gamma(alpha, 1) over many words: a KS test that Gamma(1, 1) (the chain's
    start) and the row left as it was both fail."""
    alpha, n_words = 0.3, 4000
    model = _learner(name, n_words, alpha)
    model.update(Batch.from_ids([[0, 0, 1, 2], [0, 3, 3]]))
    old = model.state.theta[2].clone()
    retire(model, 2, torch.Generator().manual_seed(9))
    row = model.state.theta[2].numpy()
    bound = KS_BOUND / n_words**0.5
    assert stats.kstest(row, stats.gamma(alpha).cdf).statistic < bound
    assert stats.kstest(row, stats.gamma(1.0).cdf).statistic > bound  # the test has power
    assert stats.kstest(old.numpy(), stats.gamma(alpha).cdf).statistic > bound
    assert abs(row.mean() - alpha) < 4 * (alpha / n_words) ** 0.5
    assert float(model.prior.gamma[2]) == GAMMA_FLOOR
    # its average restarted at the new row (the lazy chain's stale columns: from it, along
    # their conditional mean path, so there only the up-to-date columns hold it exactly)
    chain = model.chain
    if isinstance(chain, LazySCIRChain):
        now = chain.lazy.column_step == chain.lazy.steps
        mean = chain.lazy.mean_theta()[2]
        torch.testing.assert_close(mean[now], model.state.theta[2][now])
    else:
        theta = model.state.theta[2]
        torch.testing.assert_close(model.beta_mean[2], theta / theta.sum())


@pytest.mark.parametrize("name", CHAINS)
def test_a_retire_gives_its_counts_to_the_receivers_word_by_word(name: str) -> None:
    """Retired with receivers, row 2's counts over the prior, (theta_2w - alpha)^+, are added
    to rows 0, 3 and 4 in proportion to their theta_jw, word by word; row 1 is untouched and
    row 2 is a fresh prior draw."""
    model = _trained(name)
    before = model.state.theta.clone()
    mean_1 = model.beta_mean[1].clone()
    alpha = float(model.chain.lazy.alpha) if isinstance(model.chain, LazySCIRChain) else None
    if alpha is None:
        alpha = float(model.config.alpha or 0.0)
    retire(model, 2, torch.Generator().manual_seed(9), receivers=[0, 3, 4])
    after = model.state.theta
    rows = [0, 3, 4]
    gained = (after[rows] - before[rows]).to(torch.float64)
    given = (before[2] - alpha).clamp_min(0).to(torch.float64)
    torch.testing.assert_close(gained.sum(dim=0), given, rtol=1e-9, atol=1e-9)
    share = before[rows].to(torch.float64) / before[rows].to(torch.float64).sum(dim=0)
    torch.testing.assert_close(gained, share * given, rtol=1e-9, atol=1e-9)
    assert torch.equal(after[1], before[1])
    torch.testing.assert_close(model.beta_mean[1], mean_1)
    assert not torch.equal(after[2], before[2])
    assert float(model.prior.gamma[2]) == GAMMA_FLOOR
    torch.testing.assert_close(model.beta_mean.sum(dim=1), torch.ones(K, dtype=torch.float64))
    with pytest.raises(ValueError, match="own counts"):
        retire(model, 3, torch.Generator(), receivers=[0, 3])


@pytest.mark.parametrize("name", CHAINS)
def test_a_retire_into_one_receiver_is_a_merge_but_for_the_prior(name: str) -> None:
    """With one receiver j the retire gives all of row k's counts to j: theta_j and j's mean
    are what a merge of k into j gives, but for k's prior alpha (tiny here)."""
    alpha = 1e-9
    merged, spread = _trained(name, alpha=alpha), _trained(name, alpha=alpha)
    merge(merged, 1, 3, torch.Generator().manual_seed(5))
    retire(spread, 3, torch.Generator().manual_seed(5), receivers=[1])
    # each theta_1w differs by at most k's prior alpha, what a merge adds and a retire does not
    torch.testing.assert_close(spread.state.theta[1], merged.state.theta[1], rtol=1e-12, atol=alpha)
    torch.testing.assert_close(spread.beta_mean[1], merged.beta_mean[1], rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("name", CHAINS)
def test_a_division_keeps_the_row_sum_and_undoes_a_merge(name: str) -> None:
    """Divided, the two rows add up to the row before (the reverse of a merge's sum), each
    word in its fraction; gamma_k is shared by the rows' sums."""
    model = _trained(name)
    before = model.state.theta[0].clone()
    gamma = float(model.prior.gamma[0])
    fraction = torch.linspace(0.0, 1.0, W, dtype=torch.float64)
    divide(model, 0, fraction, 4, torch.Generator().manual_seed(4))
    theta = model.state.theta
    tiny = torch.finfo(theta.dtype).tiny
    torch.testing.assert_close(theta[0] + theta[4], before, rtol=1e-12, atol=4 * tiny)
    kept = before * fraction.to(before.dtype)
    torch.testing.assert_close(theta[0], kept.clamp_min(tiny), rtol=1e-12, atol=0)
    share = float(theta[0].sum() / (theta[0].sum() + theta[4].sum()))
    assert float(model.prior.gamma[0]) == pytest.approx(gamma * share)
    assert float(model.prior.gamma[0] + model.prior.gamma[4]) == pytest.approx(gamma)
    merge(model, 0, 4, torch.Generator().manual_seed(5))  # and a merge gives the row back
    torch.testing.assert_close(model.state.theta[0], before, rtol=1e-12, atol=4 * tiny)
    assert float(model.prior.gamma[0]) == pytest.approx(gamma)
    with pytest.raises(ValueError, match="fraction"):
        divide(model, 1, torch.full((W,), 2.0), 3, torch.Generator())


HALVES = torch.linspace(0.0, 1.0, W, dtype=torch.float64)  # a division's fraction per word


def _every_move(model: StreamingLDA, generator: torch.Generator) -> None:
    """A merge, a retire giving its counts to the live rows and a division into each of the
    two slots they freed."""
    merge(model, 0, 1, generator)
    retire(model, 2, generator, receivers=[0, 3, 4])
    divide(model, 3, HALVES, 1, generator)
    divide(model, 0, 1 - HALVES, 2, generator)


@pytest.mark.parametrize("name", CHAINS)
def test_the_learner_keeps_learning_after_every_move(name: str) -> None:
    model = _trained(name)
    _every_move(model, torch.Generator().manual_seed(8))
    for ids in BATCHES:
        model.update(Batch.from_ids(ids))
    assert model.state.theta.shape == model.beta_mean.shape == (K, W)
    assert all_finite(model.state.theta, model.beta_mean)
    torch.testing.assert_close(model.beta.sum(dim=1), torch.ones(K, dtype=torch.float64))
    torch.testing.assert_close(model.beta_mean.sum(dim=1), torch.ones(K, dtype=torch.float64))


@pytest.mark.parametrize("name", ["scir", "sghmc"])
def test_moves_take_no_draw_from_the_learners_generators(name: str) -> None:
    model = _trained(name)
    before = (model.generator.get_state(), model.eval_generator.get_state())
    _every_move(model, torch.Generator().manual_seed(0))
    assert torch.equal(before[0], model.generator.get_state())
    assert torch.equal(before[1], model.eval_generator.get_state())


@pytest.mark.parametrize("name", ["scir", "sgrld"])
def test_seeded_topics_are_never_merged_away_retired_or_divided_into(name: str) -> None:
    model = _trained(name)
    model.set_seeds(SeedPrior.of([(1, 4, 5.0)]))
    generator = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="seeded"):
        merge(model, 0, 1, generator)
    with pytest.raises(ValueError, match="seeded"):
        retire(model, 1, generator)
    with pytest.raises(ValueError, match="seeded"):
        divide(model, 0, HALVES, 1, generator)
    merge(model, 1, 0, generator)  # a seeded topic may absorb another, and keeps its seeds
    divide(model, 1, HALVES, 0, generator)  # and be divided, keeping them
    assert model.seeds.triples() == [(1, 4, 5.0)]


def test_bad_moves_are_refused() -> None:
    model = _trained("sgrld")
    generator = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="into itself"):
        merge(model, 2, 2, generator)
    with pytest.raises(ValueError, match="outside"):
        retire(model, K, generator)
    with pytest.raises(ValueError, match="outside"):
        divide(model, 0, HALVES, -1, generator)
    with pytest.raises(ValueError, match="differ"):
        divide(model, 0, HALVES, 0, generator)
    with pytest.raises(ValueError, match="fraction"):
        divide(model, 0, torch.ones(W + 1), 1, generator)
    with pytest.raises(ValueError, match="fraction"):
        divide(model, 0, -HALVES, 1, generator)


def test_a_fixed_prior_keeps_its_value_on_live_topics_and_floors_free_ones() -> None:
    """Under a fixed prior a freed slot still sits at the floor (else it would go on taking
    tokens as a live topic); the kept and the divided topics hold the symmetric value."""
    model = StreamingLDA(LearnerConfig(K, W, sampler="sgrld", sweeps=4), seed=1)
    model.update(Batch.from_ids(BATCHES[0]))
    start = model.config.gamma
    generator = torch.Generator().manual_seed(0)
    merge(model, 0, 1, generator)
    assert float(model.prior.gamma[0]) == start
    assert float(model.prior.gamma[1]) == GAMMA_FLOOR
    divide(model, 0, HALVES, 1, generator)
    assert model.gamma == start


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_tiny_alpha_never_leaves_a_row_of_zeros(dtype: str) -> None:
    """With alpha 1e-4 (SGRLD's) nearly every Gamma(alpha) draw underflows: a redrawn or
    divided row is floored at the dtype's smallest normal number, so its beta exists and the
    chain steps on."""
    config = LearnerConfig(K, 20, sampler="sgrld", sweeps=4, dtype=dtype)
    model = StreamingLDA(config, seed=1)
    model.update(Batch.from_ids([[0, 1, 2], [3, 4, 4, 5]]))
    generator = torch.Generator().manual_seed(0)
    retire(model, 2, generator)
    merge(model, 0, 1, generator)
    divide(model, 3, torch.zeros(20, dtype=torch.float64), 1, generator)  # row 3 all given away
    assert bool((model.state.theta.sum(dim=1) > 0).all())
    for _ in range(5):
        model.update(Batch.from_ids([[0, 1, 2]]))
    assert all_finite(model.state.theta, model.beta_mean)
