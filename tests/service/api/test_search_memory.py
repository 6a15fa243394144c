"""A sweep of distinct search pages against a real ``streamlda api`` process cannot fill its
memory: a topic's first articles are kept once, whatever the pages read, and deeper pages are
rendered each time, not kept.

The process serves a published model with 30,000 kept articles over 3 topics (20,000 listed
behind each); 5,000 distinct ``/topics/{k}/articles?limit=100&offset=o`` reads, each a full
page of 100 articles, follow. Its resident memory (/proc) is measured before and after.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import redis

from service.store.published_model import publish_model
from service.store.search import IndexRows
from tests.service.conftest import VOCAB, Published
from tests.support import api_process as api
from tests.support.api_process import status_kib

pytestmark = pytest.mark.slow

ARTICLES, KEPT, TOPICS = 30_000, 2, 3
READS, LIMIT = 5_000, 100
GROWTH_BYTES = 60 * 2**20
TITLE = "List of things numbered {} (disambiguation)"


def many_rows() -> IndexRows:
    """ARTICLES kept articles, each with its two largest of TOPICS shares, titled as
    Wikipedia's are (a few dozen characters)."""
    generator = np.random.default_rng(7)
    theta = generator.dirichlet(np.full(TOPICS, 0.3), size=ARTICLES)
    order = np.argsort(-theta, axis=1, kind="stable")[:, :KEPT]
    return IndexRows(
        refs=[(TITLE.format(i), str(10**6 + i), "wikipedia") for i in range(ARTICLES)],
        topics=order.astype(np.int16),
        shares=np.take_along_axis(theta, order, axis=1).astype(np.float32),
        tokens=generator.integers(50, 5000, size=ARTICLES).astype(np.float32),
        at=np.arange(ARTICLES, dtype=np.int64),
        n_topics=TOPICS,
    )


@pytest.fixture
def api_process(
    redis_client: redis.Redis, published: Published, redis_server: Any, tmp_path: Path
) -> Iterator[tuple[int, str]]:
    """A ``streamlda api`` process serving the many rows: (pid, base URL)."""
    publish_model(redis_client, published.beta, VOCAB, docs_seen=3000, gamma=0.1, index=many_rows())
    with api.api_process(redis_server.url, tmp_path / "api.log", "/topics/0/articles") as started:
        pid, port = started
        yield pid, f"http://127.0.0.1:{port}"


def test_5000_distinct_pages_grow_the_api_by_less_than_60_mb(
    api_process: tuple[int, str],
) -> None:
    pid, base = api_process
    pages = [(o % TOPICS, o) for o in range(READS)]
    with httpx.Client(base_url=base, timeout=30) as client:
        for topic in range(TOPICS):  # each topic's first articles, kept: the steady state
            assert client.get(f"/topics/{topic}/articles?limit={LIMIT}").status_code == 200
        before = status_kib(pid, "VmRSS")
        sizes = []
        for topic, offset in pages:
            answer = client.get(f"/topics/{topic}/articles?limit={LIMIT}&offset={offset}")
            assert answer.status_code == 200, answer.text
            sizes.append(len(answer.content))
            assert len(answer.json()["articles"]) == LIMIT
    grown = (status_kib(pid, "VmRSS") - before) * 1024
    print(f"{READS} distinct pages of {np.mean(sizes) / 1e3:.0f} kB: grew {grown / 2**20:.1f} MiB")
    assert grown < GROWTH_BYTES, f"the API grew by {grown / 2**20:.0f} MiB"
