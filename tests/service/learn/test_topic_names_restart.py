"""A topic's name outlives every process: set through the admin API, it is served again after
the API, the worker and Redis (from its append-only file) all restart, on the same topic."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.learn.command import build_worker
from service.settings import Settings
from service.store.perplexity import read_perplexity
from service.store.redis_client import connect
from service.store.snapshot import read_snapshot
from tests.service.conftest import ADMIN_TOKEN
from tests.service.learn.helpers import drained, queue_articles, wait_until, worker_settings
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow  # a real Redis restarted, a worker in this process, the API

NAME = "Trains, ships and Łódź — 鉄道"
TOPIC = 2


def learning(settings: Settings) -> tuple[threading.Event, threading.Thread]:
    stop = threading.Event()
    thread = threading.Thread(
        target=build_worker(settings, connect(settings.store), stop).run, daemon=True
    )
    thread.start()
    return stop, thread


def stopped(stop: threading.Event, thread: threading.Thread) -> None:
    stop.set()
    thread.join(60)
    assert not thread.is_alive()


def top_words(body: dict[str, Any]) -> set[str]:
    return {w["word"] for w in body["words"][:10]}


def test_a_name_survives_restarts_of_the_api_the_worker_and_redis(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    settings = worker_settings(redis_server.url, tmp_path / "data", admin_token=ADMIN_TOKEN)
    client = connect(settings.store)
    queue_articles(client, 0, 150)
    stop, thread = learning(settings)
    wait_until(
        lambda: drained(client) and len(read_perplexity(client)) >= 1,
        "the worker to learn the stream and score it",
    )
    stopped(stop, thread)
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(settings)) as api:
        named = api.put(f"/admin/topics/{TOPIC}/name", json={"name": NAME}, headers=auth)
        assert named.status_code == 200, named.text
        before = api.get(f"/topics/{TOPIC}").json()
    assert before["name"] == NAME

    redis_server.stop()  # SIGTERM: Redis writes its append-only file out
    redis_server.start()
    client = connect(settings.store)
    snapshot = read_snapshot(client)
    assert snapshot is not None
    docs = snapshot.docs_seen
    queue_articles(client, 150, 40)  # the resumed worker learns on
    stop, thread = learning(settings)
    try:
        wait_until(
            lambda: (
                drained(client) and (s := read_snapshot(client)) is not None and s.docs_seen > docs
            ),
            "the resumed worker to learn more",
        )
    finally:
        stopped(stop, thread)
    with TestClient(create_app(settings)) as api:
        after = api.get(f"/topics/{TOPIC}").json()
        listed = api.get("/topics").json()["topics"]
    assert after["name"] == NAME
    assert [t["name"] for t in listed].count(NAME) == 1
    # The same topic: most of its ten top words are those it had when it was named.
    assert len(top_words(before) & top_words(after)) >= 7
