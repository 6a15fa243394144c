"""A checkpoint is data: one that would run code on load is refused, and nothing runs."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from service.learn.checkpoint_file import CheckpointRefused, load_checkpoint, save_checkpoint
from service.learn.model_store import CHECKPOINT_NAME
from tests.service.learn.helpers import WorkerProcess
from tests.support.redis_server import RedisServer


class _Planted:
    """What an attacker pickles: unpickling it would call ``os.mkdir(marker)``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.mkdir, (str(self.marker),)


def test_a_checkpoint_that_would_run_code_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = tmp_path / "checkpoint.pt"
    torch.save({"model": {}, "extra": {"payload": _Planted(marker)}}, path)
    with pytest.raises(CheckpointRefused, match="refusing to load the checkpoint"):
        load_checkpoint(path)
    assert not marker.exists()


def test_tensors_arrays_and_plain_values_load_as_saved(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.pt"
    payload = {
        "model": {"beta": torch.arange(6.0).reshape(2, 3), "docs": 7},
        "extra": {
            "counts": np.arange(5, dtype=np.int64),
            "weights": np.linspace(0, 1, 4, dtype=np.float32),
            "random": (3, tuple(range(5)), None),
            "names": ["a", "b"],
            "slots": [b"", b"zlib\x00text"],
        },
    }
    save_checkpoint(path, payload)
    loaded = load_checkpoint(path)
    assert torch.equal(loaded["model"]["beta"], torch.arange(6.0).reshape(2, 3))
    assert loaded["model"]["docs"] == 7
    np.testing.assert_array_equal(loaded["extra"]["counts"], payload["extra"]["counts"])
    assert loaded["extra"]["weights"].dtype == np.float32
    assert loaded["extra"]["random"] == (3, tuple(range(5)), None)
    assert loaded["extra"]["names"] == ["a", "b"]
    assert loaded["extra"]["slots"] == [b"", b"zlib\x00text"]


@pytest.mark.slow  # a real Redis and a worker process
def test_the_worker_refuses_a_planted_checkpoint_in_one_line(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    marker = tmp_path / "ran"
    torch.save({"model": {}, "extra": {"payload": _Planted(marker)}}, data_dir / CHECKPOINT_NAME)
    worker = WorkerProcess(redis_server.url, data_dir, tmp_path / "worker.log")
    try:
        code = worker.wait(60)
    finally:
        worker.ensure_dead()
    assert code == 1
    assert not marker.exists()
    last = worker.output().strip().splitlines()[-1]
    assert last.startswith("streamlda worker: refusing to load the checkpoint"), last
    assert "posix.mkdir" in last and "Traceback" not in worker.output()
