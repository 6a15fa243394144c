"""SCIR's lazy columns (lda.sgmcmc.scir.lazy): the same law as stepping every column, and the
bookkeeping (the mean's conditional path, the row sums, the re-basing sync, checkpoints) exact."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from lda.sgmcmc.scir import lazy_kernel
from lda.sgmcmc.scir import transition_kernel as cir_kernel
from lda.sgmcmc.scir.lazy import LazyChain

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
            lazy_kernel.stamp(chain.arrays(), columns.numpy())
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


def test_a_restored_chain_takes_the_state_dicts_matrices_without_a_copy():
    """theta and the mean's running total come back as the very storage the state dict (a
    loaded checkpoint) holds: no (K, W) matrix is allocated to be thrown away (at K = 1,000,
    W = 100,000 each is 400 MB of a resuming worker's peak)."""
    from tests.support.memory import peak_growth

    g = torch.Generator().manual_seed(12)
    chain = LazyChain(torch.rand(200, 50_000, generator=g, dtype=torch.float32), ALPHA, 0.9)
    columns = torch.arange(0, 50_000, 7)
    chain.catch_up(columns, g)
    chain.advance(columns, torch.rand(200, columns.numel(), dtype=torch.float64), 2.0, 0.1, g)
    state = {
        k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in chain.state_dict().items()
    }
    restored, grew = peak_growth(lambda: LazyChain.from_state_dict(state))
    assert restored.theta.data_ptr() == state["theta"].data_ptr()
    assert restored.total.data_ptr() == state["total"].data_ptr()
    assert grew < chain.theta.numel() * chain.theta.element_size() // 4, grew
    for name, value in chain.state_dict().items():
        mine = getattr(restored, name)
        assert torch.equal(mine, value) if isinstance(value, torch.Tensor) else mine == value


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


def test_columns_of_renumbers_a_minibatch():
    words = np.array([7, 3, 7, 9, 3, 0], dtype=np.int64)
    columns, local = lazy_kernel.columns_of(words, 12)
    assert columns.tolist() == [0, 3, 7, 9]
    assert columns[local].tolist() == words.tolist()


def test_thread_count_and_layout_change_no_draw():
    """theta is stored word-major and every coordinate has its own stream: one thread or two,
    a chain started from a row-major or a word-major theta, the draws are the same and the
    row sums (summed over fixed chunks) equal."""
    import numba

    def run(start: torch.Tensor) -> LazyChain:
        g = torch.Generator().manual_seed(12)
        chain = LazyChain(start, ALPHA, decay=0.8)
        for columns_list, h in zip(PATTERN, STEPS, strict=True):
            columns = torch.tensor(columns_list)
            chain.catch_up(columns, g)
            counts = COUNTS[columns].expand(7, -1).contiguous()
            chain.advance(columns, counts, SCALE, h, g)
        return chain

    start = torch.rand(7, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = run(start.clone())
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = run(start.T.contiguous().T)
    finally:
        numba.set_num_threads(threads)
    assert one.theta.T.is_contiguous() and two.theta.T.is_contiguous()
    assert torch.equal(one.theta, two.theta)
    assert torch.equal(one.row_sums(), two.row_sums())
    assert torch.equal(one.mean_beta(torch.float64), two.mean_beta(torch.float64))


def _stale_chain(n_words: int = 400) -> LazyChain:
    """A chain some of whose columns are stale (touched at different steps)."""
    g = torch.Generator().manual_seed(21)
    start = torch.rand(6, n_words, dtype=torch.float64, generator=g) * 3.0
    chain = LazyChain(start, ALPHA, decay=0.9)
    for t in range(12):
        columns = torch.unique(torch.randint(n_words, (n_words // 4,), generator=g))
        chain.catch_up(columns, g)
        counts = torch.rand(6, columns.numel(), dtype=torch.float64, generator=g) * (t % 3)
        chain.advance(columns, counts, SCALE, 0.1, g)
    return chain


def test_top_mean_ranks_the_served_mean_without_forming_it():
    chain = _stale_chain()
    mean = chain.mean_beta(torch.float64)
    ids, weights = chain.top_mean(15, torch.float64)
    expected_weights, expected_ids = torch.topk(mean, 15, dim=1)
    assert torch.equal(ids, expected_ids)
    torch.testing.assert_close(weights, expected_weights, rtol=1e-12, atol=0)
    # More words asked for than there are: every word, ranked.
    all_ids, _ = chain.top_mean(10_000, torch.float64)
    assert all_ids.shape == (6, 400)
    assert torch.equal(all_ids.sort(dim=1).values, torch.arange(400).expand(6, -1))


def test_top_mean_breaks_ties_by_word_and_reports_a_non_finite_mean():
    chain = LazyChain(torch.ones(2, 50, dtype=torch.float64), ALPHA, decay=0.5)
    g = torch.Generator().manual_seed(1)
    chain.advance(torch.arange(50), torch.zeros(2, 50, dtype=torch.float64), 1.0, 0.1, g)
    chain.theta.fill_(2.0)  # every word of a topic now has the same mean
    chain.total.fill_(2.0)
    ids, weights = chain.top_mean(5, torch.float64)
    assert ids.tolist() == [[0, 1, 2, 3, 4]] * 2
    torch.testing.assert_close(weights, torch.full((2, 5), 1 / 50, dtype=torch.float64))
    chain.total[1, 3] = float("nan")
    _, weights = chain.top_mean(5, torch.float64)
    assert bool(torch.isnan(weights[1]).all()) and bool(torch.isfinite(weights[0]).all())


def test_sample_at_draws_what_a_full_sample_draws_there():
    """The same values as sample_beta from the same generator state, normalised by the row
    sums' conditional mean instead of the drawn rows: per row a constant ratio (drawn row sum
    over its conditional mean) whose mean over draws is 1 (5 standard errors over 300 keys)."""
    chain = _stale_chain()
    ids = torch.randint(400, (6, 9), generator=torch.Generator().manual_seed(3))
    ratios = []
    for seed in range(300):
        full = chain.sample_beta(torch.Generator().manual_seed(seed), torch.float64)
        partial = chain.sample_at(ids, torch.Generator().manual_seed(seed), torch.float64)
        ratio = partial / full.gather(1, ids)
        torch.testing.assert_close(ratio, ratio[:, :1].expand_as(ratio), rtol=1e-12, atol=0)
        ratios.append(ratio[:, 0])
    drawn = torch.stack(ratios)  # (draws, K)
    error = drawn.std(dim=0) / math.sqrt(drawn.shape[0])
    assert bool(((drawn.mean(dim=0) - 1).abs() < 5 * error).all()), drawn.mean(dim=0)


def test_steps_on_some_rows_move_those_rows_as_a_step_on_all_would():
    """A step given the live rows draws each of them exactly as a step of every row does (the
    streams are per coordinate) and holds the other rows' theta where it was: a free slot
    costs no transitions, and its mean stays a distribution (no row of zeros to divide)."""

    def run(rows: torch.Tensor | None) -> LazyChain:
        g = torch.Generator().manual_seed(3)
        start = torch.rand(4, 5, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
        chain = LazyChain(start + 0.5, ALPHA, decay=0.9)
        for columns_list, h in zip(PATTERN, STEPS, strict=True):
            columns = torch.tensor(columns_list)
            chain.catch_up(columns, g, rows)
            counts = COUNTS[columns].expand(4, -1).contiguous()
            chain.advance(columns, counts, SCALE, h, g, rows)
        return chain

    every, some = run(None), run(torch.tensor([0, 2]))
    start = run(torch.tensor([], dtype=torch.int64))  # no row moves: the start as it was
    for k in (0, 2):
        assert torch.equal(some.theta[k], every.theta[k])
        assert torch.equal(some.total[k], every.total[k])
    held = start.theta[[1, 3]]
    assert torch.equal(some.theta[[1, 3]], held)
    assert not torch.equal(some.theta[[1, 3]], every.theta[[1, 3]])
    mean = some.mean_beta(torch.float64)
    assert bool((mean[[1, 3]] > 0).all())
    torch.testing.assert_close(mean[[1, 3]].sum(dim=1), torch.ones(2, dtype=torch.float64))
    torch.testing.assert_close(mean[[0, 2]], every.mean_beta(torch.float64)[[0, 2]])
