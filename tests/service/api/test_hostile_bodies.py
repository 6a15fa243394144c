"""Hostile bodies against a real ``streamlda api`` process: refused within a second, and the
process's memory stays put.

A 200 MB body streams over a raw socket to ``PUT /admin/topics/0/name`` without a token, with
the admin routes off and on, declared and chunked; the process's peak resident memory over the
exchange comes from /proc (``VmHWM``, reset first through ``clear_refs``).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.api_process import api_process, status_kib

pytestmark = pytest.mark.slow

TOKEN = "s3cret-token"
BODY_BYTES = 200_000_000
CHUNK = 1 << 20
REFUSED_WITHIN_S = 1.0
MEMORY_GROWTH_BYTES = 50 * 1024 * 1024
SOCKET_TIMEOUT_S = 30.0


@pytest.fixture(params=[None, TOKEN], ids=["admin-off", "admin-on"])
def api(
    request: pytest.FixtureRequest, redis_server: Any, tmp_path: Path
) -> Iterator[tuple[int, int]]:
    """A ``streamlda api`` process, admin routes off or on: (pid, port)."""
    environment = {"STREAMLDA_ADMIN_TOKEN": request.param} if request.param else {}
    with api_process(redis_server.url, tmp_path / "api.log", env=environment) as started:
        yield started


def stream_body(port: int, head: bytes, body: Iterator[bytes]) -> tuple[bytes, float]:
    """Send ``head``, then ``body`` from a thread until done or refused; the response's first
    bytes and the seconds from the head to them."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT_S)
    stop = threading.Event()

    def send() -> None:
        try:
            for chunk in body:
                if stop.is_set():
                    return
                sock.sendall(chunk)
        except OSError:  # refused: the server closed the connection
            return

    try:
        start = time.monotonic()
        sock.sendall(head)
        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        answer = sock.recv(4096)
        elapsed = time.monotonic() - start
        answer += rest_of_response(sock, answer)
    finally:
        stop.set()
        sock.close()
    sender.join(timeout=SOCKET_TIMEOUT_S)
    return answer, elapsed


def rest_of_response(sock: socket.socket, start: bytes) -> bytes:
    """The bytes of a response after ``start``, up to the end of its body (Content-Length)."""
    received = start
    try:
        while b"\r\n\r\n" not in received or len(received) < response_length(received):
            more = sock.recv(4096)
            if not more:
                break
            received += more
    except OSError:  # the server closed the connection: what came is what there is
        pass
    return received[len(start) :]


def response_length(received: bytes) -> int:
    head, _, _ = received.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(head) + 4 + int(value)
    return len(head) + 4


def plain(total: int) -> Iterator[bytes]:
    chunk = b"a" * CHUNK
    for _ in range(total // CHUNK):
        yield chunk


def chunked(total: int) -> Iterator[bytes]:
    frame = b"%x\r\n" % CHUNK + b"a" * CHUNK + b"\r\n"
    for _ in range(total // CHUNK):
        yield frame
    yield b"0\r\n\r\n"


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_200_mb_name_without_a_token_is_refused_at_once_and_costs_no_memory(
    api: tuple[int, int], declared: bool
) -> None:
    pid, port = api
    framing = f"Content-Length: {BODY_BYTES}" if declared else "Transfer-Encoding: chunked"
    head = (
        f"PUT /admin/topics/0/name HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\n{framing}\r\n\r\n"
    ).encode()
    before = status_kib(pid, "VmRSS")
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM from here on
    answer, elapsed = stream_body(
        port, head, plain(BODY_BYTES) if declared else chunked(BODY_BYTES)
    )
    time.sleep(0.5)  # anything the server still reads or buffers would show now
    grown = (status_kib(pid, "VmHWM") - before) * 1024
    status_line = answer.split(b"\r\n", 1)[0]
    assert status_line.split()[1:2] in ([b"401"], [b"404"]), answer[:300]
    assert b'{"detail":' in answer
    assert elapsed < REFUSED_WITHIN_S, elapsed
    assert grown < MEMORY_GROWTH_BYTES, f"the API grew by {grown / 2**20:.0f} MiB"
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200


@pytest.mark.parametrize("api", [None], indirect=True, ids=["admin-off"])
def test_a_950_kb_batch_of_190_000_texts_is_refused_at_once(api: tuple[int, int]) -> None:
    _, port = api
    body = b'{"texts":[' + b", ".join([b'"a"'] * 190_000) + b"]}"
    head = (
        f"POST /infer/batch HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    answer, elapsed = stream_body(port, head, iter([body]))
    assert answer.split(b"\r\n", 1)[0].split()[1] in (b"413", b"422"), answer[:300]
    assert elapsed < REFUSED_WITHIN_S, elapsed
