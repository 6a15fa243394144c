"""Bad input and outages: always a JSON ``detail`` message with a 4xx (or 503), never a 500."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.settings import Settings
from tests.service.conftest import Published, serve

pytestmark = pytest.mark.slow


def detail(response: httpx.Response, status: int) -> str:
    """The response's message, after checking its status and JSON shape."""
    assert response.status_code == status, response.text
    message = response.json()["detail"]
    assert isinstance(message, str) and message
    return message


@pytest.mark.parametrize("top", ["0", "-1", "101", "1000000000000", "ten", "1.5"])
def test_bad_top_is_422(api: TestClient, published: Published, top: str) -> None:
    assert "top" in detail(api.get("/topics", params={"top": top}), 422)
    assert "top" in detail(api.get("/topics/0", params={"top": top}), 422)


@pytest.mark.parametrize("topic_id", ["3", "999999999999999999"])
def test_unknown_topic_is_404(api: TestClient, published: Published, topic_id: str) -> None:
    assert "topic ids are 0 to 2" in detail(api.get(f"/topics/{topic_id}"), 404)


@pytest.mark.parametrize("topic_id", ["abc", "-1", "99999999999999999999"])
def test_a_topic_id_outside_the_schema_is_422(
    api: TestClient, published: Published, topic_id: str
) -> None:
    """The schema's id is a whole number from 0 to 10^18 - 1: anything else is no id at all."""
    assert "topic_id" in detail(api.get(f"/topics/{topic_id}"), 422)


def test_bad_since_is_422(api: TestClient) -> None:
    assert "since" in detail(api.get("/perplexity", params={"since": "-5"}), 422)
    assert "since" in detail(api.get("/perplexity", params={"since": "x"}), 422)


def test_no_snapshot_yet_is_503(api: TestClient) -> None:
    assert "first snapshot" in detail(api.get("/topics"), 503)
    assert "first snapshot" in detail(api.get("/topics/0"), 503)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"text": "apple', "malformed JSON"),
        (b"not json at all", "malformed JSON"),
        (b"{}", "text: Field required"),
        (b'{"text": 5}', "text"),
        (b'{"text": ""}', "text"),
        (b"[1, 2]", "invalid request"),
    ],
)
def test_bad_infer_body_is_422(
    api: TestClient, published: Published, body: bytes, expected: str
) -> None:
    response = api.post("/infer", content=body, headers={"Content-Type": "application/json"})
    assert expected in detail(response, 422)


def test_infer_before_a_model_is_503(api: TestClient) -> None:
    assert "no model yet" in detail(api.post("/infer", json={"text": "apple"}), 503)


def test_oversized_infer_is_413_by_content_length(
    api: TestClient, published: Published, settings: Settings
) -> None:
    text = "apple " * settings.api.max_infer_bytes
    assert "limit" in detail(api.post("/infer", json={"text": text}), 413)


def test_oversized_infer_is_413_without_content_length(
    api: TestClient, published: Published, settings
) -> None:
    def chunks() -> Iterator[bytes]:  # chunked transfer: no Content-Length to check up front
        yield b'{"text": "'
        for _ in range(2 * settings.api.max_infer_bytes // 100):
            yield b"apple " * 20

    response = api.post("/infer", content=chunks(), headers={"Content-Type": "application/json"})
    assert "limit" in detail(response, 413)


def test_body_at_the_limit_is_accepted(
    api: TestClient, published: Published, settings: Settings
) -> None:
    prefix, suffix = b'{"text": "', b'"}'
    filler = b"a" * (settings.api.max_infer_bytes - len(prefix) - len(suffix))
    response = api.post(
        "/infer", content=prefix + filler + suffix, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic czNjcmV0LXRva2Vu"}],
)
def test_admin_needs_the_right_token(api: TestClient, headers: dict[str, str]) -> None:
    for action in ("pause", "resume", "checkpoint"):
        response = api.post(f"/admin/{action}", headers=headers)
        assert "Bearer" in detail(response, 401)
        assert response.headers["www-authenticate"] == "Bearer"
    assert api.get("/stats").json()["paused"] is False


def test_admin_is_off_without_a_token(settings: Settings) -> None:
    with TestClient(create_app(settings.updated(admin_token=None))) as api:
        response = api.post("/admin/pause", headers={"Authorization": "Bearer anything"})
        assert "STREAMLDA_ADMIN_TOKEN" in detail(response, 404)


def test_unknown_route_and_method(api: TestClient) -> None:
    detail(api.get("/nope"), 404)
    detail(api.get("/infer"), 405)


def test_redis_down_is_503_json(down_api: TestClient) -> None:
    """503 with a reason, and nothing of where Redis is: /readyz and the reads are public."""
    port = down_api.app.state.redis_url.rsplit(":", 1)[1].split("/")[0]  # type: ignore[attr-defined]
    answers = [down_api.get(path) for path in ("/topics", "/topics/0", "/perplexity", "/stats")]
    for response in answers:
        assert "Redis is unreachable" in detail(response, 503)
    answers.append(down_api.post("/infer", json={"text": "apple"}))
    answers.append(down_api.get("/readyz"))
    assert "Redis" in detail(answers[-2], 503) and "Redis" in detail(answers[-1], 503)
    for response in answers:
        assert "127.0.0.1" not in response.text and port not in response.text
    assert down_api.get("/healthz").status_code == 200


def test_redis_password_is_not_shown(settings: Settings) -> None:
    from service.redact import redact

    assert redact("redis://user:hunter2@db:6379/0") == "redis://user:***@db:6379/0"
    assert redact("redis://db:6379/0") == "redis://db:6379/0"


def test_body_not_utf8_is_400_json(api: TestClient, published: Published) -> None:
    for path in ("/infer", "/infer/batch"):
        response = api.post(
            path, content=b'{"text": "caf\xe9"}', headers={"Content-Type": "application/json"}
        )
        assert "UTF-8" in detail(response, 400)
        assert response.headers["content-type"] == "application/json"


def test_malformed_http_is_400_json(settings: Settings) -> None:
    """uvicorn's own answer to a request it cannot parse is the API's JSON too."""
    from service.api.http.protocol import HTTP

    with serve(create_app(settings), http=HTTP) as base:
        parts = urlsplit(base)
        with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
            sock.sendall(b"GET /topics HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n")
            raw = b""
            while chunk := sock.recv(4096):
                raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert b"content-type: application/json" in head.lower()
    assert "malformed HTTP request" in json.loads(body)["detail"]


def test_unexpected_failure_is_500_json(settings: Settings) -> None:
    app = create_app(settings)

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("a bug")

    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/boom")
    assert "internal error" in detail(response, 500)
    assert "a bug" not in response.text


def test_every_infer_error_is_documented(api: TestClient) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    for path in ("/infer", "/infer/batch"):
        responses = paths[path]["post"]["responses"]
        for code in ("400", "408", "413", "503"):
            schema = responses[code]["content"]["application/json"]["schema"]["$ref"]
            assert schema.endswith("/ErrorOut"), (path, code)
        assert "UTF-8" in responses["400"]["description"]
