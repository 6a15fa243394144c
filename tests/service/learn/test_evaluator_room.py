"""How many betas may wait for the scoring process: the backlog, bounded by their bytes."""

from __future__ import annotations

import torch

from lda.evaluation.scorer import HeldoutScorer, ScorerConfig
from service.learn.evaluator import PENDING_BYTES, Evaluator


def _evaluator(backlog: int) -> Evaluator:
    """Not started: no scoring process is spawned."""
    config = ScorerConfig(gamma=0.1, sweeps=10)
    state = HeldoutScorer(config, torch.Generator()).state_dict()
    return Evaluator(config, torch.device("cpu"), 1, backlog, state, 0, [])


def test_a_large_model_waits_one_beta_at_a_time_and_a_small_one_up_to_the_backlog():
    evaluator = _evaluator(backlog=4)
    k1000_w100k = 1000 * 100_000 * 4  # float32 bytes: 400 MB
    assert evaluator.room(k1000_w100k) == 1
    assert evaluator.room(PENDING_BYTES // 2) == 2
    assert evaluator.room(50 * 7702 * 4) == 4  # the paper's size: the backlog
    assert _evaluator(backlog=1).room(1) == 1
    assert evaluator.room(10 * PENDING_BYTES) == 1  # always room for one
