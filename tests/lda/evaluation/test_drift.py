"""Topic drift (JS divergence after matching) and the posterior window's intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import jensenshannon

from lda.evaluation.drift import js_divergence, match_topics, topic_drift
from lda.evaluation.uncertainty import SampleWindow


def _topics(k: int, w: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch._sample_dirichlet(torch.full((k, w), 0.05, dtype=torch.float64), generator=g)


def test_js_divergence_is_scipys_in_bits():
    p, q = _topics(6, 40, 0), _topics(6, 40, 1)
    q[0, :5] = 0.0  # zeros in one distribution only
    q = q / q.sum(1, keepdim=True)
    ours = js_divergence(p, q)
    reference = [jensenshannon(p[k].numpy(), q[k].numpy(), base=2) ** 2 for k in range(6)]
    assert ours.tolist() == pytest.approx(reference, rel=1e-9, abs=1e-12)
    assert js_divergence(p, p).abs().max() < 1e-12
    disjoint = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])
    assert js_divergence(*disjoint).item() == pytest.approx(1.0)


def test_topics_relabelled_and_nudged_are_matched_back():
    previous = _topics(12, 200, 2)
    order = torch.randperm(12, generator=torch.Generator().manual_seed(3))
    noise = _topics(12, 200, 4)
    current = 0.9 * previous[order] + 0.1 * noise
    matched = match_topics(previous, current)
    assert torch.equal(matched, order)  # current topic k came from previous topic order[k]
    drift = topic_drift(previous, current)
    assert torch.equal(drift.matched, order)
    expected = js_divergence(previous[order], current)
    assert torch.allclose(drift.divergence, expected)
    # Without the matching (label k against label k) the same topics would look far apart.
    assert js_divergence(previous, current).mean() > 5 * drift.divergence.mean()


@pytest.mark.parametrize("whole", [True, False])
def test_the_window_gives_the_quantiles_of_the_last_samples(whole):
    """Whole samples (a small model) or samples at chosen words that hold these: the same."""
    window = SampleWindow(5)
    ids = torch.tensor([[0, 3], [2, 1]])
    every_word = None if whole else torch.arange(4).expand(2, -1)
    assert window.intervals(ids) is None
    samples = [_topics(2, 4, s).to(torch.float32) for s in range(8)]
    window.add(every_word, samples[0])
    assert window.intervals(ids) is None  # one sample: no spread yet
    for sample in samples[1:]:
        window.add(every_word, sample)
    bounds = window.intervals(ids)
    assert bounds is not None
    last = np.stack([s.numpy() for s in samples[-5:]]).astype(np.float64)  # the ring wrapped
    for k in range(2):
        for i in range(2):
            values = last[:, k, int(ids[k, i])]
            assert bounds[0][k, i].item() == pytest.approx(np.quantile(values, 0.05), rel=1e-6)
            assert bounds[1][k, i].item() == pytest.approx(np.quantile(values, 0.95), rel=1e-6)
    with pytest.raises(ValueError, match="at least 2"):
        SampleWindow(1)


def test_the_window_keeps_only_the_words_it_is_given():
    """Samples kept at M words per topic (S x K x M, not S x K x W): a word's interval comes
    from the samples that held it, and is NaN where fewer than two did."""
    window = SampleWindow(4)
    values = [torch.tensor([[0.5, 0.2], [0.6, 0.1]]) + 0.01 * s for s in range(4)]
    held = [torch.tensor([[7, 9], [3, 4]]), torch.tensor([[7, 9], [3, 5]])]
    for s, v in enumerate(values):
        window.add(held[s % 2], v)
    assert window.values is not None and window.values.shape == (4, 2, 2)
    bounds = window.intervals(torch.tensor([[9, 7], [4, 5]]))
    assert bounds is not None
    low, high = bounds
    assert low[0, 0].item() == pytest.approx(np.quantile([0.2, 0.21, 0.22, 0.23], 0.05))
    assert high[0, 1].item() == pytest.approx(np.quantile([0.5, 0.51, 0.52, 0.53], 0.95))
    assert low[1, 0].item() == pytest.approx(np.quantile([0.1, 0.12], 0.05))  # samples 0, 2
    assert high[1, 1].item() == pytest.approx(np.quantile([0.11, 0.13], 0.95))  # samples 1, 3
    assert math.isnan(window.intervals(torch.tensor([[8, 7], [3, 4]]))[0][0, 0].item())


def test_drift_in_row_blocks_equals_the_whole_computation(monkeypatch):
    """More topics than a block (and the float32 matching of large models): the same matching
    and divergences as the direct K x W float64 computation."""
    import lda.evaluation.drift as drift_module

    previous = _topics(150, 300, 1)
    current = previous[torch.randperm(150, generator=torch.Generator().manual_seed(2))]
    current = 0.8 * current + 0.2 * _topics(150, 300, 3)
    affinity = previous.sqrt() @ current.sqrt().T
    rows, cols = linear_sum_assignment((1.0 - affinity.clamp(max=1.0)).clamp_min(0.0).sqrt())
    expected = torch.empty(150, dtype=torch.int64)
    expected[torch.from_numpy(cols)] = torch.from_numpy(rows)
    for float32_from in (drift_module.FLOAT32_FROM, 0):
        monkeypatch.setattr(drift_module, "FLOAT32_FROM", float32_from)
        drift = topic_drift(previous, current)
        assert torch.equal(drift.matched, expected)
        p, q = previous[expected].double(), current.double()
        m = 0.5 * (p + q)
        direct = 0.5 * (p * torch.log2(p / m)).sum(1) + 0.5 * (q * torch.log2(q / m)).sum(1)
        torch.testing.assert_close(drift.divergence, direct, rtol=1e-9, atol=1e-12)


def _reference_intervals(window: SampleWindow, wanted: torch.Tensor) -> tuple[np.ndarray, ...]:
    """The intervals by their definition: per (k, i), the quantiles of the kept samples that
    hold word wanted[k, i] (NaN with fewer than two)."""
    assert window.values is not None and window.word_ids is not None
    kept = window.kept
    low = np.full(tuple(wanted.shape), np.nan)
    high = np.full(tuple(wanted.shape), np.nan)
    for k in range(wanted.shape[0]):
        for i in range(wanted.shape[1]):
            found = [
                float(window.values[s, k, m])
                for s in range(kept)
                for m in range(window.word_ids.shape[2])
                if window.word_ids[s, k, m] == wanted[k, i]
            ]
            if len(found) >= 2:
                low[k, i], high[k, i] = np.quantile(found, [0.05, 0.95])
    return low, high


def test_the_windows_intervals_at_chosen_words_equal_their_definition():
    """Words that moved in and out of the top words between samples, and words no sample
    held: each interval is that of the samples holding the word."""
    g = torch.Generator().manual_seed(5)
    window = SampleWindow(6)
    for _ in range(9):
        ids = torch.stack([torch.randperm(30, generator=g)[:8] for _ in range(4)])
        window.add(ids, torch.rand(4, 8, generator=g))
    wanted = torch.stack([torch.randperm(30, generator=g)[:10] for _ in range(4)])
    bounds = window.intervals(wanted)
    assert bounds is not None
    low, high = _reference_intervals(window, wanted)
    np.testing.assert_allclose(bounds[0].numpy(), low, rtol=1e-12)
    np.testing.assert_allclose(bounds[1].numpy(), high, rtol=1e-12)
    assert np.isnan(low).any() and not np.isnan(low).all()


def test_the_windows_intervals_at_chosen_words_form_no_s_k_n_m_array():
    """A large model's window (S = 20 samples at the M words last published of each topic, N
    words asked): matching the words asked to those held must not form an
    S x K x N x M array (at K = 1,000 its int64 copy was 1.6 GB of the worker's peak at every
    snapshot)."""
    from tests.support.memory import peak_growth

    # N = M = 400: the correct computation's own arrays (a few S x K x N float64 copies for the
    # quantiles) stay well under the bound, which at N = 100 they came within 10% of.
    s, k, n = 20, 50, 400
    g = torch.Generator().manual_seed(0)
    window = SampleWindow(s)
    for _ in range(s):
        ids = torch.stack([torch.randperm(600, generator=g)[:n] for _ in range(k)])
        window.add(ids, torch.rand(k, n, generator=g))
    wanted = window.word_ids[-1].clone()  # the words last published
    window.intervals(wanted)  # once first: torch's one-time allocations are not the operation's
    bounds, grew = peak_growth(lambda: window.intervals(wanted))
    assert bounds is not None and not torch.isnan(bounds[0]).all()
    assert grew < s * k * n * n // 2, grew  # half the boolean S x K x N x M alone
