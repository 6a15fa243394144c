"""``streamlda scrape`` replays a hostile corpus to its end in one run: every good article is
queued, every bad one is skipped and counted under its reason in the shared counters, and the
scraper never exits for an article (a supervisor would have had nothing to restart)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.ingest.queue import ArticleQueue, QueueConfig
from service.store.redis_client import connect
from tests.service.ingest.helpers import fast_settings, stream_ids
from tests.service.ingest.hostile import MAX_ARTICLE_BYTES, write_hostile_dump, write_hostile_jsonl
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
CLI = [sys.executable, "-c", "import sys; from service.cli import main; sys.exit(main())"]
GOOD = 3000


@pytest.mark.parametrize("kind", ["jsonl", "dump"])
def test_a_hostile_replay_queues_every_good_article_in_one_run(
    redis_server: RedisServer, tmp_path: Path, kind: str
) -> None:
    path = tmp_path / f"hostile.{kind if kind == 'jsonl' else 'xml'}.bz2"
    expected = write_hostile_jsonl(path, GOOD) if kind == "jsonl" else write_hostile_dump(path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLDA_")}
    env["PYTHONPATH"] = str(REPO)
    command = [*CLI, "scrape", "--source", f"{kind}:{path}", "--redis", redis_server.url]
    command += ["--high-water", "1000000", "--max-article-bytes", str(MAX_ARTICLE_BYTES)]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    settings = fast_settings(redis_url=redis_server.url)
    assert sorted(stream_ids(connect(settings.store), settings.queue.stream)) == sorted(
        expected.good
    )
    if kind == "jsonl":
        assert len(expected.good) == GOOD
    counters = ArticleQueue(connect(settings.store), settings.part(QueueConfig)).counters()
    assert counters["queued"] == len(expected.good)
    skipped = {
        name.split(":", 1)[1]: int(value)
        for name, value in counters.items()
        if name.startswith("skipped:") and value
    }
    assert skipped == dict(expected.skipped)
    # Each damaged article is logged once, by line or page (redirects and the like are not).
    logged = done.stderr.count("service.ingest.sources.base: skipped ")
    unlogged = expected.skipped["disambiguation"] + expected.skipped["missing_text"]
    assert logged == sum(expected.skipped.values()) - unlogged
