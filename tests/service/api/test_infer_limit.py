"""/infer past the requests it takes (infer_queue): 503 with Retry-After before the body is read,
/healthz unaffected, over real HTTP (uvicorn)."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from service.api.app import create_app
from service.api.infer.admission import ConcurrencyLimitMiddleware
from service.settings import Settings
from tests.service.conftest import Published, serve

pytestmark = pytest.mark.slow

WAIT_S = 10.0


def limiter_of(app: Any) -> ConcurrencyLimitMiddleware:
    """The app's ConcurrencyLimitMiddleware instance (built when the server started)."""
    node = app.middleware_stack
    while not isinstance(node, ConcurrencyLimitMiddleware):
        node = node.app
    return node


def start_post(base: str, length: int) -> http.client.HTTPConnection:
    """A POST /infer whose headers are sent and whose body (``length`` bytes) is not, yet."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=WAIT_S)
    conn.putrequest("POST", "/infer")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(length))
    conn.endheaders()
    return conn


def test_infer_past_the_limit_is_refused_before_its_body(
    settings: Settings, published: Published
) -> None:
    app = create_app(settings.updated(infer_queue=1))
    with serve(app) as base:
        body = json.dumps({"text": "apple banana cherry"}).encode()
        holder = start_post(base, len(body))
        holder.send(body[:5])  # admitted, and waiting for the rest of its body
        limiter = limiter_of(app)
        deadline = time.monotonic() + WAIT_S
        while limiter.in_progress < 1:
            assert time.monotonic() < deadline, "the first request was never admitted"
            time.sleep(0.01)

        refused = start_post(base, 1000).getresponse()  # headers only: no body ever sent
        assert refused.status == 503 and refused.getheader("Retry-After") == "1"
        assert "busy" in json.loads(refused.read())["detail"]
        assert httpx.get(base + "healthz", timeout=WAIT_S).status_code == 200

        holder.send(body[5:])
        answered = holder.getresponse()
        assert answered.status == 200, answered.read()
        assert json.loads(answered.read())["tokens"] == 3
        while limiter.in_progress > 0:  # freed once the response is sent
            assert time.monotonic() < deadline + WAIT_S, "the slot was never freed"
            time.sleep(0.01)
        after = httpx.post(base + "infer", json={"text": "violin"}, timeout=WAIT_S)
        assert after.status_code == 200
