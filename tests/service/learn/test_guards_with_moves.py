"""The live job's guards while topics really move: a quiet worker still revisits up to its ratio
and idles, search still serves the kept articles under the topics' numbers, and a seeded topic
keeps its seeds and its number. The shaper's own proposals, tried every other minibatch and
always kept (a test cannot wait for the data to ask for moves); the rest is the worker's."""

from __future__ import annotations

import json
import threading
import zlib
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lda.shaping import KINDS, ShapingConfig, TopicShaper
from service.api.app import create_app
from service.ingest.queue import ArticleQueue, QueueConfig
from service.keys import reservoir_key
from service.learn.command import build_worker
from service.learn.heldout_store import HeldoutStore
from service.learn.search.part import Search
from service.learn.worker import Worker
from service.settings import Settings
from service.store.redis_client import connect
from service.store.snapshot import read_snapshot
from service.store.topic_seeds import TopicSeeds, read_topic_seeds, set_topic_seeds
from tests.service.learn.guards import kept_rows, revisited_up_to_the_ratio
from tests.service.learn.helpers import (
    HELDOUT,
    articles,
    drained,
    queue_articles,
    stopped,
    wait_until,
    worker_settings,
)
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow  # a real Redis, a worker in this process, the API

MAX_TOPICS = 10  # twice the helpers' K = 5: room for births and splits
# A decision every other minibatch from the second on, of every kind.
MOVING = ShapingConfig(
    every=2,
    start_after=2,
    window=2,
    kinds=KINDS,
    births=2,
    most=2,
    dead_share=0.9,
)
RATIO = 2.0


def _moving(shaper: TopicShaper) -> None:
    """The shaper decides on its own proposals often, and keeps every one."""
    shaper.config = MOVING
    shaper.accept = lambda kind, gain: True


def started_moving(settings: Settings) -> tuple[Worker, threading.Event, threading.Thread]:
    """A worker of ``settings`` (max_topics given) whose topics move, running in a thread of
    this process until stopped: (the worker, its stop event, its thread)."""
    stop = threading.Event()
    worker = build_worker(settings, connect(settings.store), stop)
    assert worker.session.shaper is not None
    _moving(worker.session.shaper)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    return worker, stop, thread


def moved(worker: Worker) -> list[str]:
    """The kinds of the moves the worker's learner kept (each test asserts some: none would
    make it vacuous)."""
    model = worker.model
    assert model is not None
    return [m.kind for m in model.topic_ids.moves]


def trials(worker: Worker) -> dict[str, int]:
    """The shaper's decisions so far ("split scored", "split kept", ...)."""
    assert worker.session.shaper is not None
    return dict(worker.session.shaper.decisions)


# --- learning while quiet -------------------------------------------------------------------


def test_a_quiet_stream_is_revisited_up_to_the_ratio_then_idles_while_topics_move(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    settings = worker_settings(
        redis_server.url,
        tmp_path / "data",
        revisit=True,
        revisit_ratio=RATIO,
        checkpoint_idle_s=0.5,
        max_topics=MAX_TOPICS,
        fixed_topics=False,
    )
    client = connect(settings.store)
    queue_articles(client, 0, 120)
    worker, stop, thread = started_moving(settings)
    try:

        def idle() -> bool:
            snap = read_snapshot(client)
            return drained(client) and snap is not None and snap.idle_since is not None

        wait_until(idle, "the worker to learn, revisit up to the ratio and go idle")
        assert moved(worker), trials(worker)
        trained = revisited_up_to_the_ratio(worker, client, settings, 120, RATIO)
        model = worker.model
        assert model is not None
        with TestClient(create_app(settings)) as api:
            assert api.app.state.view.wait_fresh(10)  # type: ignore[attr-defined]
            stats = api.get("/stats").json()
            assert stats["worker_state"].startswith("idle, queue empty since ")
            assert stats["reservoir_articles"] == trained
            assert stats["fresh_docs_per_s"] == stats["revisit_docs_per_s"] == 0

        # Fresh articles are learned (a trial among them), reopen the budget of revisits, and
        # the worker idles again once it is spent.
        revisited = model.revisited_docs
        tried = sum(trials(worker).values())
        queue_articles(client, 120, 30)
        wait_until(lambda: model.docs_seen > trained, "the fresh articles to be learned")
        wait_until(lambda: model.revisited_docs > revisited, "revisits to begin again")
        wait_until(idle, "the worker to go idle again")
        assert sum(trials(worker).values()) > tried
        trained = model.docs_seen
        assert trained == 150 - HELDOUT - worker.counters["empty_docs"]
        batch = settings.model.batch_size
        assert RATIO * trained <= model.revisited_docs < RATIO * trained + batch
    finally:
        stopped(stop, thread)

    # No held-out article was ever offered, so none is ever revisited.
    held = set(_held_texts(settings))
    heldout = set(HeldoutStore(client, settings.queue.heldout_key).texts())
    assert len(heldout) == HELDOUT and not held & heldout
    assert held <= {a.text for a in articles(0, 150)}


def _held_texts(settings: Settings) -> list[str]:
    """The articles the reservoir holds in Redis, as text."""
    texts = []
    for blob in connect(settings.store).hgetall(reservoir_key(0)).values():
        assert isinstance(blob, bytes)
        texts.append(zlib.decompress(blob).decode("utf-8"))
    return texts


# --- search ---------------------------------------------------------------------------------

COUNT = 120


def refolded(worker: Worker) -> bool:
    """Every kept row refolded under a published model (the thread has caught up)."""
    search = worker.parts.of(Search)
    index = None if search is None else search.now
    return index is not None and bool(index.held.any()) and bool(index.folded[index.held].all())


def test_kept_articles_are_indexed_refolded_published_and_served_while_topics_move(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    settings = worker_settings(
        redis_server.url,
        tmp_path / "data",
        revisit=True,
        reservoir_size=500,
        max_topics=MAX_TOPICS,
        fixed_topics=False,
    )
    client = connect(settings.store)
    queue_articles(client, 0, COUNT)
    worker, stop, thread = started_moving(settings)
    wait_until(lambda: drained(client) and refolded(worker), "the stream learned and refolded")
    stopped(stop, thread)
    assert moved(worker), trials(worker)
    assert worker.model is not None
    ids = worker.model.topic_ids

    model, stream, kept = kept_rows(client, settings, COUNT)
    assert model.topic_ids is not None and list(model.topic_ids) == ids.live_ids()

    with TestClient(create_app(settings)) as api:
        some = next(iter(kept))
        similar = api.post("/similar", json={"text": stream[some].text, "limit": 5})
        assert similar.status_code == 200, similar.text
        assert {a["id"] for a in similar.json()["articles"]} <= kept
        assert {t["id"] for t in similar.json()["topics"]} <= set(ids.live_ids())
        assert api.get(f"/articles/{some}/similar").status_code == 200
        # Each live topic's articles under its number; every number gone answers 410.
        answers = [api.get(f"/topics/{n}/articles") for n in ids.live_ids()]
        assert [a.status_code for a in answers] == [200] * len(answers)
        assert [a.json()["topic"] for a in answers] == ids.live_ids()
        assert sum(a.json()["total"] for a in answers) >= len(kept)  # each under one at least
        assert {x["id"] for a in answers for x in a.json()["articles"]} <= kept
        assert ids.gone, moved(worker)  # numbers retired or merged away
        for number in ids.gone:
            assert api.get(f"/topics/{number}/articles").status_code == 410
        assert api.get(f"/topics/{ids.next_id}/articles").status_code == 404

    # A restart goes on with the checkpoint's rows.
    search = worker.parts.of(Search)
    before = None if search is None else search.now
    assert before is not None
    again, stop, thread = started_moving(settings)
    resumed = again.parts.of(Search)
    assert resumed is not None
    wait_until(lambda: resumed.now is not None, "the worker to resume")
    stopped(stop, thread)
    after = resumed.now
    assert after is not None and after.refs == before.refs


# --- seeds ----------------------------------------------------------------------------------

SEEDED = 150
NEW_FROM = 100  # the articles from here on name a city the first ones did not
TOPIC = 2
TOP_WORDS = 20  # the worker's topic_words


def _queue_seeded(settings: Settings, start: int, count: int) -> None:
    queue = ArticleQueue(connect(settings.store), settings.part(QueueConfig))
    queue.ensure_group()
    stream = articles(start, count)
    later = [replace(a, text=a.text + " Kraków.") if start + i >= NEW_FROM else a
             for i, a in enumerate(stream)]  # fmt: skip
    assert queue.add(later).queued == count


def _in_effect(worker: Worker, word: str, number: int = TOPIC) -> bool:
    """``word`` seeds the slot topic ``number`` lives in."""
    model, vocab = worker.model, worker.session.vocabulary
    slot = None if model is None else model.topic_ids.slot_of(number)
    if model is None or vocab is None or slot is None or word not in vocab.index:
        return False
    return (slot, vocab.index[word]) in {(k, w) for k, w, _ in model.seeds.triples()}


def _kept_whole(worker: Worker, number: int) -> None:
    """Topic ``number`` is live, was never merged away or retired, and its seed words in the
    vocabulary are among its top words."""
    model, vocab = worker.model, worker.session.vocabulary
    assert model is not None and vocab is not None
    ids = model.topic_ids
    assert ids.status(number).state == "live" and number not in ids.gone
    for move in ids.moves:
        assert not (move.kind == "retire" and number in move.topics), move
        assert not (move.kind == "merge" and move.topics[1] == number), move
    slot = ids.slot_of(number)
    assert slot is not None
    top, _ = model.top_words(TOP_WORDS)
    words = {vocab.words[w] for w in top[slot].tolist()}
    seeds = {w for w in worker.seeds.topics[number].words if w in vocab.index}
    assert seeds and seeds <= words, (number, seeds, words)


def test_a_seeded_topic_keeps_its_seeds_and_number_while_topics_move(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    seeds_file = tmp_path / "seeds.json"
    seeds_file.write_text(json.dumps({str(TOPIC): ["Kraków", "the"]}))
    settings = worker_settings(
        redis_server.url,
        tmp_path / "data",
        vocab_refresh=40,
        vocab_counted=100_000,
        seeds=seeds_file,
        seed_strength=3.0,
        max_topics=MAX_TOPICS,
        fixed_topics=False,
    )
    client = connect(settings.store)
    _queue_seeded(settings, 0, SEEDED)

    def refreshed() -> bool:
        snap = read_snapshot(client)
        return drained(client) and snap is not None and snap.counters["vocab_refreshes"] >= 1

    worker, stop, thread = started_moving(settings)
    try:
        wait_until(refreshed, "the stream learned and the words refreshed")
    finally:
        stopped(stop, thread)
    assert moved(worker), trials(worker)
    assert _in_effect(worker, "kraków")  # pending at first: the refresh brought it in
    assert worker.seeds.topics == {TOPIC: TopicSeeds(("kraków", "the"), 3.0)}
    _kept_whole(worker, TOPIC)
    snap = read_snapshot(client)
    assert snap is not None and snap.topic_seeds is not None
    listed = snap.position(TOPIC)  # the snapshot lists the live topics only
    assert listed is not None and snap.number(listed) == TOPIC
    assert snap.topic_seeds[listed] == ["kraków", "the"]
    assert read_topic_seeds(client)[1] == worker.seeds.topics
    assert worker.model is not None
    made = worker.model.topic_ids.moves_total

    # A restart without the file, more articles and more moves: the seeds stay on the number.
    again = worker_settings(
        redis_server.url,
        tmp_path / "data",
        vocab_refresh=40,
        vocab_counted=100_000,
        max_topics=MAX_TOPICS,
        fixed_topics=False,
    )
    resumed, stop, thread = started_moving(again)
    try:

        def learned_and_moved() -> bool:
            model = resumed.model
            return (
                drained(client)
                and model is not None
                and model.topic_ids.moves_total > made
                and _in_effect(resumed, "kraków")
            )

        _queue_seeded(again, SEEDED, 40)
        wait_until(learned_and_moved, "the new articles learned, with moves")
    finally:
        stopped(stop, thread)
    assert resumed.seeds.topics == {TOPIC: TopicSeeds(("kraków", "the"), 3.0)}
    _kept_whole(resumed, TOPIC)

    # An operator seeds another live topic: in effect at the worker's next steps.
    assert resumed.model is not None
    other = next(n for n in resumed.model.topic_ids.live_ids() if n != TOPIC)
    changed, stop, thread = started_moving(again)
    try:
        wait_until(lambda: changed.model is not None, "the worker to resume")
        set_topic_seeds(client, other, TopicSeeds(("kraków",), 5.0))
        _queue_seeded(again, SEEDED + 40, 20)
        wait_until(lambda: drained(client) and _in_effect(changed, "kraków", other), "the change")
    finally:
        stopped(stop, thread)
    assert set(changed.seeds.topics) == {TOPIC, other}
    _kept_whole(changed, TOPIC)
    assert changed.model is not None and changed.model.topic_ids.status(other).state == "live"
