"""The load generators' clients: dashboards polling on an open-loop schedule, a closed loop,
their tally, and a raw keep-alive HTTP/1.1 connection that reads a reply's status line, headers
and Content-Length body from an asyncio stream (no client library's cost in the figures)."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

import numpy as np


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    """(status, lower-cased header fields) of the next reply; its body is read and dropped."""
    status = int((await reader.readline()).split()[1])
    fields: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        fields[name.strip().lower()] = value.strip()
    await reader.readexactly(int(fields.get("content-length", "0")))
    return status, fields


@dataclass
class Results:
    sent: int = 0
    answered: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1


class Connection:
    """One keep-alive HTTP/1.1 connection used by one dashboard panel, requests in turn.

    A raw asyncio client: httpx's pool costs more CPU per request than the API does, and on a
    2-core machine the load generator would measure itself.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.lock = asyncio.Lock()
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def get(self, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
        """(status, lower-cased headers) of GET ``path``; the body is read and dropped."""
        if self.streams is None:
            self.streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.streams
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n{extra}\r\n".encode())
        try:
            status, fields = await read_response(reader)
        except BaseException:
            writer.close()
            self.streams = None
            raise
        return status, fields


async def one_request(
    connection: Connection, path: str, scheduled: float, results: Results, etags: dict[str, str]
) -> None:
    """GET ``path``; latency from ``scheduled`` (the open loop's send time) to the answer."""
    results.sent += 1
    headers = {"If-None-Match": etags[path]} if path in etags else {}
    try:
        async with connection.lock:
            status, fields = await connection.get(path, headers)
    except (OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
        results.error(type(exc).__name__)
        return
    results.latencies_ms.append((time.perf_counter() - scheduled) * 1000)
    if status in (200, 304):
        results.answered += 1
        if "etag" in fields:
            etags[path] = fields["etag"]
    else:
        results.error(f"HTTP {status}")


def intervals(mode: str) -> tuple[float, float]:
    """(first send after start, then the wait before each next one) of a client in ``mode``."""
    if mode == "lockstep":
        return 0.0, 1.0
    if mode == "phase":
        return random.random(), 1.0
    return random.random(), -1.0  # random: a fresh 0.5-1.5 s wait each time


def panel_paths(topic_view: int) -> tuple[str, ...]:
    """One dashboard's panels: /topics and /perplexity, and with ``topic_view`` topics, one
    random topic's view too (its words with intervals, and its history)."""
    if not topic_view:
        return ("/topics", "/perplexity")
    k = random.randrange(topic_view)
    return ("/topics", "/perplexity", f"/topics/{k}?uncertainty=true", f"/topics/{k}/history")


async def dashboard(
    host: str,
    port: int,
    duration: float,
    results: Results,
    use_etags: bool,
    mode: str,
    paths: tuple[str, ...] = ("/topics", "/perplexity"),
) -> None:
    """One client: its ``paths`` on its schedule (``mode``), never waiting for an answer to
    schedule the next (a panel whose answer is late queues on its connection, and its latency
    still counts from the scheduled time)."""
    tasks: set[asyncio.Task[None]] = set()  # in flight only: done ones are let go at once
    etags: dict[str, str] = {}
    panels = {path: Connection(host, port) for path in paths}
    first, every = intervals(mode)
    begin = time.perf_counter()
    scheduled = begin + first
    while scheduled < begin + duration:
        await asyncio.sleep(max(0.0, scheduled - time.perf_counter()))
        for path, connection in panels.items():
            cache = etags if use_etags else {}
            task = asyncio.create_task(one_request(connection, path, scheduled, results, cache))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        scheduled += every if every > 0 else random.uniform(0.5, 1.5)
    await asyncio.gather(*tasks)
    for connection in panels.values():
        if connection.streams is not None:
            connection.streams[1].close()


async def closed_loop(host: str, port: int, duration: float) -> tuple[int, list[float]]:
    """GET /topics back to back on one connection until ``duration`` is over:
    (answers, latencies in ms)."""
    connection = Connection(host, port)
    answers, latencies = 0, []
    end = time.perf_counter() + duration
    while (now := time.perf_counter()) < end:
        status, _ = await connection.get("/topics", {})
        latencies.append((time.perf_counter() - now) * 1000)
        answers += status == 200
    return answers, latencies


def percentiles(values: list[float]) -> str:
    if not values:
        return "no answers"
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return f"p50 {p50:.2f} ms, p95 {p95:.2f} ms, p99 {p99:.2f} ms, max {max(values):.2f} ms"
