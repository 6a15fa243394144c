"""``/readyz`` is open to anyone: it says ready or not and why in words, never where Redis is or
as whom it connects; the operator's details (where, the client's error) need the admin token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.settings import Settings
from tests.service.conftest import ADMIN_TOKEN, FreshClient, Published
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow

USER = "streamlda-operator"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture
def refused_api(settings: Settings, redis_server: RedisServer) -> Iterator[TestClient]:
    """An API whose user and password the Redis server refuses."""
    url = f"redis://{USER}:wrong-password@127.0.0.1:{redis_server.port}/0"
    with FreshClient(create_app(settings.updated(redis_url=url))) as client:
        yield client


def port_of(client: TestClient) -> str:
    url: str = client.app.state.redis_url  # type: ignore[attr-defined]
    return url.rsplit(":", 1)[1].split("/")[0]


@pytest.mark.parametrize("which", ["down_api", "refused_api"])
def test_not_ready_says_why_in_words_and_nothing_of_where(
    which: str, request: pytest.FixtureRequest
) -> None:
    client: TestClient = request.getfixturevalue(which)
    response = client.get("/readyz")
    assert response.status_code == 503
    detail = response.json()["detail"]
    assert detail.startswith("not ready: Redis ")
    for secret in ("127.0.0.1", port_of(client), USER, "wrong-password", "redis://"):
        assert secret not in response.text, secret


def test_the_admin_token_shows_where_and_why(down_api: TestClient) -> None:
    public = down_api.get("/readyz").json()["detail"]
    detailed = down_api.get("/readyz", headers=ADMIN)
    assert detailed.status_code == 503
    detail = detailed.json()["detail"]
    assert detail.startswith(public) and f"127.0.0.1:{port_of(down_api)}" in detail
    wrong = down_api.get("/readyz", headers={"Authorization": "Bearer nope"}).json()["detail"]
    assert wrong == public


def test_ready_says_so(api: TestClient, published: Published, redis_client: redis.Redis) -> None:
    response = api.get("/readyz")
    assert response.status_code == 200
    assert response.json()["status"] == "ready"


def test_no_snapshot_yet_is_said_in_words(api: TestClient, redis_client: redis.Redis) -> None:
    response = api.get("/readyz")
    assert response.status_code == 503
    assert response.json()["detail"] == (
        "not ready: no topics yet: the worker has not published its first snapshot"
    )
