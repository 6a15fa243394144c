"""/infer under slow and many clients, and /infer/batch, over real HTTP (uvicorn).

A client still sending its body holds no inference thread and gets 408 once body_timeout_s is
over; twenty clients at once are all answered (they wait for a thread, not 503); a batch answers
each text as /infer answers it alone.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx
import pytest
import torch
from fastapi.testclient import TestClient

from lda.inference import infer_topics
from lda.vocab import Vocabulary
from service.api.app import create_app
from service.settings import Settings
from tests.service.api.test_infer_limit import limiter_of
from tests.service.conftest import Published, serve

pytestmark = pytest.mark.slow

WAIT_S = 30.0
TEXTS = [
    "apple banana cherry grape apple",
    "the violin and the cello at the opera",
    "engine piston turbine valve engine engine",
    "zebra quokka",  # no known word: the prior
    "apple violin engine sonata grape valve cherry",
    "Apple-banana cherry; the VIOLIN! zebra",
]


class SlowUpload(threading.Thread):
    """A POST /infer whose body trickles in a byte at a time (as curl --limit-rate does)."""

    def __init__(self, base: str, body: bytes, every_s: float) -> None:
        super().__init__(daemon=True)
        parts = urlsplit(base)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=WAIT_S)
        self.body, self.every_s = body, every_s
        self.stop = threading.Event()
        self.sent = 0

    def run(self) -> None:
        self.conn.putrequest("POST", "/infer")
        self.conn.putheader("Content-Type", "application/json")
        self.conn.putheader("Content-Length", str(len(self.body)))
        self.conn.endheaders()
        try:
            while self.sent < len(self.body) and not self.stop.wait(self.every_s):
                self.conn.send(self.body[self.sent : self.sent + 1])
                self.sent += 1
        except OSError:  # the server answered and closed: stop sending
            pass

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        response = self.conn.getresponse()
        headers = {k.lower(): v for k, v in response.getheaders()}
        return response.status, headers, response.read()


def test_slow_bodies_get_408_while_the_others_are_served(
    settings: Settings, published: Published
) -> None:
    timeout_s = 3.0
    app = create_app(settings.updated(body_timeout_s=timeout_s))
    with serve(app) as base:
        body = json.dumps({"text": "apple banana cherry " * 20}).encode()
        slow = [SlowUpload(base, body, every_s=0.05) for _ in range(4)]
        for upload in slow:
            upload.start()
        limiter = limiter_of(app)
        deadline = time.monotonic() + WAIT_S
        while limiter.in_progress < 4 or min(u.sent for u in slow) < 2:
            assert time.monotonic() < deadline, "the slow uploads were never taken"
            time.sleep(0.01)
        started = time.monotonic()
        for text in ("violin cello", "engine valve", "apple grape"):
            fast = httpx.post(base + "infer", json={"text": text}, timeout=WAIT_S)
            assert fast.status_code == 200, fast.text
        served_in = time.monotonic() - started
        assert served_in < timeout_s, "the fast client waited for the slow ones"
        assert all(upload.sent < len(body) for upload in slow)  # still uploading meanwhile

        for upload in slow:
            status, headers, raw = upload.answer()
            upload.stop.set()
            assert status == 408, raw
            assert headers["content-type"] == "application/json"
            assert headers.get("connection") == "close"
            assert "STREAMLDA_BODY_TIMEOUT_S" in json.loads(raw)["detail"]
        while limiter.in_progress > 0:  # their places are free again
            assert time.monotonic() < deadline, "a slow upload kept its place"
            time.sleep(0.01)
        after = httpx.post(base + "infer", json={"text": "opera"}, timeout=WAIT_S)
        assert after.status_code == 200


def test_twenty_concurrent_clients_are_all_answered(
    settings: Settings, published: Published
) -> None:
    with serve(create_app(settings)) as base:
        barrier = threading.Barrier(20)

        def client(i: int) -> list[int]:
            with httpx.Client(base_url=base, timeout=WAIT_S) as http_client:
                barrier.wait()
                return [
                    http_client.post(
                        "infer", json={"text": TEXTS[(i + j) % len(TEXTS)]}
                    ).status_code
                    for j in range(3)
                ]

        with ThreadPoolExecutor(20) as pool:
            statuses = [s for answers in pool.map(client, range(20)) for s in answers]
    assert statuses == [200] * 60


def test_batch_answers_each_text_as_infer_does_alone(api: TestClient, published: Published) -> None:
    singles = [api.post("/infer", json={"text": text}).json() for text in TEXTS]
    batch = api.post("/infer/batch", json={"texts": TEXTS})
    assert batch.status_code == 200, batch.text
    results = batch.json()["results"]
    assert len(results) == len(TEXTS)
    vocabulary = Vocabulary(published.vocab)
    for text, alone, together in zip(TEXTS, singles, results, strict=True):
        assert {k: v for k, v in together.items() if k != "proportions" and k != "topics"} == {
            k: v for k, v in alone.items() if k != "proportions" and k != "topics"
        }
        assert together["proportions"] == pytest.approx(alone["proportions"], rel=1e-12, abs=1e-15)
        assert [t["id"] for t in together["topics"]] == [t["id"] for t in alone["topics"]]
        ids = torch.tensor(vocabulary.encode(text), dtype=torch.long)
        reference = infer_topics(published.beta, ids, 0.1)  # the learner's own fixed point
        assert together["proportions"] == pytest.approx(reference, rel=1e-9, abs=1e-12)


def test_a_batch_in_any_order_gives_the_same_answers(api: TestClient, published: Published) -> None:
    forward = api.post("/infer/batch", json={"texts": TEXTS}).json()["results"]
    backward = api.post("/infer/batch", json={"texts": TEXTS[::-1]}).json()["results"][::-1]
    assert forward == backward


@pytest.mark.parametrize(
    ("body", "expected"),
    [({"texts": []}, "texts"), ({"texts": ["apple", ""]}, "texts.1"), ({"text": "a"}, "texts")],
)
def test_bad_batch_is_422(
    api: TestClient, published: Published, body: object, expected: str
) -> None:
    response = api.post("/infer/batch", json=body)
    assert response.status_code == 422 and expected in response.json()["detail"]


def test_batch_is_bounded_by_the_byte_limit(
    api: TestClient, published: Published, settings: Settings
) -> None:
    texts = ["apple banana"] * (settings.api.max_infer_bytes // 10)
    response = api.post("/infer/batch", json={"texts": texts})
    assert response.status_code == 413 and "limit" in response.json()["detail"]
