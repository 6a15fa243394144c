"""``GET /admin/export``: an archive of the published model's files, ErrorOut JSON when there is
none to make. (The archive is checked against ``streamlda export``'s files of a model learned
from real articles in tests/service/test_export.py.)"""

from __future__ import annotations

import io
import tarfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.api.infer.admission import ConcurrencyLimitMiddleware
from service.api.routes import export as export_route
from service.settings import Settings
from service.store.export import Export, tar_gz
from service.store.published_model import StreamFigures, publish_model
from tests.service.api.test_search import index_rows
from tests.service.conftest import ADMIN_TOKEN, Published, serve

pytestmark = pytest.mark.slow

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
WAIT_S = 10.0


def publish_with_stream(client: redis.Redis, published: Published) -> str:
    """``published``'s model again, with the stream figures and the kept articles a current
    worker adds; its version."""
    k, w = published.beta.shape
    figures = StreamFigures(
        term_frequency=np.arange(1.0, w + 1),
        topic_size=np.full(k, 1 / k),
        doc_lengths=np.array([40, 0, 25]),
        doc_topic=np.array([[0.7, 0.2, 0.1], [1 / 3, 1 / 3, 1 / 3], [0.1, 0.1, 0.8]]),
    )
    return publish_model(
        client, published.beta, published.vocab, docs_seen=3000, gamma=0.1, stream=figures,
        index=index_rows(),
    )  # fmt: skip


def export_limiter(app: Any) -> ConcurrencyLimitMiddleware:
    """The app's cap on exports (built when the server started)."""
    node = app.middleware_stack
    while not (isinstance(node, ConcurrencyLimitMiddleware) and export_route.PATH in node.paths):
        node = node.app
    return node


def test_export_needs_the_admin_token(api: TestClient) -> None:
    response = api.get("/admin/export")
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/json"
    assert "Bearer" in response.json()["detail"]


def test_export_before_any_model_is_a_503_saying_so(api: TestClient) -> None:
    response = api.get("/admin/export", headers=AUTH)
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "detail": "no model yet: the worker has not published its first model"
    }


def test_export_of_a_model_from_an_older_worker_is_a_503_saying_why(
    api: TestClient, published: Published
) -> None:
    response = api.get("/admin/export", headers=AUTH)
    assert response.status_code == 503
    assert "no stream figures" in response.json()["detail"]


def test_export_streams_a_tar_gz_of_the_files_in_one_folder(
    api: TestClient, redis_client: redis.Redis, published: Published
) -> None:
    version = publish_with_stream(redis_client, published)
    response = api.get("/admin/export", headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/gzip"
    folder = f"streamlda-export-{version[:12]}"
    assert response.headers["content-disposition"] == f'attachment; filename="{folder}.tar.gz"'
    with tarfile.open(fileobj=io.BytesIO(response.content), mode="r:gz") as tar:
        names = tar.getnames()
    assert f"{folder}/pyldavis.json" in names and f"{folder}/manifest.json" in names


def test_one_export_builds_at_a_time(
    settings: Settings,
    redis_client: redis.Redis,
    published: Published,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While one export streams, another gets 503 with Retry-After at once; after it, the next
    is served again. The first is held mid-stream by a stand-in for a long build."""
    publish_with_stream(redis_client, published)
    release = threading.Event()

    def slow_tar_gz(made: Export) -> Iterator[bytes]:
        yield b"\x1f\x8b"  # the first bytes are out: the export is being built
        release.wait(WAIT_S)
        yield from tar_gz(made)

    monkeypatch.setattr(export_route, "tar_gz", slow_tar_gz)
    app = create_app(settings)
    with serve(app) as base, httpx.Client(base_url=base, timeout=WAIT_S) as http:
        with http.stream("GET", "/admin/export", headers=AUTH) as first:
            assert first.status_code == 200
            chunks = first.iter_raw()
            next(chunks)
            start = time.monotonic()
            busy = http.get("/admin/export", headers=AUTH)
            assert time.monotonic() - start < 1.0
            assert busy.status_code == 503, busy.text
            assert busy.headers["retry-after"] == str(export_route.RETRY_AFTER_S)
            assert "export" in busy.json()["detail"]
            assert http.get("/admin/export").status_code == 401  # the token is checked first
            release.set()
            rest = b"".join(chunks)
        assert rest  # the first export went on to the end
        deadline = time.monotonic() + WAIT_S
        while export_limiter(app).in_progress > 0:  # freed once its response is sent
            assert time.monotonic() < deadline, "the export's slot was never freed"
            time.sleep(0.01)
        again = http.get("/admin/export", headers=AUTH)
        assert again.status_code == 200, again.text
