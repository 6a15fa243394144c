"""Checkpoints written before lda/ was split into rooms load after it and go on exactly.

tests/data/checkpoints/ holds two written by ``save_model`` at that time (SCIR with its lazy
chain, SGRHMC with momentum) and the state each reached after one more step; loading one here
and taking the same step must reach the same state.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from lda.batch import Batch
from service.learn.model_store import load_model

DATA = Path(__file__).resolve().parents[2] / "data" / "checkpoints"


@pytest.mark.parametrize("sampler", ["scir", "sgrhmc"])
def test_a_checkpoint_from_before_the_rooms_loads_and_continues(sampler: str) -> None:
    expected = json.loads((DATA / "expected.json").read_text())
    model, vocabulary, extra = load_model(DATA / f"{sampler}-before-rooms.pt")
    assert model.config.sampler == sampler
    assert vocabulary.words[:2] == ["w00", "w01"]
    assert extra["acked_entries"] == ["1-0"]
    model.update(Batch.from_ids(expected["docs"][:8]))
    after = expected["after_one_more_step"][sampler]
    assert model.docs_seen == after["docs_seen"] and model.state.step == after["step"]
    beta_mean = torch.tensor(after["beta_mean"], dtype=model.beta_mean.dtype)
    torch.testing.assert_close(model.beta_mean, beta_mean, rtol=1e-12, atol=1e-15)
