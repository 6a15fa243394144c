"""Fixtures of the service tests: an API client on a real Redis and a published model.

The Redis server is the shared ``redis_server`` fixture of ``tests/conftest.py``.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import redis
import torch
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from lda.evaluation.drift import topic_drift
from service.api.app import create_app
from service.learn.topic_watch import TopicWatch
from service.settings import Settings
from service.store.perplexity import PerplexityPoint, append_perplexity
from service.store.published_model import publish_model
from service.store.redis_client import connect
from service.store.snapshot import Snapshot, publish_snapshot, ranked, top_words


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def redis_client(redis_server: Any) -> Iterator[redis.Redis]:
    """A client on an emptied database."""
    client = connect(redis_server.url)
    client.flushdb()
    yield client
    client.close()


ADMIN_TOKEN = "s3cret-token"
MAX_INFER_BYTES = 2_000
TOPIC_WORDS = 100


@pytest.fixture
def settings(redis_client: redis.Redis, redis_server: Any) -> Settings:
    return Settings(
        redis_url=redis_server.url,
        admin_token=ADMIN_TOKEN,
        max_infer_bytes=MAX_INFER_BYTES,
        topic_words=TOPIC_WORDS,
        cors_origins=["http://dashboard.example"],
    )


FRESH_TIMEOUT_S = 10.0


class FreshClient(TestClient):
    """A client whose every request first waits for one refresh of the API's view.

    The API serves from memory, refreshed every ``api_refresh_s``; waiting for a refresh that
    began after the test's writes makes each request see them (tests/service/api/test_view.py
    checks the refresh itself).
    """

    def request(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        assert self.app.state.view.wait_fresh(FRESH_TIMEOUT_S), "the view did not refresh"  # type: ignore[attr-defined]
        return super().request(*args, **kwargs)


@pytest.fixture
def api(settings: Settings) -> Iterator[TestClient]:
    with FreshClient(create_app(settings)) as client:
        yield client


# A model whose topic k puts its mass on words 4k..4k+3 (the rest share a little).
VOCAB = [
    "apple", "banana", "cherry", "grape",
    "engine", "piston", "turbine", "valve",
    "sonata", "violin", "cello", "opera",
]  # fmt: skip
K = 3


def model_beta(weights: tuple[float, ...] = (0.4, 0.3, 0.15, 0.12)) -> torch.Tensor:
    """K×W topic-word matrix with clearly separated topics (rows sum to 1)."""
    beta = torch.full((K, len(VOCAB)), 0.01)
    for k in range(K):
        beta[k, 4 * k : 4 * k + 4] = torch.tensor(weights)
    return beta / beta.sum(1, keepdim=True)


def sample_beta() -> torch.Tensor:
    """The current sample beside model_beta's mean: the same topics, each block's order reversed
    (so a test can tell which estimate it was served)."""
    return model_beta((0.12, 0.15, 0.3, 0.4))


@dataclass
class Published:
    beta: torch.Tensor  # beta_mean, the topics served
    sample: torch.Tensor  # the current sample
    vocab: list[str]
    snapshot: Snapshot
    points: list[PerplexityPoint]
    version: str


@pytest.fixture
def published(redis_client: redis.Redis) -> Published:
    """What the worker publishes after a few updates: snapshot, 3 perplexity points, model."""
    beta, sample = model_beta(), sample_beta()
    now = time.time()
    snapshot = Snapshot(
        docs_seen=3000,
        updated_at=now,
        sampler="sgrld",
        step_size=0.005,
        device="cpu",
        vocab_size=len(VOCAB),
        topics=top_words(beta, VOCAB, TOPIC_WORDS),
        sample_topics=top_words(sample, VOCAB, TOPIC_WORDS),
        docs_per_s=12.5,
        tokens_per_s=4200.0,
        counters={"updates": 60, "nonfinite_restores": 0},
    )
    publish_snapshot(redis_client, snapshot)
    points = [
        PerplexityPoint(docs_seen=d, perplexity=p, perplexity_avg=a, at=now - 10 + i)
        for i, (d, p, a) in enumerate([(1000, 3000.0, 3000.0), (2000, 2500.0, 2600.0),
                                       (3000, 2300.0, 2400.0)])
    ]  # fmt: skip
    for point in points:
        append_perplexity(redis_client, point, keep=100)
    version = publish_model(redis_client, beta, VOCAB, docs_seen=3000, gamma=0.1)
    return Published(beta, sample, VOCAB, snapshot, points, version)


@pytest.fixture
def down_api(settings: Settings) -> Iterator[TestClient]:
    """An API whose Redis URL points at a port where nothing listens."""
    dead = settings.updated(redis_url=f"redis://127.0.0.1:{free_port()}/0")
    with FreshClient(create_app(dead)) as client:
        yield client


START_TIMEOUT_S = 10.0


@contextmanager
def serve(app: FastAPI, http: str = "auto") -> Iterator[str]:
    """``app`` served by uvicorn on 127.0.0.1 in a thread (real HTTP, uvicorn's protocol
    ``http``); yields its base URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", http=http)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        assert thread.is_alive(), "uvicorn exited"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(timeout=START_TIMEOUT_S)


@pytest.fixture
def served(settings: Settings) -> Iterator[str]:
    """The app served over real HTTP; yields its base URL."""
    with serve(create_app(settings)) as url:
        yield url


COHERENCE = [0.12, float("nan"), 0.31]  # per topic; topic 1: no held-out document has its words


def watched_topics(published: Published) -> TopicWatch:
    """A watch fed as the worker feeds it: samples after steps, then two evaluations (the
    second with topics 0 and 2 swapped and nudged, so matching and drift are exercised)."""
    watch = TopicWatch(samples=4)
    for i in range(6):
        assert watch.window is not None
        watch.window.add(None, model_beta((0.4 - 0.01 * i, 0.3, 0.15 + 0.01 * i, 0.12)))
    first = published.beta
    watch.scored(1000, {"coherence": [0.1, 0.2, 0.3], "drift": None, "matched": None})
    second = first[[2, 1, 0]] * 0.7 + 0.3 * first  # labels 0 and 2 swapped, mostly
    drift = topic_drift(first, second)
    topics = {
        "coherence": COHERENCE,
        "drift": drift.divergence.tolist(),
        "matched": drift.matched.tolist(),
    }
    watch.scored(2000, topics)
    return watch


def watch_fields(watch: TopicWatch, published: Published) -> dict[str, Any]:
    """The snapshot fields the worker would publish from ``watch`` for the served topics."""
    return watch.fields(ranked(published.beta, TOPIC_WORDS)[1])
