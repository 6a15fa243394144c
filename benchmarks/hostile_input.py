"""Hostile input costs bounded time and memory: four measurements, each against its goal.

* ``dump``: ``streamlda scrape`` of the shared dump sample against the same dump led by a page
  nested 200,000 elements deep and a 3 MB page of unclosed ``<ref name=`` (quadratic in the
  wikitext parser), into a real Redis, in interleaved clean/hostile pairs: the hostile dump's
  time over the clean one's (goal: within 20 s) and every good page queued; then SIGTERM while
  the cleaner's child parses the hostile page, and how long the scraper takes to end (goal 5 s).
* ``train``: ``streamlda train`` over 1,000 DEV articles, clean against the same with three
  100 kB hostile wikitext lines among them, interleaved (goal: within 30 s of clean).
* ``live``: ``streamlda scrape --source wikipedia`` against a stand-in API on 127.0.0.1 that
  answers JSON nested 100,000 deep and a 150 MB body, alternately, for 25 s: still running,
  and its peak resident set (VmHWM; goal < 400 MB).
* ``search``: a real ``streamlda api`` serving 30,000 kept articles over 3 topics; 5,000
  distinct ``/topics/{k}/articles?limit=100&offset=o`` reads; its resident set's growth
  (goal < 60 MB).

    .venv/bin/python -m benchmarks.hostile_input --rounds 3
    .venv/bin/python -m benchmarks.hostile_input --only train --rounds 1
"""

from __future__ import annotations

import argparse
import bz2
import contextlib
import gzip
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from benchmarks.common import CORPORA, REPO, module_env
from service.keys import DEFAULT_COUNTERS_KEY, DEFAULT_STREAM
from service.store.embedded_redis import EmbeddedRedis, free_port

DUMP = CORPORA / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
DEEP = 200_000  # nested elements of the page that leads the hostile dump
HOSTILE_PAGE = "Lead prose. " + "<ref name=" * 300_000  # 3 MB
TRAIN_ARTICLES = 1_000
TRAIN_HOSTILE = ("<ref name=" * 10_000, "{|\n" * 33_000, "<b>" * 33_000)  # 100 kB each
NESTED_DEPTH, HUGE_BYTES = 100_000, 150_000_000
LIVE_SECONDS = 25.0
SEARCH_ARTICLES, SEARCH_TOPICS, SEARCH_READS, SEARCH_LIMIT = 30_000, 3, 5_000, 100
GOALS = {"dump_s": 20.0, "stop_s": 5.0, "train_s": 30.0, "live_mib": 400.0, "search_mib": 60.0}
MIB = 2**20


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "service", *args]


def child_env(**extra: str) -> dict[str, str]:
    """The checkout on PYTHONPATH and no STREAMLDA_* setting of this shell (the defaults)."""
    env = {k: v for k, v in module_env().items() if not k.startswith("STREAMLDA_")}
    return {**env, **extra}


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def status_kib(pid: int, field: str) -> int:
    """A field of /proc/PID/status (VmRSS, VmHWM) in KiB; 0 once the process is gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in lines if line.startswith(field + ":")), 0)


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu(pid: int) -> float:
    """CPU seconds of ``pid``'s child processes (the scraper's cleaning child)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0.0
    return sum(cpu_seconds(int(child)) for child in children)


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def wait_for(predicate: Callable[[], bool], timeout_s: float, poll_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll_s)
    return False


@contextlib.contextmanager
def embedded_redis(directory: Path) -> Iterator[EmbeddedRedis]:
    """A password-protected redis-server of its own, stopped afterwards."""
    server = EmbeddedRedis(directory, 10.0)
    process = server.start()
    try:
        yield server
    finally:
        process.terminate()
        process.wait()


# -- dump ---------------------------------------------------------------------------------


def _page(page_id: str, title: str, text: str, before_revision: bytes = b"") -> bytes:
    head = f"  <page>\n    <title>{title}</title>\n    <ns>0</ns>\n    <id>{page_id}</id>\n"
    text_xml = f'<revision><text xml:space="preserve">{escape(text)}</text></revision>'
    return head.encode() + before_revision + text_xml.encode() + b"\n  </page>\n"


def write_dumps(work: Path) -> tuple[Path, Path]:
    """The shared sample as it is, and led by the deep page and the hostile one (bz2)."""
    raw = bz2.decompress(DUMP.read_bytes())
    first = raw.index(b"<page>")
    deep = _page("990001", "Deep", "Deep prose.", b"<a>" * DEEP + b"</a>" * DEEP)
    hostile = _page("990002", "Hostile", HOSTILE_PAGE)
    clean, led = work / "clean.xml.bz2", work / "hostile.xml.bz2"
    clean.write_bytes(DUMP.read_bytes())
    led.write_bytes(bz2.compress(raw[:first] + deep + hostile + raw[first:]))
    return clean, led


@dataclass
class Scrape:
    seconds: float
    ids: list[str]
    skipped: dict[str, int]
    returncode: int
    stop_s: float | None = None  # from SIGTERM to the end, where one was sent
    log: str = ""


def scrape_dump(url: str, path: Path, terminate_after_cpu: float | None = None) -> Scrape:
    """One ``streamlda scrape`` of ``path`` into an emptied Redis, to its end (or SIGTERM once
    its cleaning child has spent ``terminate_after_cpu`` seconds on one page)."""
    import redis

    client = redis.Redis.from_url(url)
    client.flushall()
    args = command("scrape", "--source", f"dump:{path}", "--redis", url, "--high-water", "10000000")
    start = time.monotonic()
    process = subprocess.Popen(
        args, cwd=REPO, env=child_env(), stderr=subprocess.PIPE, text=True
    )  # fmt: skip
    stop_s, signalled = None, 0.0
    try:
        if terminate_after_cpu is not None:
            # the good pages clean in milliseconds: a busy child is on the hostile page
            busy = wait_for(lambda: children_cpu(process.pid) > terminate_after_cpu, 600)
            if busy and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                signalled = time.monotonic()
        _, log = process.communicate(timeout=1800)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    end = time.monotonic()
    if signalled:
        stop_s = end - signalled
    entries: list[Any] = client.xrange(DEFAULT_STREAM) or []
    counters: dict[bytes, bytes] = client.hgetall(DEFAULT_COUNTERS_KEY)  # type: ignore[assignment]
    client.close()
    return Scrape(
        seconds=end - start,
        ids=[fields[b"id"].decode() for _, fields in entries],
        skipped={
            k.decode().removeprefix("skipped:"): int(v)
            for k, v in counters.items()
            if k.startswith(b"skipped:")
        },
        returncode=process.returncode,
        stop_s=stop_s,
        log=log,
    )


def run_dump(work: Path, rounds: int) -> None:
    clean_path, hostile_path = write_dumps(work)
    clean_s, hostile_s, all_queued = [], [], True
    with embedded_redis(work / "redis") as server:
        for round_ in range(rounds):
            clean = scrape_dump(server.url, clean_path)
            hostile = scrape_dump(server.url, hostile_path)
            for run in (clean, hostile):
                if run.returncode != 0:
                    raise SystemExit(f"scrape exited with {run.returncode}:\n{run.log[-3000:]}")
            same = hostile.ids == clean.ids
            all_queued &= same
            clean_s.append(clean.seconds)
            hostile_s.append(hostile.seconds)
            print(
                f"  round {round_ + 1}: clean {clean.seconds:5.1f} s ({len(clean.ids)} queued), "
                f"hostile {hostile.seconds:5.1f} s ({len(hostile.ids)} queued, the same: {same}; "
                f"skipped {hostile.skipped}), load {load_average()}",
                flush=True,
            )
        stopped = scrape_dump(server.url, hostile_path, terminate_after_cpu=1.0)
    extra = statistics.median(hostile_s) - statistics.median(clean_s)
    print(
        f"dump: median clean {statistics.median(clean_s):.1f} s, hostile "
        f"{statistics.median(hostile_s):.1f} s: +{extra:.1f} s (goal within "
        f"{GOALS['dump_s']:.0f} s: {verdict(extra <= GOALS['dump_s'])}); every good page "
        f"queued, in order, in every round: {all_queued}"
    )
    if stopped.stop_s is None:
        print("dump: SIGTERM: the hostile page was never seen parsing", flush=True)
        return
    print(
        f"dump: SIGTERM during the hostile page (its cleaner 1 s of CPU in): ended "
        f"{stopped.stop_s:.2f} s later, exit {stopped.returncode}, {len(stopped.ids)} queued "
        f"before it (goal {GOALS['stop_s']:.0f} s: {verdict(stopped.stop_s <= GOALS['stop_s'])})",
        flush=True,
    )


# -- train --------------------------------------------------------------------------------


def write_train_files(work: Path) -> tuple[Path, Path]:
    """The first 1,000 lines of dev-00, and the same with the hostile lines among them."""
    with gzip.open(CORPORA / "dev-00.jsonl.gz", "rt", encoding="utf-8") as lines:
        clean = [line.rstrip("\n") for _, line in zip(range(TRAIN_ARTICLES), lines, strict=False)]
    mixed = list(clean)
    for i, text in enumerate(TRAIN_HOSTILE):
        record = {"id": f"h{i}", "title": f"Hostile {i}", "text": text, "format": "wikitext"}
        mixed.insert(300 * (i + 1), json.dumps(record))
    paths = work / "clean.jsonl", work / "hostile.jsonl"
    for path, rows in zip(paths, (clean, mixed), strict=True):
        path.write_text("\n".join(rows) + "\n")
    return paths


def train(path: Path, out: Path) -> tuple[float, int, dict[str, int]]:
    """Seconds of one ``streamlda train``, its documents learned and the source's skips."""
    import torch

    args = command(
        "train", "--source", f"jsonl:{path}", "--vocab", str(CORPORA / "vocab-7702.txt"),
        "--topics", "20", "--docs", "900", "--heldout", "100", "--threads", "1",
        "--out", str(out), "--json",
    )  # fmt: skip
    start = time.monotonic()
    done = subprocess.run(
        args, cwd=REPO, env=child_env(), capture_output=True, text=True, timeout=3600
    )  # fmt: skip
    took = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"train exited with {done.returncode}:\n{done.stderr[-3000:]}")
    seen = int(json.loads(done.stdout.splitlines()[-1])["docs_seen"])
    extra = torch.load(out / "checkpoint.pt", weights_only=False).get("extra", {})
    return took, seen, dict(extra.get("source_skips") or {})


def run_train(work: Path, rounds: int) -> None:
    clean_path, hostile_path = write_train_files(work)
    clean_s, hostile_s = [], []
    for round_ in range(rounds):
        c, c_seen, _ = train(clean_path, work / "clean-out")
        h, h_seen, skips = train(hostile_path, work / "hostile-out")
        clean_s.append(c)
        hostile_s.append(h)
        print(
            f"  round {round_ + 1}: clean {c:5.1f} s ({c_seen} learned), hostile {h:5.1f} s "
            f"({h_seen} learned, skipped {skips}), load {load_average()}",
            flush=True,
        )
    extra = statistics.median(hostile_s) - statistics.median(clean_s)
    print(
        f"train: median clean {statistics.median(clean_s):.1f} s, hostile "
        f"{statistics.median(hostile_s):.1f} s: +{extra:.1f} s (goal within "
        f"{GOALS['train_s']:.0f} s: {verdict(extra <= GOALS['train_s'])})",
        flush=True,
    )


# -- live ---------------------------------------------------------------------------------


class HostileAPI(ThreadingHTTPServer):
    """Answers every request with JSON nested NESTED_DEPTH deep or a HUGE_BYTES body, in turn
    (the body announced by Content-Length, written until the client hangs up)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _HostileHandler)
        self.answers: list[str] = []
        self.bytes_sent = 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/w/api.php"


class _HostileHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HostileAPI

    def log_message(self, format: str, *args: object) -> None:
        return

    def handle(self) -> None:
        with contextlib.suppress(ConnectionError):  # a client hangs up past its bound
            super().handle()

    def do_GET(self) -> None:
        with self.server.lock:
            kind = "nested" if len(self.server.answers) % 2 == 0 else "huge"
            self.server.answers.append(kind)
        size = 2 * NESTED_DEPTH if kind == "nested" else HUGE_BYTES
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        for part in _body(kind):
            self.wfile.write(part)
            with self.server.lock:
                self.server.bytes_sent += len(part)


def _body(kind: str) -> Iterator[bytes]:
    """The answer's bytes: ``[`` then ``]`` NESTED_DEPTH times, or a JSON string of spaces
    HUGE_BYTES long, a MiB at a time."""
    if kind == "nested":
        yield b"[" * NESTED_DEPTH + b"]" * NESTED_DEPTH
        return
    head = b'{"padding": "'
    yield head
    left = HUGE_BYTES - len(head)
    while left > 0:
        yield b" " * min(left, MIB)
        left -= MIB


def run_live(work: Path) -> None:
    api = HostileAPI()
    threading.Thread(target=api.serve_forever, daemon=True).start()
    try:
        with embedded_redis(work / "redis") as server:
            env = child_env(
                STREAMLDA_WIKIPEDIA_API_URL=api.url, STREAMLDA_RATE="100",
                STREAMLDA_RETRY_BACKOFF="0.05", STREAMLDA_RETRY_BACKOFF_MAX="0.2",
                STREAMLDA_MAX_RETRIES="100000",
            )  # fmt: skip
            args = command("scrape", "--source", "wikipedia", "--redis", server.url)
            log_path = work / "live.log"
            with log_path.open("w") as log:
                process = subprocess.Popen(args, cwd=REPO, env=env, stderr=log)
            start, peak = time.monotonic(), 0
            while time.monotonic() - start < LIVE_SECONDS and process.poll() is None:
                peak = max(peak, status_kib(process.pid, "VmHWM"))
                time.sleep(0.05)
            alive = process.poll() is None
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    finally:
        api.shutdown()
        api.server_close()
    failed = sum("failed (" in line for line in log_path.read_text().splitlines())
    peak_mib = peak / 1024
    print(
        f"live: still running after {LIVE_SECONDS:.0f} s: {alive}; {len(api.answers)} hostile "
        f"answers ({api.answers.count('nested')} nested, {api.answers.count('huge')} of "
        f"{HUGE_BYTES / 1e6:.0f} MB; {api.bytes_sent / 1e6:.0f} MB written to it), "
        f"{failed} failures logged; peak resident set {peak_mib:.0f} MiB "
        f"(goal < {GOALS['live_mib']:.0f} MB: {verdict(alive and peak_mib < GOALS['live_mib'])})",
        flush=True,
    )


# -- search -------------------------------------------------------------------------------


def publish_many_rows(url: str) -> None:
    """A 3-topic model over 12 words with SEARCH_ARTICLES kept articles (each its two largest
    shares), a snapshot beside it, as the worker leaves them."""
    import numpy as np
    import torch

    from service.store.published_model import publish_model
    from service.store.redis_client import connect
    from service.store.search import IndexRows
    from service.store.snapshot import Snapshot, publish_snapshot, top_words

    words = [f"word{i}" for i in range(12)]
    beta = torch.full((SEARCH_TOPICS, len(words)), 0.01)
    for k in range(SEARCH_TOPICS):
        beta[k, 4 * k : 4 * k + 4] = 0.2
    beta = beta / beta.sum(1, keepdim=True)
    rng = np.random.default_rng(7)
    theta = rng.dirichlet(np.full(SEARCH_TOPICS, 0.3), size=SEARCH_ARTICLES)
    order = np.argsort(-theta, axis=1, kind="stable")[:, :2]
    title = "List of things numbered {} (disambiguation)"  # as long as Wikipedia's titles
    rows = IndexRows(
        refs=[(title.format(i), str(10**6 + i), "wikipedia") for i in range(SEARCH_ARTICLES)],
        topics=order.astype(np.int16),
        shares=np.take_along_axis(theta, order, axis=1).astype(np.float32),
        tokens=rng.integers(50, 5000, size=SEARCH_ARTICLES).astype(np.float32),
        at=np.arange(SEARCH_ARTICLES, dtype=np.int64),
        n_topics=SEARCH_TOPICS,
    )
    client = connect(url)
    topics = top_words(beta, words, 10)
    publish_snapshot(
        client,
        Snapshot(
            docs_seen=SEARCH_ARTICLES, updated_at=time.time(), sampler="scir", step_size=0.0,
            device="cpu", vocab_size=len(words), topics=topics, sample_topics=topics,
        ),
    )  # fmt: skip
    publish_model(client, beta, words, docs_seen=SEARCH_ARTICLES, gamma=0.1, index=rows)
    client.close()


def run_search(work: Path) -> None:
    import httpx

    with embedded_redis(work / "redis") as server:
        publish_many_rows(server.url)
        port = free_port()
        args = command("api", "--port", str(port))
        with (work / "api.log").open("wb") as log:
            api = subprocess.Popen(
                args, cwd=REPO, env=child_env(STREAMLDA_REDIS_URL=server.url),
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:

                def searchable() -> bool:
                    with contextlib.suppress(httpx.TransportError):
                        return client.get("/topics/0/articles").status_code == 200
                    return False

                if not wait_for(searchable, 120, 0.2):
                    raise SystemExit(f"the API never answered a search; see {work / 'api.log'}")
                for topic in range(SEARCH_TOPICS):  # each topic's first page: the steady state
                    client.get(f"/topics/{topic}/articles?limit={SEARCH_LIMIT}")
                before = status_kib(api.pid, "VmRSS")
                start, sizes, errors = time.monotonic(), 0, 0
                for offset in range(SEARCH_READS):
                    topic = offset % SEARCH_TOPICS
                    answer = client.get(
                        f"/topics/{topic}/articles?limit={SEARCH_LIMIT}&offset={offset}"
                    )
                    errors += answer.status_code != 200
                    sizes += len(answer.content)
                took = time.monotonic() - start
                grown = (status_kib(api.pid, "VmRSS") - before) / 1024
        finally:
            api.terminate()
            try:
                api.wait(timeout=30)
            except subprocess.TimeoutExpired:
                api.kill()
                api.wait()
    print(
        f"search: {SEARCH_READS} distinct pages of {sizes / SEARCH_READS / 1e3:.0f} kB "
        f"({errors} not 200) in {took:.1f} s: resident set grew {grown:.1f} MiB from "
        f"{before / 1024:.0f} MiB (goal < {GOALS['search_mib']:.0f} MB: "
        f"{verdict(errors == 0 and grown < GOALS['search_mib'])})",
        flush=True,
    )


# -- main ---------------------------------------------------------------------------------

PARTS = ("dump", "train", "live", "search")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--only", action="append", choices=PARTS, help="a part alone (repeatable)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved clean/hostile pairs")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not DUMP.is_file() or not (CORPORA / "dev-00.jsonl.gz").is_file():
        raise SystemExit(f"error: the shared corpora are not in {CORPORA}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop the children
    print(f"load average at the start: {load_average()} ({os.cpu_count()} cores)", flush=True)
    with tempfile.TemporaryDirectory(prefix="streamlda-hostile-") as tmp:
        for part in args.only or PARTS:
            work = Path(tmp) / part
            work.mkdir()
            if part == "dump":
                run_dump(work, args.rounds)
            elif part == "train":
                run_train(work, args.rounds)
            elif part == "live":
                run_live(work)
            else:
                run_search(work)
    print(f"load average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
