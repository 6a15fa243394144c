"""A change of vocabulary (docs/model.md, "When the vocabulary changes"): kept columns carried
as they were, entering ones drawn from Gamma(alpha, 1), beta_mean's rows renormalised, the lazy
chain's streams following their columns, and a learner that goes on learning."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from scipy import stats

from lda.batch import Batch
from lda.model import LearnerConfig, StreamingLDA
from lda.remap import remap_indices
from lda.sgmcmc.averaging import ExponentialMean
from lda.sgmcmc.chain import DenseChain
from lda.sgmcmc.columns import ColumnMap
from lda.sgmcmc.samplers import init_state
from lda.sgmcmc.scir.chain import LazySCIRChain
from lda.sgmcmc.scir.lazy import LazyChain

K, W = 4, 30
# Every sampler; SCIR both ways: lazy (the CPU's chain) and dense (the GPU's, built here).
CHAINS = ["sgld", "sghmc", "sgrld", "sgrhmc", "scir", "scir-dense"]
# New word j keeps old column KEEP[j]: reordered, ten old columns gone, six words entering.
KEEP = [5, 3, -1, 0, 29, -1, 12, 11, 10, -1, 20, 21, 22, 23, -1, 1, 2, 4, 6, 7, -1, 8, 9, -1]
BATCHES = [
    [[0, 1, 2, 2, 5], [3, 4, 29], [10, 11, 12, 12]],
    [[20, 21, 0], [5, 5, 6, 7], [8, 9]],
    [[15, 16, 17], [0, 3], [22, 23, 23]],
]
KS_BOUND = 1.95  # x 1/sqrt(n): the two-sided KS critical value at p = 0.001


def _learner(name: str, seed: int = 3, alpha: float | None = None, n_words: int = W):
    sampler = "scir" if name == "scir-dense" else name
    config = LearnerConfig(K, n_words, sampler=sampler, sweeps=4, corpus_size=50.0, alpha=alpha)
    chain = None
    if name == "scir-dense":
        generator = torch.Generator().manual_seed(seed)
        state = init_state("scir", K, n_words, generator, torch.float64)
        assert config.mean_decay is not None
        chain = DenseChain(config, state, ExponentialMean(config.mean_decay))
    model = StreamingLDA(config, seed=seed, chain=chain)
    assert isinstance(model.chain, LazySCIRChain) == (name == "scir")
    return model


def _trained(name: str) -> StreamingLDA:
    model = _learner(name)
    for ids in BATCHES:
        model.update(Batch.from_ids(ids))
    return model


def _mean_theta(model: StreamingLDA) -> torch.Tensor:
    assert isinstance(model.chain, LazySCIRChain)
    return model.chain.lazy.mean_theta()


def test_remap_indices_maps_words_to_their_old_columns():
    keep = remap_indices(["a", "b", "c", "d"], ["c", "e", "a", "f"])
    assert keep.dtype == torch.int64 and keep.tolist() == [2, -1, 0, -1]
    assert remap_indices(["a", "b"], ["a", "b"]).tolist() == [0, 1]
    with pytest.raises(ValueError, match="twice"):
        remap_indices(["a", "a"], ["a"])
    with pytest.raises(ValueError, match="twice"):
        remap_indices(["a"], ["b", "b"])


def test_a_bad_map_is_refused():
    with pytest.raises(ValueError, match="kept for two"):
        ColumnMap.of(torch.tensor([0, 0, -1]), 3)
    with pytest.raises(ValueError, match="old column"):
        ColumnMap.of(torch.tensor([3]), 3)
    with pytest.raises(ValueError, match="old column"):
        ColumnMap.of(torch.tensor([-2]), 3)
    with pytest.raises(ValueError, match="empty"):
        ColumnMap.of(torch.tensor([], dtype=torch.int64), 3)


@pytest.mark.parametrize("name", CHAINS)
def test_kept_columns_are_carried_and_rows_renormalised(name: str) -> None:
    model = _trained(name)
    keep = torch.tensor(KEEP)
    kept, sources = torch.nonzero(keep >= 0).squeeze(1), keep[keep >= 0]
    entering = torch.nonzero(keep < 0).squeeze(1)
    theta, momentum = model.chain.theta.clone(), model.state.momentum
    momentum = None if momentum is None else momentum.clone()
    mean = model.beta_mean.clone()
    lazy_mean = _mean_theta(model) if name == "scir" else None
    model.remap_vocabulary(keep, torch.Generator().manual_seed(9))

    assert model.config.n_words == len(KEEP) and model.chain.theta.shape == (K, len(KEEP))
    assert torch.equal(model.chain.theta[:, kept], theta[:, sources])  # bit for bit
    if momentum is not None:
        new_momentum = model.state.momentum
        assert new_momentum is not None and new_momentum.shape == (K, len(KEEP))
        assert torch.equal(new_momentum[:, kept], momentum[:, sources])
        assert bool(torch.isfinite(new_momentum).all())
    after = model.beta_mean
    torch.testing.assert_close(after.sum(1), torch.ones(K, dtype=after.dtype), rtol=0, atol=1e-12)
    # The kept words keep their proportions among themselves: one factor per row.
    ratio = after[:, kept] / mean[:, sources]
    torch.testing.assert_close(ratio, ratio[:, :1].expand_as(ratio), rtol=1e-12, atol=0)
    # that factor: what the entering words leave over what the kept words held
    factor = (1 - after[:, entering].sum(1)) / mean[:, sources].sum(1)
    torch.testing.assert_close(ratio[:, 0], factor, rtol=1e-12, atol=0)
    if name == "scir":
        # The lazy chain's mean of theta: kept columns exact, an entering one at its value.
        assert lazy_mean is not None
        new_mean = _mean_theta(model)
        torch.testing.assert_close(new_mean[:, kept], lazy_mean[:, sources], rtol=1e-14, atol=0)
        torch.testing.assert_close(
            new_mean[:, entering], model.chain.theta[:, entering], rtol=1e-14, atol=0
        )
    else:
        # An entering word's mean is its share in the current sample.
        torch.testing.assert_close(after[:, entering], model.beta[:, entering], rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", ["sgld", "scir", "scir-dense"])
def test_entering_columns_are_drawn_from_the_prior(name: str) -> None:
    """Gamma(alpha, 1), not init_state's Gamma(1, 1) nor a copy of old columns: a KS test over
    K x 5,000 entering coordinates."""
    alpha = 0.3
    model = _learner(name, alpha=alpha, n_words=50)
    model.update(Batch.from_ids([[0, 1, 2], [3, 4]]))
    keep = torch.cat([torch.arange(50), torch.full((5_000,), -1)])
    model.remap_vocabulary(keep, torch.Generator().manual_seed(4))
    fresh = model.chain.theta[:, 50:].double().flatten().numpy()
    bound = KS_BOUND / np.sqrt(fresh.size)
    assert stats.kstest(fresh, stats.gamma(alpha).cdf).statistic < bound
    assert stats.kstest(fresh, stats.gamma(1.0).cdf).statistic > bound  # the test has power


@pytest.mark.parametrize("name", CHAINS)
def test_the_identity_map_changes_nothing(name: str) -> None:
    """No draw, no change: the next step equals the step without the remap, bit for bit."""
    model = _trained(name)
    twin = copy.deepcopy(model)
    model.remap_vocabulary(torch.arange(W))
    assert model.config == twin.config
    batch = Batch.from_ids([[0, 1, 5, 5], [7, 8]])
    model.update(batch)
    twin.update(batch)
    assert torch.equal(model.chain.theta, twin.chain.theta)
    assert torch.equal(model.beta_mean, twin.beta_mean)
    if model.state.momentum is not None:
        assert twin.state.momentum is not None
        assert torch.equal(model.state.momentum, twin.state.momentum)


@pytest.mark.parametrize("name", CHAINS)
def test_remap_then_learn_and_round_trip_a_checkpoint(name: str) -> None:
    model = _trained(name)
    model.remap_vocabulary(torch.tensor(KEEP))
    restored = StreamingLDA.from_state_dict(copy.deepcopy(model.state_dict()))
    assert restored.config.n_words == len(KEEP)
    assert torch.equal(restored.chain.theta, model.chain.theta)
    if name != "scir-dense":  # a dense SCIR checkpoint comes back lazy on the CPU
        assert torch.equal(restored.beta_mean, model.beta_mean)
    # The entering words (new columns 2, 5, 9, 14, 20, 23) get tokens, as they will.
    later = [[2, 5, 5, 0], [9, 14, 1], [20, 23, 23, 2], [5, 2, 9, 9]]
    for _ in range(3):
        model.update(Batch.from_ids(later))
        if name != "scir-dense":
            restored.update(Batch.from_ids(later))
    for learner in (model, restored) if name != "scir-dense" else (model,):
        assert learner.beta_mean.shape == (K, len(KEEP))
        assert bool(torch.isfinite(learner.beta_mean).all())
        assert bool(torch.isfinite(learner.beta).all())
        sums = learner.beta_mean.sum(1)
        torch.testing.assert_close(sums, torch.ones_like(sums), rtol=0, atol=1e-10)
    if name != "scir-dense":  # a resumed run equals the uninterrupted one
        assert torch.equal(restored.chain.theta, model.chain.theta)
        assert torch.equal(restored.beta_mean, model.beta_mean)


def _stale_chain(seed: int) -> tuple[LazyChain, torch.Generator]:
    """A lazy chain after steps that left most columns stale at different clocks."""
    g = torch.Generator().manual_seed(seed)
    theta = torch.distributions.Gamma(0.5, 1.0).sample((3, 40)).double()
    chain = LazyChain(theta, 0.5, decay=0.9)
    for _ in range(12):
        columns = torch.unique(torch.randint(0, 40, (6,), generator=g))
        chain.catch_up(columns, g)
        counts = torch.rand(3, columns.numel(), generator=g, dtype=torch.float64) * 4
        chain.advance(columns, counts, 10.0, 0.3, g)
    return chain, g


def test_a_kept_column_is_caught_up_as_without_the_remap():
    """Streams follow a column's key, not its index: after a remap that moves, drops and adds
    columns, catching up and stepping the kept ones draws what the unchanged chain draws (the
    same generator state); keyed by index, the draws differ."""
    chain, g = _stale_chain(7)
    keep = torch.tensor([-1, 39, 3, 17, -1, 0, 5, 22, -1, 30, 11, 8])  # 28 columns leave
    columns = ColumnMap.of(keep, 40)
    moved = LazyChain.from_state_dict(copy.deepcopy(chain.state_dict()))
    moved.remap(columns, torch.Generator().manual_seed(1))
    by_index = LazyChain.from_state_dict(copy.deepcopy(moved.state_dict()))
    by_index.column_key = torch.arange(keep.numel())
    kept, sources = columns.kept, columns.sources
    order = torch.argsort(sources)  # catch-up takes sorted ids
    old_ids, new_ids = sources[order], kept[order]
    state = g.get_state()
    for subject in (chain, moved, by_index):
        g.set_state(state)
        ids = old_ids if subject is chain else new_ids
        subject.catch_up(ids, g)
        counts = torch.arange(3 * ids.numel(), dtype=torch.float64).reshape(3, -1) % 5
        subject.advance(ids, counts, 10.0, 0.3, g)
    assert torch.equal(moved.theta[:, new_ids], chain.theta[:, old_ids])
    assert torch.equal(moved.total[:, new_ids], chain.total[:, old_ids])
    assert not torch.equal(by_index.theta[:, new_ids], chain.theta[:, old_ids])
    # the reads too: a draw of beta now at the kept columns under the same key
    read = torch.Generator().manual_seed(2).get_state()
    here = chain.sample_beta(torch.Generator().set_state(read), torch.float64)
    there = moved.sample_beta(torch.Generator().set_state(read), torch.float64)
    ratio = there[:, new_ids] / here[:, old_ids]  # rows normalised over other columns
    torch.testing.assert_close(ratio, ratio[:, :1].expand_as(ratio), rtol=1e-12, atol=0)


def test_lazy_row_sums_after_a_remap_count_the_new_columns():
    chain, _ = _stale_chain(8)
    keep = torch.tensor([4, -1, 9, 2, -1, -1, 33, 15])
    chain.remap(ColumnMap.of(keep, 40), torch.Generator().manual_seed(3))
    assert chain.column_key.tolist()[1] == 40 and chain.next_key == 43  # fresh keys
    elapsed = chain.time - chain.column_time
    expected = (chain.alpha + (chain.theta - chain.alpha) * torch.exp(-elapsed)).sum(1)
    torch.testing.assert_close(chain.row_sums(), expected, rtol=1e-9, atol=0)
    assert bool((elapsed[keep < 0] == 0).all())  # entering columns are up to date
    chain.sync(torch.Generator().manual_seed(4))
    torch.testing.assert_close(chain.row_sums(), chain.theta.sum(1), rtol=1e-12, atol=0)
