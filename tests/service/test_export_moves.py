"""``streamlda export`` while topics move: the live topics only, each row under its number
(manifest, CSV), with their learned gamma_k; with K fixed the export is as it was. The state
is a real learner's after real moves (tests/service/api/shaped.py), published by the worker's
publisher to a real Redis; the command runs as a process."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import redis

from tests.service.api import shaped
from tests.service.test_export import export
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow


def _exported(redis_server: RedisServer, tmp_path: Path) -> Path:
    out = tmp_path / "export"
    done = export(redis_server.url, out)
    assert done.returncode == 0, done.stderr
    return out


def test_the_export_holds_the_live_topics_under_their_numbers(
    redis_client: redis.Redis, redis_server: RedisServer, tmp_path: Path
) -> None:
    model = shaped.shaped_model()
    shaped.publish(redis_client, model)
    out = _exported(redis_server, tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    live = model.topic_ids.live_slots()
    assert manifest["topic_ids"] == shaped.LIVE and manifest["topics"] == 3
    learned = model.prior.gamma[live].tolist()
    assert manifest["gamma"] == pytest.approx(learned) and manifest["gamma_learned"]
    beta = np.load(out / "beta.npy")
    assert beta.shape == (3, len(shaped.WORDS))
    assert np.allclose(beta, model.beta_mean[live].numpy(), atol=1e-6)
    assert np.load(out / "topic_size.npy").sum() == pytest.approx(1.0)
    assert np.load(out / "doc_topic.npy").shape == (3, 3)
    with (out / "topic_words.csv").open() as rows:
        topics = [int(row["topic"]) for row in csv.DictReader(rows)]
    assert sorted(set(topics)) == sorted(shaped.LIVE)
    assert topics[0] == 5  # listed in slot order: slot 1 holds topic 5


def test_a_fixed_k_exports_as_before(
    redis_client: redis.Redis, redis_server: RedisServer, tmp_path: Path
) -> None:
    shaped.publish(redis_client, shaped.fixed_model())
    out = _exported(redis_server, tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    assert "topic_ids" not in manifest and manifest["topics"] == 4
    with (out / "topic_words.csv").open() as rows:
        assert sorted({int(row["topic"]) for row in csv.DictReader(rows)}) == [0, 1, 2, 3]
