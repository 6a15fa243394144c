"""Older checkpoints' ``extra`` is read in today's form, in one place, and today's is still
readable by code that knew only the older keys."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

from service.learn import checkpoint_compat
from service.learn.checkpointer import CheckpointConfig, Checkpointer
from service.learn.model_store import load_model
from service.learn.reservoir import Reservoir
from service.learn.worker_parts import Counters
from service.settings import Settings
from service.store.redis_retry import RedisRetry, RetryConfig

DATA = Path(__file__).resolve().parents[2] / "data" / "checkpoints"


@pytest.mark.parametrize("sampler", ["scir", "sgrhmc"])
def test_a_checkpoint_from_before_the_parts_reads_as_nothing_kept(sampler: str) -> None:
    """No counters, record, word counts or reservoirs: each part starts over."""
    model, _, extra = load_model(DATA / f"{sampler}-before-rooms.pt")
    today = checkpoint_compat.upgrade(extra, model.docs_seen)
    assert today["reservoirs"] == [] and today["counters"] == {}
    assert today["evaluations"] == extra["evaluations"]  # it had them: kept as written
    assert "topics" not in today and "word_counts" not in today
    counters = Counters()
    counters.load_state_dict(today["counters"])
    assert counters == Counters()


def test_rank_0s_reservoir_under_the_old_key_is_every_ranks() -> None:
    model, _, extra = load_model(DATA / "scir-one-reservoir.pt")
    assert "reservoirs" not in extra
    today = checkpoint_compat.upgrade(extra, model.docs_seen)
    assert today["reservoirs"] == [extra["reservoir"]]
    reservoir = Reservoir(None, "k", 4, seed=1)
    reservoir.load_state_dict(today["reservoirs"][0])
    assert reservoir.offered == 6 and reservoir.revisited == 0


def test_no_evaluations_means_every_point_up_to_the_learner_was_scored() -> None:
    """Checkpoints from before asynchronous scoring: nothing waits, nothing is scored again."""
    model, _, extra = load_model(DATA / "scir-one-reservoir.pt")
    assert "evaluations" not in extra
    today = checkpoint_compat.upgrade(extra, model.docs_seen)
    assert today["evaluations"] == {"scored_docs": model.docs_seen, "pending": []}
    assert today["counters"] == {"updates": 4, "checkpoints": 2}


def test_the_checkpointer_reads_old_checkpoints_in_todays_form(tmp_path: Path) -> None:
    retry = RedisRetry(Settings().part(RetryConfig), threading.Event())
    config = CheckpointConfig(every_s=60.0, max_unacked=10, stop_ack_wait_s=1.0)
    checkpointer = Checkpointer(
        DATA / "scir-one-reservoir.pt", torch.device("cpu"), config, {}, lambda ids: 0, retry
    )
    model, vocab, extra = checkpointer.load()
    assert len(vocab) == 30 and extra["reservoirs"][0]["offered"] == 6
    assert extra["evaluations"]["scored_docs"] == model.docs_seen


def test_todays_checkpoints_keep_rank_0s_reservoir_where_older_code_reads_it() -> None:
    states = [{"offered": 3}, {"offered": 5}]
    written = checkpoint_compat.for_older_readers({"reservoirs": states})
    assert written["reservoir"] == {"offered": 3} and written["reservoirs"] == states
    assert "reservoir" not in checkpoint_compat.for_older_readers({"counters": {}})
