"""Every body is bounded: admin routes refuse a request without the token from its headers, never
reading its body; every route has a body limit; /infer/batch takes at most max_infer_texts texts.

The app is driven in-process at the ASGI level, so a test sees exactly which bytes of a body the
app asked for. Nothing here needs Redis: every request is refused before it would reach it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.api.http.body_limits import SEED_WORD_CHARS, small_body_limit
from service.settings import Settings

TOKEN = "s3cret-token"
UNREACHABLE = "redis://127.0.0.1:1/0"  # never contacted: the app connects on first use
NAME = "/admin/topics/0/name"
HUGE = 200_000_000


def app_with(**settings: Any) -> FastAPI:
    return create_app(Settings(redis_url=UNREACHABLE, **settings))


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    read: int = 0  # body bytes the app asked for
    reads: int = 0  # calls of receive()
    sent: list[bytes] = field(default_factory=list)

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    app: FastAPI,
    method: str,
    path: str,
    *,
    headers: Iterable[tuple[str, str]] = (),
    chunks: Iterable[bytes] = (),
) -> Answer:
    """One HTTP request through the app's whole middleware stack; the body comes in ``chunks``,
    each handed over only when the app asks for it."""
    pending = iter(chunks)
    answer = Answer(0, {}, b"")

    async def receive() -> dict[str, Any]:
        answer.reads += 1
        chunk = next(pending, None)
        if chunk is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        answer.read += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer.status = message["status"]
            answer.headers = {k.decode().lower(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            answer.body += message.get("body", b"")

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers],
        "client": ("127.0.0.1", 1234),
        "server": ("127.0.0.1", 8000),
    }
    asyncio.run(app(scope, receive, send))
    return answer


def endless(size: int = 1 << 20) -> Iterable[bytes]:
    """A body that never ends, in ``size``-byte chunks."""
    chunk = b"a" * size
    while True:
        yield chunk


def bearer(token: str) -> tuple[str, str]:
    return ("Authorization", f"Bearer {token}")


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_admin_off_refuses_without_reading_the_body(declared: bool) -> None:
    length = ("Content-Length", str(HUGE)) if declared else ("Transfer-Encoding", "chunked")
    answer = call(app_with(), "PUT", NAME, headers=[length], chunks=endless())
    assert answer.status == 404 and "STREAMLDA_ADMIN_TOKEN" in answer.json()["detail"]
    assert answer.reads == 0 and answer.read == 0
    assert answer.headers["connection"] == "close"


@pytest.mark.parametrize(
    ("method", "path"),
    [("PUT", NAME), ("DELETE", NAME), ("POST", "/admin/pause"), ("GET", "/admin/export")],
)
@pytest.mark.parametrize("auth", [[], [bearer("wrong")], [("Authorization", TOKEN)]])
def test_admin_without_the_token_refuses_without_reading_the_body(
    method: str, path: str, auth: list[tuple[str, str]]
) -> None:
    headers = [*auth, ("Content-Length", str(HUGE))]
    answer = call(app_with(admin_token=TOKEN), method, path, headers=headers, chunks=endless())
    assert answer.status == 401 and "Bearer" in answer.json()["detail"]
    assert answer.headers["www-authenticate"] == "Bearer"
    assert answer.reads == 0


def test_admin_paths_the_routes_do_not_name_are_refused_as_well() -> None:
    assert call(app_with(admin_token=TOKEN), "POST", "/admin/nothing").status == 401
    assert call(app_with(), "GET", "/admin").status == 404
    assert call(app_with(), "GET", "/administrator").status == 404  # no route, not the gate
    assert "detail" in call(app_with(), "GET", "/administrator").json()


def test_a_body_without_a_length_stops_being_read_past_the_limit() -> None:
    settings = Settings(redis_url=UNREACHABLE, admin_token=TOKEN)
    limit = small_body_limit(settings.api.topic_name_max, settings.api.seed_words_max)
    chunk = 4096
    for method, path in (("PUT", NAME), ("POST", "/admin/pause")):
        headers = [bearer(TOKEN), ("Transfer-Encoding", "chunked")]
        answer = call(create_app(settings), method, path, headers=headers, chunks=endless(chunk))
        assert answer.status == 413, answer.body
        assert f"the limit is {limit} bytes" in answer.json()["detail"]
        assert answer.read <= limit + chunk and answer.headers["connection"] == "close"


def test_a_declared_length_past_the_limit_is_refused_unread() -> None:
    headers = [bearer(TOKEN), ("Content-Length", str(HUGE))]
    answer = call(app_with(admin_token=TOKEN), "PUT", NAME, headers=headers, chunks=endless())
    assert answer.status == 413 and answer.reads == 0


def test_the_longest_name_escaped_fits_the_limit() -> None:
    """A name of topic_name_max characters, each a JSON-escaped surrogate pair, is no 413."""
    settings = Settings(redis_url=UNREACHABLE, admin_token=TOKEN)
    body = json.dumps({"name": "\U0001f3b5" * settings.api.topic_name_max}, indent=8).encode()
    assert len(body) <= small_body_limit(settings.api.topic_name_max)


def many_texts(count: int) -> bytes:
    """A body of ``count`` one-letter texts, five bytes each."""
    return b'{"texts":[' + b", ".join([b'"a"'] * count) + b"]}"


def test_a_batch_past_max_infer_texts_is_refused_within_a_second() -> None:
    settings = Settings(redis_url=UNREACHABLE)
    body = many_texts(190_000)
    assert 900_000 < len(body) <= settings.api.max_infer_bytes  # the body limit lets it through
    client = TestClient(create_app(settings))  # no lifespan: Redis is never read
    start = time.perf_counter()
    response = client.post(
        "/infer/batch", content=body, headers={"Content-Type": "application/json"}
    )
    elapsed = time.perf_counter() - start
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert "texts" in detail and str(settings.api.max_infer_texts) in detail
    assert len(response.content) < 1000 and elapsed < 1.0


def test_max_infer_texts_is_in_the_schema() -> None:
    spec = app_with(max_infer_texts=7).openapi()
    texts = spec["components"]["schemas"]["InferBatchIn"]["properties"]["texts"]
    assert texts["maxItems"] == 7 and texts["minItems"] == 1
    responses = spec["paths"]["/infer/batch"]["post"]["responses"]
    assert "max_infer_texts" in responses["422"]["description"]
    client = TestClient(app_with(max_infer_texts=7))
    assert client.post("/infer/batch", json={"texts": ["a"] * 8}).status_code == 422


def test_the_most_seed_words_escaped_fit_the_limit() -> None:
    """seed_words_max words of the longest a seed word may be, each character a JSON-escaped
    surrogate pair, are no 413."""
    settings = Settings(redis_url=UNREACHABLE, admin_token=TOKEN)
    words = ["\U0001f3b5" * SEED_WORD_CHARS] * settings.api.seed_words_max
    body = json.dumps({"words": words, "strength": 1e300}, indent=8).encode()
    assert len(body) <= small_body_limit(settings.api.topic_name_max, settings.api.seed_words_max)
