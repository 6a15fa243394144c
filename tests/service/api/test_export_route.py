"""``GET /admin/export``: an archive of the published model's files, ErrorOut JSON when there is
none to make. (The archive is checked against ``streamlda export``'s files of a model learned
from real articles in tests/service/test_export.py.)"""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

from service.store.published_model import StreamFigures, publish_model
from tests.service.conftest import ADMIN_TOKEN, Published

pytestmark = pytest.mark.slow

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def publish_with_stream(client: redis.Redis, published: Published) -> str:
    """``published``'s model again, with the stream figures a current worker adds; its
    version."""
    k, w = published.beta.shape
    figures = StreamFigures(
        term_frequency=np.arange(1.0, w + 1),
        topic_size=np.full(k, 1 / k),
        doc_lengths=np.array([40, 0, 25]),
        doc_topic=np.array([[0.7, 0.2, 0.1], [1 / 3, 1 / 3, 1 / 3], [0.1, 0.1, 0.8]]),
    )
    return publish_model(
        client, published.beta, published.vocab, docs_seen=3000, gamma=0.1, stream=figures
    )


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
