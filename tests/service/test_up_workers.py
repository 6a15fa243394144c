"""``streamlda up --workers 2`` replaying a file with topics that move (the default): every
article trained once and acknowledged, the moves rank 0 decides made by both ranks, and every
number ``/topics`` listed answering."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.learn.model_store import CHECKPOINT_NAME, load_model
from tests.service.learn.helpers import HELDOUT, REPO, checkpoint_docs, wait_until
from tests.service.test_up import UP_ENV, get, stop_up
from tests.support.corpora import SHARDS, read_jsonl
from tests.support.redis_server import free_port

pytestmark = pytest.mark.slow

ARTICLES = 120
# Topics move (the helpers keep K fixed), decided every step from the second on, and a retire
# always kept (a topic under 0.99 of the average share is dead; a retire may cost a nat per
# token): moves certain within a replay this short, made through the settings a user sets.
MOVING = {
    "STREAMLDA_FIXED_TOPICS": "false",
    "STREAMLDA_MAX_TOPICS": "8",
    "STREAMLDA_SHAPING_EVERY": "1",
    "STREAMLDA_SHAPING_START_AFTER": "2",
    "STREAMLDA_SHAPING_WINDOW": "2",
    "STREAMLDA_SHAPING_DEAD_SHARE": "0.99",
    "STREAMLDA_SHAPING_TOLERANCE": "1",
}


def _replay_file(path: Path) -> list[str]:
    """The first ARTICLES articles of shard 0 as a JSON-lines file; their texts."""
    records = list(read_jsonl(SHARDS[0], limit=ARTICLES))
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")
    return [r["text"] for r in records]


def test_up_with_two_worker_ranks_trains_every_article_once_while_topics_move(
    tmp_path: Path,
) -> None:
    texts = _replay_file(tmp_path / "replay.jsonl.gz")
    data_dir, port, log = tmp_path / "data", free_port(), tmp_path / "up.log"
    env = {**os.environ, **UP_ENV, **MOVING}
    env.pop("STREAMLDA_REDIS_URL", None)
    command = [sys.executable, "-m", "service", "up", "--workers", "2", "--port", str(port)]
    command += ["--source", f"jsonl:{tmp_path / 'replay.jsonl.gz'}", "--data-dir", str(data_dir)]
    with log.open("ab") as out:
        up = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)

    def done() -> bool:
        status, stats = get(port, "/stats")
        return (
            status == 200
            and stats["queue"]["length"] == 0
            and stats["queue"]["pending"] == 0
            and stats["docs_seen"] > 0
            and "scraper finished its source" in log.read_text()
        )

    try:
        wait_until(lambda: up.poll() is not None or done(), "the replay learned", timeout=120)
        assert up.poll() is None, log.read_text()[-3000:]
        _, stats = get(port, "/stats")
        assert stats["world_size"] == 2 and len(stats["rank_docs_per_s"]) == 2
        _, metrics = get(port, "/metrics")
        assert 'streamlda_rank_docs_per_second{rank="1"}' in metrics
        assert "streamlda_world_size 2" in metrics
        _, events = get(port, "/topics/events?limit=200")
        assert events["live"] and events["events"], "topics moved"
        _, topics = get(port, "/topics")
        listed = {t["id"] for t in topics["topics"]}
        gone = {n for e in events["events"] for n in e["topics"]} - listed
        assert listed and all(get(port, f"/topics/{n}")[0] == 200 for n in listed)
        assert all(get(port, f"/topics/{n}")[0] == 410 for n in gone)
    finally:
        code = stop_up(up)
    output = log.read_text()
    assert code == 0, output[-3000:]
    assert output.count("rank 1 of 2 joined") == 1, "no rank died or restarted"
    _, vocab, _ = load_model(data_dir / CHECKPOINT_NAME)
    expected = sum(1 for text in texts if vocab.encode(text)) - HELDOUT
    assert stats["docs_seen"] == checkpoint_docs(data_dir) == expected
