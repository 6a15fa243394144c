"""SCIR's lazy columns (lda.lazy): the same law as stepping every column, and the bookkeeping
(the mean's conditional path, the row sums, the re-basing sync, checkpoints) exact."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from lda import cir_kernel
from lda.lazy import LazyChain

ALPHA = 0.2
SCALE = 3.0
# Which of W = 5 columns each step touches, and their expected counts (the same for every row).
PATTERN = [[0, 1], [0], [0, 2, 3], [0], [0, 1], [0], [0, 4], [0, 2]] * 3
COUNTS = torch.tensor([4.0, 0.5, 2.0, 1.0, 7.0], dtype=torch.float64)
STEPS = [0.05 + 0.01 * (t % 5) for t in range(len(PATTERN))]


def _lazy_run(rows: int, seed: int, skip_catch_up: bool = False) -> LazyChain:
    g = torch.Generator().manual_seed(seed)
    chain = LazyChain(torch.full((rows, 5), 2.0, dtype=torch.float64), ALPHA, decay=0.9)
    for columns_list, h in zip(PATTERN, STEPS, strict=True):
        columns = torch.tensor(columns_list)
        if skip_catch_up:  # the mutant: stale columns treated as if up to date
            cir_kernel.stamp(columns.numpy(), *chain._clocks()[:-1])
        chain.catch_up(columns, g)
        counts = COUNTS[columns].expand(rows, -1).contiguous()
        chain.advance(columns, counts, SCALE, h, g)
    chain.sync(g)
    return chain


def _dense_run(rows: int, seed: int) -> np.ndarray:
    """Every column stepped every step: a = alpha off the minibatch."""
    theta = np.full((rows, 5), 2.0)
    for t, (columns, h) in enumerate(zip(PATTERN, STEPS, strict=True)):
        a = np.full(5, ALPHA)
        a[columns] += SCALE * COUNTS.numpy()[columns]
        flat = theta.reshape(-1).copy()
        cir_kernel.cir_array(flat, np.tile(a, rows), h, np.uint64(seed * 1_000 + t))
        theta = flat.reshape(rows, 5)
    return theta


@pytest.fixture(scope="module")
def runs() -> tuple[np.ndarray, np.ndarray]:
    return _lazy_run(20_000, seed=1).theta.numpy(), _dense_run(20_000, seed=2)


def test_lazy_columns_have_the_dense_steps_law(runs):
    """Rows are independent replicas of one chain: compare each column's law. Two-sample KS
    at n = 20,000 each: ~0.01 for equal laws, 0.025 is p < 1e-4."""
    lazy, dense = runs
    for w in range(5):
        statistic = stats.ks_2samp(lazy[:, w], dense[:, w]).statistic
        assert statistic < 0.025, (w, statistic)


def test_a_catch_up_that_ignores_elapsed_time_fails(runs):
    _, dense = runs
    mutant = _lazy_run(20_000, seed=3, skip_catch_up=True).theta.numpy()
    worst = max(stats.ks_2samp(mutant[:, w], dense[:, w]).statistic for w in range(1, 5))
    assert worst > 0.1, worst


def test_mean_follows_realised_values_and_conditional_paths():
    """The mean's total: touched columns' realised values, stale ones their conditional mean
    alpha + (x - alpha) e^-(elapsed) at every step, weighted as ExponentialMean weighs."""
    g = torch.Generator().manual_seed(4)
    decay = 0.8
    chain = LazyChain(torch.tensor([[1.0, 5.0, 0.3, 9.0]], dtype=torch.float64), ALPHA, decay)
    last = chain.theta[0].clone().numpy()
    last_time = np.zeros(4)
    clock, values = 0.0, []
    pattern = [[0], [0, 1], [0], [0, 2], [0], [0], [0, 1]]
    for t, columns_list in enumerate(pattern):
        h = 0.1 + 0.05 * t
        columns = torch.tensor(columns_list)
        chain.catch_up(columns, g)
        chain.advance(columns, torch.ones(1, len(columns_list), dtype=torch.float64), 2.0, h, g)
        clock += h
        for w in columns_list:
            last[w], last_time[w] = float(chain.theta[0, w]), clock
        stale = ALPHA + (last - ALPHA) * np.exp(-(clock - last_time))
        values.append(stale)  # equals the realised value on touched columns (elapsed 0)
    weights = np.array([(1 - decay) * decay ** (len(values) - 1 - j) for j in range(len(values))])
    expected = (weights[:, None] * np.array(values)).sum(0) / weights.sum()
    got = chain.mean_theta()[0].numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_sync_keeps_the_mean_and_makes_row_sums_exact():
    g = torch.Generator().manual_seed(5)
    theta = torch.distributions.Gamma(0.5, 1.0).sample((3, 50)).double()
    chain = LazyChain(theta, ALPHA, decay=0.95)
    for t in range(40):
        columns = torch.unique(torch.randint(0, 50, (8,), generator=g))
        chain.catch_up(columns, g)
        counts = torch.rand(3, columns.numel(), generator=g, dtype=torch.float64) * 5
        chain.advance(columns, counts, 10.0, 0.2, g)
        # between syncs: touched columns exact, stale ones at their conditional means
        elapsed = chain.time - chain.column_time
        expected = (ALPHA + (chain.theta - ALPHA) * torch.exp(-elapsed)).sum(1)
        torch.testing.assert_close(chain.row_sums(), expected, rtol=1e-9, atol=0)
        if t == 20:
            before = chain.mean_theta()
            chain.sync(g)
            torch.testing.assert_close(chain.mean_theta(), before, rtol=1e-12, atol=0)
            torch.testing.assert_close(chain.row_sums(), chain.theta.sum(1), rtol=1e-12, atol=0)
            assert chain.time == 0.0 and chain.steps == 0


def test_due_for_sync_before_the_exponentials_leave_float64():
    chain = LazyChain(torch.ones(2, 3, dtype=torch.float64), ALPHA, decay=0.5)
    g = torch.Generator().manual_seed(6)
    columns = torch.tensor([0])
    for _ in range(400):
        chain.catch_up(columns, g)
        chain.advance(columns, torch.ones(2, 1, dtype=torch.float64), 1.0, 0.01, g)
        if chain.due_for_sync():
            chain.sync(g)
        assert chain.steps * -math.log(0.5) <= 201
    assert torch.isfinite(chain.mean_theta()).all()


def test_state_dict_round_trip_continues_identically():
    g = torch.Generator().manual_seed(7)
    chain = LazyChain(torch.full((4, 6), 1.5, dtype=torch.float64), ALPHA, decay=0.9)
    columns = torch.tensor([1, 4])
    counts = torch.ones(4, 2, dtype=torch.float64)
    chain.catch_up(columns, g)
    chain.advance(columns, counts, 2.0, 0.1, g)
    copy = LazyChain.from_state_dict(
        {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in chain.state_dict().items()}
    )
    for c in (chain, copy):
        c.catch_up(torch.tensor([0, 1]), torch.Generator().manual_seed(8))
    torch.testing.assert_close(chain.theta, copy.theta, rtol=0, atol=0)
    torch.testing.assert_close(chain.mean_theta(), copy.mean_theta(), rtol=0, atol=0)


def test_the_learner_steps_only_the_minibatch_columns_and_reads_do_not_move_it():
    from lda.batch import Batch
    from lda.model import LearnerConfig, StreamingLDA

    g = torch.Generator().manual_seed(9)
    docs = [torch.randint(0, 30, (20,), generator=g).tolist() for _ in range(40)]  # words < 30
    config = LearnerConfig(n_topics=5, n_words=60, sampler="scir", sweeps=4)
    quiet, reader = StreamingLDA(config, seed=1), StreamingLDA(config, seed=1)
    untouched = quiet.state.theta[:, 30:].clone()
    for i in range(0, 40, 10):
        batch = Batch.from_ids(docs[i : i + 10])
        quiet.update(batch)
        reader.update(batch)
        for beta in (reader.beta, reader.beta_mean):
            assert torch.isfinite(beta).all()
            torch.testing.assert_close(beta.sum(1), torch.ones(5, dtype=beta.dtype))
    assert torch.equal(quiet.state.theta, reader.state.theta)
    assert torch.equal(quiet.state.theta[:, 30:], untouched)  # left alone, not yet drawn


def test_reads_equal_the_state_they_would_give_without_changing_it():
    """sample_beta draws what a catch-up of every column would (same key), normalised;
    mean_beta is mean_theta normalised; neither touches the chain."""
    g = torch.Generator().manual_seed(10)
    chain = LazyChain(torch.full((3, 40), 0.7, dtype=torch.float64), ALPHA, decay=0.9)
    for _ in range(5):
        columns = torch.unique(torch.randint(0, 40, (6,), generator=g))
        chain.catch_up(columns, g)
        counts = torch.rand(3, columns.numel(), generator=g, dtype=torch.float64)
        chain.advance(columns, counts, 4.0, 0.3, g)
    before = {
        k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in chain.state_dict().items()
    }
    sample = chain.sample_beta(torch.Generator().manual_seed(11), torch.float64)
    mean = chain.mean_beta(torch.float64)
    for name, value in chain.state_dict().items():
        assert (
            torch.equal(value, before[name])
            if isinstance(value, torch.Tensor)
            else value == before[name]
        )
    expected_mean = chain.mean_theta()
    torch.testing.assert_close(mean, expected_mean / expected_mean.sum(1, keepdim=True))
    chain.catch_up(None, torch.Generator().manual_seed(11))
    torch.testing.assert_close(sample, chain.theta / chain.theta.sum(1, keepdim=True))
