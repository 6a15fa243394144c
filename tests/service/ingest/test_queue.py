"""The Redis Streams queue: dedupe across restarts, backpressure bound, consumer group."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from dataclasses import replace
from typing import Any

import pytest
import redis

from service.ingest.queue import ArticleQueue, QueueConfig, new_batch_token
from service.ingest.sources import Article, Position
from service.settings import Settings
from service.store.redis_client import connect
from tests.service.ingest.helpers import fast_settings, stream_ids, wait_until
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow


def _articles(first: int, count: int) -> list[Article]:
    return [
        Article(id=str(i), title=f"T{i}", text=f"text {i}", source="test")
        for i in range(first, first + count)
    ]


def _queue(server: RedisServer, **overrides: object) -> ArticleQueue:
    settings = fast_settings(redis_url=server.url, **overrides)
    return ArticleQueue(connect(settings.store), settings.part(QueueConfig))


def test_add_dedupes_by_page_id_across_a_restart(redis_server: RedisServer) -> None:
    queue = _queue(redis_server)
    queue.ensure_group()
    first = queue.add(_articles(1, 10) + _articles(5, 3), fetched_at=123.5)
    assert (first.queued, first.duplicates) == (10, 3)
    redis_server.stop()
    redis_server.start()
    again = _queue(redis_server)
    second = again.add(_articles(8, 5))
    assert (second.queued, second.duplicates) == (2, 3)
    client = redis_server.client()
    assert stream_ids(client, again.stream) == [str(i) for i in range(1, 13)]
    entry = client.xrange(again.stream, count=1)[0][1]
    assert {k.decode(): v.decode() for k, v in entry.items()} == {
        "id": "1",
        "title": "T1",
        "text": "text 1",
        "source": "test",
        "fetched_at": "123.5",
    }


def test_stream_never_exceeds_high_water_and_add_waits(redis_server: RedisServer) -> None:
    queue = _queue(redis_server, stream_high_water=20)
    queue.ensure_group()
    statuses = queue.try_add(_articles(1, 30))
    assert statuses == [1] * 20 + [-1] and queue.length() == 20
    stop = threading.Event()
    results = []
    adder = threading.Thread(target=lambda: results.append(queue.add(_articles(21, 10), stop=stop)))
    adder.start()
    time.sleep(0.3)
    assert adder.is_alive() and queue.length() == 20  # waiting, not dropping, not trimming
    consumer = _queue(redis_server, stream_high_water=20)
    got = consumer.read("c1", 5, block_ms=100)
    consumer.ack([entry for entry, _ in got])
    assert wait_until(lambda: queue.length() == 20, timeout=10)
    time.sleep(0.2)
    assert adder.is_alive()  # 5 of 10 queued: waits again for the rest
    got = consumer.read("c1", 5, block_ms=100)
    consumer.ack([entry for entry, _ in got])
    adder.join(timeout=10)
    stop.set()
    assert not adder.is_alive()
    (result,) = results
    assert result.queued == 10 and result.backpressure_waits >= 2 and result.waited_s >= 0.4
    assert result.unqueued == []
    assert stream_ids(redis_server.client(), queue.stream) == [str(i) for i in range(11, 31)]


def test_the_mark_counts_unread_entries_not_those_read_and_unacknowledged(
    redis_server: RedisServer,
) -> None:
    queue = _queue(redis_server, stream_high_water=20)
    queue.ensure_group()
    assert queue.try_add(_articles(1, 21)) == [1] * 20 + [-1]
    held = queue.read("w", 15, block_ms=50)  # read, not acknowledged (awaiting a checkpoint)
    assert (queue.unread(), queue.pending(), queue.length()) == (5, 15, 20)
    assert queue.try_add(_articles(21, 16)) == [1] * 15 + [-1]  # room for what was read
    assert (queue.unread(), queue.length()) == (20, 35)
    assert not queue.add(_articles(21, 15)).backpressure_waits  # duplicates: no wait
    queue.ack([entry for entry, _ in held])
    assert (queue.unread(), queue.pending(), queue.length()) == (20, 0, 20)


def test_add_returns_unqueued_articles_when_stopped_while_full(
    redis_server: RedisServer,
) -> None:
    queue = _queue(redis_server, stream_high_water=3)
    stop = threading.Event()
    stop.set()
    result = queue.add(_articles(1, 5), stop=stop)
    assert result.queued == 3 and [a.id for a in result.unqueued] == ["4", "5"]


def test_concurrent_producers_never_duplicate_nor_overflow(redis_server: RedisServer) -> None:
    high_water = 150
    queues = [_queue(redis_server, stream_high_water=high_water) for _ in range(4)]
    queues[0].ensure_group()
    lengths: list[tuple[int, int]] = []  # (unread, stream length)
    done = threading.Event()

    def produce(queue: ArticleQueue, offset: int) -> None:
        for start in range(0, 200, 20):  # overlapping id ranges across producers
            queue.add(_articles(offset + start, 20), stop=done)

    def watch() -> None:
        while not done.is_set():
            lengths.append((queues[0].unread(), queues[0].length()))
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    producers = [threading.Thread(target=produce, args=(q, 50 * n)) for n, q in enumerate(queues)]
    watcher.start()
    for thread in producers:
        thread.start()
    consumer = queues[0]
    seen: list[str] = []
    assert wait_until(
        lambda: (
            _drain(consumer, seen)
            and not any(t.is_alive() for t in producers)
            and consumer.length() == 0
        ),
        timeout=30,
    )
    done.set()
    watcher.join(timeout=5)
    assert max(unread for unread, _ in lengths) <= high_water
    # Beyond the mark the stream holds only what the consumer has read (50 at a time).
    assert max(length for _, length in lengths) <= high_water + 50
    assert sorted(seen, key=int) == [str(i) for i in range(350)]


def _drain(queue: ArticleQueue, seen: list[str]) -> bool:
    entries = queue.read("drain", 50, block_ms=10)
    seen += [article.id for _, article in entries]
    queue.ack([entry for entry, _ in entries])
    return True


def test_read_and_ack_delete_consumed_entries(redis_server: RedisServer) -> None:
    queue = _queue(redis_server)
    assert queue.read("w1", 5, block_ms=50) == []  # creates the group on first use
    queue.add(_articles(1, 8))
    got = queue.read("w1", 5, block_ms=50)
    assert [a.id for _, a in got] == ["1", "2", "3", "4", "5"]
    assert queue.pending() == 5 and queue.length() == 8
    assert queue.ack([entry for entry, _ in got]) == 5
    assert queue.pending() == 0 and queue.length() == 3
    assert [a.id for _, a in queue.read("w1", 10, block_ms=50)] == ["6", "7", "8"]


CONSUMER_SCRIPT = """
import json, os, signal, sys
from service.ingest.queue import ArticleQueue, QueueConfig
from service.store.redis_client import connect
from service.settings import Settings
settings = Settings.model_validate(json.loads(sys.argv[1]))
queue = ArticleQueue(connect(settings.store), settings.part(QueueConfig))
got = queue.read("doomed", 4, block_ms=1000)
print(json.dumps([entry for entry, _ in got]), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_entries_of_a_killed_consumer_are_redelivered_after_the_timeout(
    redis_server: RedisServer,
) -> None:
    settings = fast_settings(redis_url=redis_server.url, claim_after_ms=500)
    queue = ArticleQueue(connect(settings.store), settings.part(QueueConfig))
    queue.ensure_group()
    queue.add(_articles(1, 6))
    process = subprocess.run(
        [sys.executable, "-c", CONSUMER_SCRIPT, settings.model_dump_json()],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode == -9, process.stderr
    doomed = json.loads(process.stdout)
    assert len(doomed) == 4
    survivor = ArticleQueue(connect(settings.store), settings.part(QueueConfig))
    early = survivor.read("survivor", 10, block_ms=50)
    assert [entry for entry, _ in early] not in (doomed,) and len(early) == 2  # only new ones
    survivor.ack([entry for entry, _ in early])
    time.sleep(0.55)
    late = survivor.read("survivor", 10, block_ms=50)
    assert [entry for entry, _ in late] == doomed
    survivor.ack(doomed)
    assert survivor.pending() == 0 and survivor.length() == 0


def test_a_reading_consumer_keeps_its_entries(redis_server: RedisServer) -> None:
    settings = fast_settings(redis_url=redis_server.url, claim_after_ms=300)
    slow = ArticleQueue(connect(settings.store), settings.part(QueueConfig))
    other = ArticleQueue(connect(settings.store), settings.part(QueueConfig))
    slow.add(_articles(1, 3))
    held = slow.read("slow", 3, block_ms=50)
    for _ in range(8):  # 0.8 s in all, well past claim_after_ms, reading now and then
        time.sleep(0.1)
        slow.read("slow", 1, block_ms=1)
        assert other.read("other", 10, block_ms=1) == []
    assert slow.ack([entry for entry, _ in held]) == 3


def test_a_restarted_consumer_gets_its_own_pending_entries_first(
    redis_server: RedisServer,
) -> None:
    settings = fast_settings(redis_url=redis_server.url, claim_after_ms=60_000)
    before = ArticleQueue(connect(settings.store), settings.part(QueueConfig))
    before.add(_articles(1, 5))
    held = [entry for entry, _ in before.read("worker-1", 3, block_ms=50)]
    after = ArticleQueue(
        connect(settings.store), settings.part(QueueConfig)
    )  # same name, new process
    again = after.read("worker-1", 2, block_ms=50)
    assert [entry for entry, _ in again] == held[:2]
    rest = after.read("worker-1", 5, block_ms=50)
    assert [a.id for _, a in rest] == ["3", "4", "5"]


def test_counters_are_summed_in_a_hash(redis_server: RedisServer) -> None:
    queue = _queue(redis_server)
    queue.publish_counters({"fetched": 3, "skipped:redirect": 1, "backpressure_wait_seconds": 0.5})
    queue.publish_counters({"fetched": 2, "backpressure_wait_seconds": 0.25, "queued": 0})
    counters = queue.counters()
    assert counters["fetched"] == 5 and counters["skipped:redirect"] == 1
    assert counters["backpressure_wait_seconds"] == pytest.approx(0.75)
    assert "queued" not in counters and counters["updated_at"] > 0
    assert Settings.model_validate({}).queue.counters_key == "streamlda:scraper:counters"


def _lose_replies(queue: ArticleQueue, *lost: int) -> list[list[int]]:
    """Make the ``lost``-th try_add calls (1-based) run in Redis, then fail as if the reply was
    lost on the way back; returns the statuses Redis answered to every call."""
    real = queue.try_add
    answered: list[list[int]] = []

    def try_add(*args: Any, **kwargs: Any) -> list[int]:
        statuses = real(*args, **kwargs)
        answered.append(statuses)
        if len(answered) in lost:
            raise redis.ConnectionError("Connection closed by server.")
        return statuses

    queue.try_add = try_add  # type: ignore[method-assign]
    return answered


def _batch_record(queue: ArticleQueue, token: str) -> str:
    return f"{queue.config.dedupe_key}:batch:{token}"


def test_an_add_retried_after_its_reply_was_lost_counts_its_own_entries_as_queued(
    redis_server: RedisServer,
) -> None:
    queue = _queue(redis_server)
    queue.ensure_group()
    assert queue.add(_articles(100, 1)).queued == 1  # an earlier batch
    batch = _articles(1, 10) + _articles(5, 1) + _articles(100, 1)
    token = new_batch_token()
    answered = _lose_replies(queue, 1)
    with pytest.raises(redis.ConnectionError):
        queue.add(batch, fetched_at=7.0, batch=token)
    assert answered == [[1] * 10 + [0, 0]]  # Redis queued the batch; the scraper never heard
    assert redis_server.client().ttl(_batch_record(queue, token)) > 0
    retried = queue.add(batch, fetched_at=7.0, batch=token)  # as RedisRetry calls it again
    assert (retried.queued, retried.duplicates) == (10, 2)  # as if the first reply had arrived
    assert answered[1] == [2] * 10 + [0, 0]
    expected = ["100"] + [str(i) for i in range(1, 11)]
    assert stream_ids(redis_server.client(), queue.stream) == expected  # each exactly once
    assert not redis_server.client().exists(_batch_record(queue, token))  # forgotten once done


def test_the_add_script_counts_its_batch_once_even_when_its_reply_is_lost(
    redis_server: RedisServer,
) -> None:
    queue = _queue(redis_server, stream_high_water=6)
    queue.ensure_group()
    queue.add(_articles(100, 1))  # an earlier batch: queued 1, counted by the script alone
    assert queue.counters() == {"queued": 1}
    batch = _articles(100, 1) + _articles(1, 6) + _articles(1, 1)  # dup, 6 new (5 fit), dup
    token = new_batch_token()
    answered = _lose_replies(queue, 1)
    with pytest.raises(redis.ConnectionError):
        queue.add(batch, batch=token)
    assert answered == [[0] + [1] * 5 + [-1]]
    # Counted with the entries, though the scraper never heard and never published.
    assert queue.counters() == {"queued": 6, "duplicates": 1}
    queue.read("w", 5, block_ms=50)  # room again
    retried = queue.add(batch, batch=token)
    assert answered[1:] == [[0] + [2] * 5 + [1, 0]]
    assert (retried.queued, retried.duplicates) == (6, 2)  # the scraper's own totals
    assert queue.counters() == {"queued": 7, "duplicates": 2}  # the first duplicate once
    assert not redis_server.client().exists(_batch_record(queue, token))


def test_a_retried_add_recognises_what_it_queued_on_both_sides_of_a_backpressure_wait(
    redis_server: RedisServer,
) -> None:
    queue = _queue(redis_server, stream_high_water=5)
    queue.ensure_group()
    batch = _articles(1, 6) + _articles(1, 1) + _articles(7, 1)  # id 1 again at position 6
    token = new_batch_token()
    assert queue.try_add(batch, batch=token) == [1] * 5 + [-1]
    queue.read("w", 5, block_ms=50)  # room again: the add's next attempt goes on
    assert queue.try_add(batch[5:], batch=token, position=5) == [1, 0, 1]  # reply lost
    retried = queue.add(batch, batch=token)
    assert (retried.queued, retried.duplicates, retried.backpressure_waits) == (7, 1, 0)
    assert stream_ids(redis_server.client(), queue.stream) == [str(i) for i in range(1, 8)]


def test_ids_queued_by_another_batch_stay_duplicates_when_an_add_is_retried(
    redis_server: RedisServer,
) -> None:
    queue = _queue(redis_server)
    queue.ensure_group()
    first = queue.add(_articles(1, 5), batch=new_batch_token())
    assert (first.queued, first.duplicates) == (5, 0)
    redis_server.client().sadd(queue.config.dedupe_key, "6")  # queued before batch records
    token = new_batch_token()
    _lose_replies(queue, 1)
    with pytest.raises(redis.ConnectionError):
        queue.add(_articles(1, 8), batch=token)
    retried = queue.add(_articles(1, 8), batch=token)
    assert (retried.queued, retried.duplicates) == (2, 6)  # 1-6 were never this batch's own
    assert stream_ids(redis_server.client(), queue.stream) == ["1", "2", "3", "4", "5", "7", "8"]
    assert queue.add(_articles(7, 3)).duplicates == 2  # and 7, 8 are duplicates for other batches


def _placed(first: int, count: int) -> list[Article]:
    """Articles as a file source gives them: each with the position just past its line."""
    return [
        replace(article, after=Position(offset=100 * i, count=i))
        for i, article in zip(range(first, first + count), _articles(first, count), strict=True)
    ]


def test_a_source_position_moves_with_what_a_batch_handled_and_never_back(
    redis_server: RedisServer,
) -> None:
    queue = _queue(redis_server, stream_high_water=5)
    queue.ensure_group()
    source = "jsonl:/data/a.jsonl:1000:1"
    assert queue.position(source) is None
    # Full after five: the sixth is left for the retry, so the position stops at the fifth.
    assert queue.try_add(_placed(1, 8), source=source) == [1] * 5 + [-1]
    assert queue.position(source) == Position(offset=500, count=5)
    queue.read("w", 5, block_ms=50)
    assert queue.try_add(_placed(6, 3), source=source) == [1, 1, 1]
    assert queue.position(source) == Position(offset=800, count=8)
    # Read again by a scraper behind: re-reads, not duplicates, and the position stays.
    behind = queue.add(_placed(3, 4), source=source)
    assert (behind.queued, behind.duplicates, behind.rereads) == (0, 0, 4)
    assert queue.position(source) == Position(offset=800, count=8)
    # A seen id past the position is the same page met anew: a duplicate.
    again = queue.add(
        [replace(_placed(1, 1)[0], after=Position(offset=900, count=9))], source=source
    )
    assert (again.queued, again.duplicates, again.rereads) == (0, 1, 0)
    assert queue.position(source) == Position(offset=900, count=9)
    # Another source's position is its own; without a source nothing is recorded.
    other = queue.add(_placed(2, 2), source="jsonl:/data/b.jsonl:1000:1")
    assert (other.duplicates, other.rereads) == (2, 0)
    assert queue.add(_placed(20, 1)).queued == 1
    assert queue.position(source) == Position(offset=900, count=9)
    assert stream_ids(redis_server.client(), queue.stream) == [str(i) for i in [*range(1, 9), 20]]


def test_the_queue_reads_its_figures_as_the_api_does(redis_server: RedisServer) -> None:
    """One reader: the queue's length, pending and unread and the scrapers' counters are what
    the API's /stats shows, before the group exists and after."""
    from service.store.pipeline_figures import read_queue, read_scraper_counters

    queue = _queue(redis_server)
    client = queue.client
    queue.try_add(_articles(1, 4))  # no group yet: nothing is pending
    before = read_queue(client, queue.stream, queue.group)
    assert (before.length, before.pending, before.unread) == (4, 0, 4)
    assert (queue.length(), queue.pending(), queue.unread()) == (4, 0, 4)
    queue.ensure_group()
    queue.read("w", 3)
    after = read_queue(client, queue.stream, queue.group)
    assert (after.length, after.pending, after.unread) == (4, 3, 1)
    assert (queue.length(), queue.pending(), queue.unread()) == (4, 3, 1)
    queue.publish_counters({"fetched": 4, "backpressure_wait_seconds": 0.5})
    client.hset(queue.config.counters_key, "not_a_number", "n/a")
    counters = read_scraper_counters(client, queue.config.counters_key)
    assert queue.counters() == counters
    assert counters["fetched"] == 4 and counters["queued"] == 4 and "not_a_number" not in counters
