"""A worker that stops beating shows as not responding, with docs/s 0, in /stats and
/metrics; once its heartbeat returns it shows as learning again with its rates."""

from __future__ import annotations

import time

import pytest
import redis

from service.api.app import create_app
from service.settings import Settings
from service.store.heartbeat import beat
from tests.service.conftest import FreshClient, Published

pytestmark = pytest.mark.slow  # a real Redis behind the app

SILENT_AFTER_S = 2.0


def test_a_silent_worker_is_not_responding_until_it_beats_again(
    settings: Settings, redis_client: redis.Redis, published: Published
) -> None:
    bounded = settings.updated(worker_silent_after_s=SILENT_AFTER_S)
    with FreshClient(create_app(bounded)) as api:
        stats = api.get("/stats").json()
        assert stats["worker_state"] == "learning" and stats["docs_per_s"] == 12.5
        assert "streamlda_worker_responding 1.0" in api.get("/metrics").text

        last = time.time() - 3 * SILENT_AFTER_S  # killed: its last beat, long enough ago
        beat(redis_client, at=last)
        stats = api.get("/stats").json()
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(last))
        assert stats["worker_state"] == f"not responding since {since}"
        assert stats["docs_per_s"] == stats["tokens_per_s"] == 0
        assert stats["fresh_docs_per_s"] == stats["revisit_docs_per_s"] == 0
        assert set(stats["rank_docs_per_s"]) <= {0}
        assert stats["docs_seen"] == published.snapshot.docs_seen  # what it learned stays
        metrics = api.get("/metrics").text
        assert "streamlda_worker_responding 0.0" in metrics
        assert "streamlda_docs_per_second 0.0" in metrics

        beat(redis_client)  # restarted: beating again
        stats = api.get("/stats").json()
        assert stats["worker_state"] == "learning" and stats["docs_per_s"] == 12.5
