"""A new snapshot is parsed in slices that leave the GIL to the event loop, into exactly what
``Snapshot.from_json`` gives, and the view swaps it in whole: a reader never sees half of one."""

from __future__ import annotations

import json
import random
import threading
import time

import pytest
import redis

from service.api.reads.pipeline_status import StreamKeys
from service.api.reads.refresher import View, ViewConfig
from service.api.reads.snapshot_parse import Pacer, parse_snapshot
from service.settings import Settings
from service.store.snapshot import (
    Snapshot,
    WordWeight,
    publish_snapshot,
    read_raw_snapshot,
    read_versioned_snapshot,
)
from tests.service.conftest import Published


def big_snapshot(k: int = 200, words: int = 100, marker: int = 0) -> Snapshot:
    """A snapshot as large as the worker's at K topics, every weight and count ``marker``-ed."""
    rnd = random.Random(marker)

    def topic(t: int) -> list[WordWeight]:
        return [WordWeight(f"w{t}x{i}", marker + rnd.random() / 2) for i in range(words)]

    return Snapshot(
        docs_seen=marker,
        updated_at=1.0 + marker,
        sampler="scir",
        step_size=0.1,
        device="cpu",
        vocab_size=7702,
        topics=[topic(t) for t in range(k)],
        sample_topics=[topic(t) for t in range(k)],
        topic_coherence=[0.1] * k,
        topic_drift=[0.0 if t % 7 else 0.5 for t in range(k)],
        topic_changed_at=[marker] * k,
        intervals=[[[marker, None] for _ in range(words)] for _ in range(k)],
    )


@pytest.mark.slow
def test_the_published_snapshot_parses_as_from_json(
    redis_client: redis.Redis, published: Published
) -> None:
    raw = read_raw_snapshot(redis_client)
    assert raw is not None
    version, expected = read_versioned_snapshot(redis_client) or ("", None)
    assert raw[0] == version
    assert parse_snapshot(raw[1]) == expected == Snapshot.from_json(raw[1])


@pytest.mark.parametrize(
    "text",
    [
        big_snapshot(20, 10, marker=3).to_json(),
        json.dumps(json.loads(big_snapshot(5, 4).to_json()), indent=2),  # spaces everywhere
        json.dumps({**json.loads(big_snapshot(3, 2).to_json()), "sample_topics": None}),
        json.dumps({k: v for k, v in json.loads(big_snapshot(3, 2).to_json()).items()
                    if k != "sample_topics"}),  # an older worker's: the sample is the mean
        json.dumps({**json.loads(big_snapshot(3, 2).to_json()), "topics": [], "intervals": []}),
    ],
)  # fmt: skip
def test_any_form_parses_as_from_json(text: str) -> None:
    raw = text.encode()
    try:
        expected = Snapshot.from_json(raw)
    except Exception as exc:  # the same failure, then
        with pytest.raises(type(exc)):
            parse_snapshot(raw)
        return
    assert parse_snapshot(raw) == expected


@pytest.mark.parametrize("text", ["", "[]", '{"topics": [[["a", 1]]', '{"docs_seen": 1} x', "{"])
def test_malformed_text_fails_as_from_json(text: str) -> None:
    with pytest.raises(Exception) as expected:
        Snapshot.from_json(text.encode())
    with pytest.raises(expected.type):
        parse_snapshot(text.encode())


def test_a_large_snapshot_leaves_the_gil_while_it_is_parsed() -> None:
    raw = big_snapshot().to_json().encode()
    pace = Pacer()
    assert parse_snapshot(raw, pace) == Snapshot.from_json(raw)
    assert pace.pauses >= 10  # a K = 200 snapshot is many slices of work


@pytest.mark.slow
def test_readers_never_see_half_a_snapshot(
    redis_client: redis.Redis, settings: Settings, published: Published
) -> None:
    sources = StreamKeys(settings.queue.stream, settings.queue.group, settings.queue.counters_key)
    view = View(redis_client, ViewConfig(0.001, 256, 100, settings.store.redis_url, sources, 10.0))
    view.refresh()
    view.start()
    stop = threading.Event()
    seen: set[int] = set()
    bad: list[str] = []

    def read() -> None:
        while not stop.is_set():
            topics = view.state.topics
            if topics is None or topics.snapshot.docs_seen == published.snapshot.docs_seen:
                continue
            snapshot = topics.snapshot
            marker = snapshot.docs_seen
            seen.add(marker)
            whole = len(snapshot.topics) == 50 and all(
                len(t) == 20 and all(int(w.weight) == marker for w in t)
                for t in (*snapshot.topics, *snapshot.sample_topics)
            )
            if not whole or topics.all(10, "mean", False, "id", None).body.count(b'"word"') != 500:
                bad.append(f"snapshot {marker} served incomplete")

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for marker in range(1, 31):
            publish_snapshot(redis_client, big_snapshot(50, 20, marker))
            time.sleep(0.01)
        deadline = time.monotonic() + 10
        while 30 not in seen and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        reader.join()
        view.stop()
    assert not bad
    assert 30 in seen and len(seen) >= 3
