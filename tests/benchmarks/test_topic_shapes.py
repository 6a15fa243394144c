"""The topic-shapes benchmark's counts on tiny hand-made inputs: shares from a fold-in, dead
topics, duplicate pairs, junk, and the goals."""

from __future__ import annotations

import torch

from benchmarks.topic_shapes import (
    dead_topics,
    duplicate_pairs,
    fold_in_shares,
    goals,
    live_gamma,
    quality_counts,
)


def test_shares_are_the_fold_ins_expected_counts() -> None:
    counts = torch.tensor([[6.0, 3.0, 1.0], [0.0, 8.0, 2.0]], dtype=torch.float64)
    lengths = counts.sum(dim=1)
    for gamma in (0.1, (0.2, 0.05, 0.5)):
        vector = torch.tensor(gamma, dtype=torch.float64).expand(3)
        pi = (counts + vector) / (lengths[:, None] + float(vector.sum()))
        expected = counts.sum(dim=0) / counts.sum()
        assert torch.allclose(fold_in_shares(pi, lengths.long(), gamma), expected)


def test_dead_is_under_a_tenth_of_the_average_share() -> None:
    assert dead_topics(torch.tensor([0.6, 0.39, 0.01])) == 1  # 0.01 < 0.1 x 1/3
    assert dead_topics(torch.tensor([0.5, 0.45, 0.05])) == 0  # 0.05 >= 0.033
    assert dead_topics(torch.tensor([])) == 0


def test_duplicate_pairs_share_five_of_ten_top_words() -> None:
    a = list(range(10))
    b = [0, 1, 2, 3, 4, 20, 21, 22, 23, 24]  # 5 in common with a
    c = [0, 1, 2, 3, 30, 31, 32, 33, 34, 35]  # 4 with a, 4 with b
    assert duplicate_pairs(torch.tensor([a, b, c])) == 1
    assert duplicate_pairs(torch.tensor([a, c])) == 0
    assert duplicate_pairs(torch.tensor([a, b, a])) == 3


def test_quality_counts_on_three_hand_made_topics() -> None:
    beta = torch.full((3, 30), 1e-4, dtype=torch.float64)
    for k in range(3):  # topic k: words 10k .. 10k+9, most probable first
        beta[k, 10 * k : 10 * k + 10] = torch.linspace(1.0, 0.5, 10, dtype=torch.float64)
    beta = beta / beta.sum(dim=1, keepdim=True)
    # topics 0 and 1's words always appear together; topic 2's words never do
    docs = [list(range(10))] * 3 + [list(range(10, 20))] * 3 + [[w] for w in range(20, 30)]
    counts = quality_counts(beta, torch.tensor([0.5, 0.48, 0.02]), docs)
    assert counts["live"] == 3
    assert counts["dead"] == 1
    assert counts["duplicate_pairs"] == 0
    assert counts["junk"] == 1  # topic 2
    assert -1.0 < counts["npmi"] < 1.0


def test_live_gamma_keeps_a_scalar_and_picks_live_slots() -> None:
    assert live_gamma(0.1, [0, 2], 3) == 0.1
    assert live_gamma((0.1, 0.2, 0.3), [0, 2], 3) == (0.1, 0.3)


def test_goals_compare_shaped_runs_with_fixed_200_and_hdp() -> None:
    base = {"dead": 0, "duplicate_pairs": 0, "junk": 1, "perplexity": 3500.0, "npmi": 0.34}
    runs = {
        "fixed-200": {**base, "junk": 3, "npmi": 0.33, "seconds": 80.0},
        "hdp": {**base, "perplexity": 5800.0, "npmi": 0.30, "seconds": 200.0},
        "shaped-20": {**base, "seconds": 100.0},
        "shaped-200": {**base, "dead": 2, "junk": 2, "perplexity": 3501.0, "seconds": 300.0},
    }
    out = goals(runs)
    assert all(v for k, v in out.items() if k.startswith("shaped-20:")), out
    assert not out["shaped-200: 0 dead"]
    assert not out["shaped-200: at most 1 junk"]
    assert not out["shaped-200: perplexity <= fixed-200"]  # 3501 > 3500
    assert not out["shaped-200: time <= 1.25 x fixed-200"]  # 300 > 100
    assert not out["shaped-200: time < hdp"]
    assert out["shaped-200: NPMI >= fixed-200 + 0.01"]  # 0.34 >= 0.33 + 0.01
    assert out["shaped-200: NPMI > hdp"]
    assert goals({"fixed-50": base}) == {}
