"""A paced file source yields every article, in order, never faster than its pace."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from service.ingest.sources import SourceStopped, open_source
from service.ingest.sources.pace import Paced


def write_jsonl(path: Path, n: int) -> Path:
    records = [
        {"id": str(i), "title": f"T{i}", "text": f"article number {i} text"} for i in range(n)
    ]
    records.insert(3, {"title": "no text"})  # skipped and counted, as unpaced
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def test_every_article_in_order_and_no_faster_than_the_pace(tmp_path: Path) -> None:
    source = open_source(f"jsonl:{write_jsonl(tmp_path / 'a.jsonl', 21)}", replay_rate=200.0)
    assert isinstance(source, Paced) and source.name.startswith("jsonl:")
    started = time.monotonic()
    ids = [article.id for article in source]
    elapsed = time.monotonic() - started
    assert ids == [str(i) for i in range(21)]
    assert elapsed >= 20 / 200.0  # 21 articles: 20 gaps of 5 ms at the least
    assert source.skipped.counts == {"missing_text": 1}


def test_unpaced_without_a_rate_and_for_the_live_source(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", 3)
    assert not isinstance(open_source(f"jsonl:{path}"), Paced)


def test_a_stop_ends_the_wait(tmp_path: Path) -> None:
    stop = threading.Event()
    source = open_source(
        f"jsonl:{write_jsonl(tmp_path / 'a.jsonl', 5)}", replay_rate=0.01, stop=stop
    )
    articles = iter(source)
    assert next(articles).id == "0"  # the first comes at once
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    with pytest.raises(SourceStopped):
        next(articles)  # due in 100 s
    assert time.monotonic() - started < 30


def test_a_pace_must_be_positive(tmp_path: Path) -> None:
    source = open_source(f"jsonl:{write_jsonl(tmp_path / 'a.jsonl', 1)}")
    with pytest.raises(ValueError, match="positive"):
        Paced(source, 0.0)
