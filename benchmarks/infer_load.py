"""/infer's documents per second under 1, 4 and 20 concurrent clients and in batches, at K topics.

For each K: trains a model on DEV articles (``streamlda train``, or reuses ``--models DIR/kK``),
publishes it into an embedded Redis as the worker would, starts ``streamlda api`` on it (one
process, default settings) and measures, closed loop, for ``--duration`` seconds each:

* single-text clients: 1, 4 and 20 at once, each POSTing one held-out DEV article per request
  (a 503 is retried after its Retry-After, as a polite client does, or at once with
  ``--retry-now``); docs/s = answers per second over all clients;
* batches: one client POSTing /infer/batch with 1, 10 and 100 articles; docs/s = texts answered
  per second (skipped for an API without /infer/batch);
* the anchor: tomotopy's ``LDAModel.infer`` (trained on the same documents with the same K) on
  the same articles, in this process, docs/s.

``--baseline REPO`` measures another checkout's API too (e.g. a ``git archive`` of main), its
rounds interleaved with this checkout's; ``--rounds`` rounds, medians reported with ratios.

    .venv/bin/python -m benchmarks.infer_load --baseline /tmp/main      # both K, 3 rounds
    .venv/bin/python -m benchmarks.infer_load --quick                   # a short check

Also the slow clients: a fast client's /infer requests, timed alone and beside four uploads
at 5 kB/s (100 kB bodies, as ``curl --limit-rate 5k``), for ``--duration`` seconds each.

Goals (this checkout, K = 50): 20 clients' docs/s >= 0.9 x one client's; a batch of 100
>= 10 x one client's docs/s (printed against this checkout's one client and, with --baseline,
the baseline's); the slow uploads delay no /infer by more than a second. The load generator
shares the CPU with the API: run on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from benchmarks.api_clients import read_response
from benchmarks.common import CORPORA, REPO
from service.learn.checkpoint_file import load_checkpoint
from service.store.embedded_redis import EmbeddedRedis, free_port
from service.store.published_model import publish_model
from service.store.redis_client import connect

TRAIN_SHARD = CORPORA / "dev-00.jsonl.gz"
TEXT_SHARD = CORPORA / "dev-05.jsonl.gz"  # never trained on
VOCAB = CORPORA / "vocab-7702.txt"
MAX_TEXT_BYTES = 9_000  # 100 texts per batch stay within the default max_infer_bytes (1 MB)
CLIENTS = (1, 4, 20)
BATCHES = (1, 10, 100)
GOAL_CLIENTS_RATIO = 0.9
GOAL_BATCH_RATIO = 10.0


def texts(n: int) -> list[str]:
    """The first ``n`` articles of the held-out shard that fit a batch of 100 in 1 MB."""
    found: list[str] = []
    with gzip.open(TEXT_SHARD, "rt", encoding="utf-8") as lines:
        for line in lines:
            text = json.loads(line)["text"]
            if text.strip() and len(json.dumps({"text": text}).encode()) <= MAX_TEXT_BYTES:
                found.append(text)
                if len(found) == n:
                    break
    return found


def train(k: int, out: Path, docs: int) -> Path:
    """A SCIR model of ``k`` topics trained on ``docs`` DEV articles (streamlda train)."""
    if (out / "beta.npy").is_file():
        return out
    command = [sys.executable, "-m", "service", "train", "--source", f"jsonl:{TRAIN_SHARD}"]
    command += ["--vocab", str(VOCAB), "--topics", str(k), "--docs", str(docs)]
    command += ["--heldout", "200", "--eval-every", str(docs), "--out", str(out)]
    subprocess.run(command, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    return out


def publish(url: str, model: Path) -> None:
    """Publish the trained beta_mean as the worker does (its gamma from the checkpoint)."""
    beta = torch.from_numpy(np.load(model / "beta.npy"))
    vocab = (model / "vocab.txt").read_text(encoding="utf-8").split("\n")
    vocab = [w for w in vocab if w]
    checkpoint = load_checkpoint(model / "checkpoint.pt")
    gamma = float(checkpoint["model"]["config"]["gamma"])
    client = connect(url)
    client.flushdb()
    publish_model(client, beta, vocab, docs_seen=3000, gamma=gamma)
    client.close()


class Post:
    """One keep-alive HTTP/1.1 connection POSTing JSON (raw asyncio: a cheap load generator)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: bytes) -> tuple[int, dict[str, str]]:
        if self.streams is None:
            self.streams = await asyncio.open_connection("127.0.0.1", self.port)
        reader, writer = self.streams
        head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        status, fields = await read_response(reader)
        if fields.get("connection") == "close":
            writer.close()
            self.streams = None
        return status, fields

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()


async def client_loop(
    port: int, path: str, bodies: list[tuple[bytes, int]], end: float, retry_now: bool
) -> tuple[int, int]:
    """POST bodies in turn until ``end``: (documents answered, 503s)."""
    connection, done, refused, i = Post(port), 0, 0, 0
    try:
        while time.perf_counter() < end:
            body, n = bodies[i % len(bodies)]
            status, fields = await connection.post(path, body)
            if status == 200:
                done += n
                i += 1
            elif status == 503:
                refused += 1
                if not retry_now:
                    await asyncio.sleep(float(fields.get("retry-after", "1")))
            else:
                raise SystemExit(f"{path} answered {status}")
    finally:
        connection.close()
    return done, refused


async def measure(
    port: int, path: str, bodies: list[tuple[bytes, int]], clients: int, seconds: float, now: bool
) -> tuple[float, int]:
    """(documents per second over all clients, 503s)."""
    start = time.perf_counter()
    results = await asyncio.gather(
        *(
            client_loop(port, path, bodies[c::clients] or bodies, start + seconds, now)
            for c in range(clients)
        )
    )
    elapsed = time.perf_counter() - start
    return sum(d for d, _ in results) / elapsed, sum(r for _, r in results)


async def slow_upload(port: int, size: int, rate: float, end: float) -> int | None:
    """A POST /infer whose ``size``-byte body goes at ``rate`` bytes/s (curl --limit-rate):
    the status it finally gets, or None if it was still sending at ``end``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = "POST /infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    writer.write(f"{head}Content-Length: {size}\r\n\r\n".encode())
    body = json.dumps({"text": "x" * (size - 12)}).encode()
    chunk = max(1, int(rate / 10))
    answer = asyncio.ensure_future(reader.readline())
    try:
        for start in range(0, size, chunk):
            if answer.done() or time.perf_counter() > end:
                break
            writer.write(body[start : start + chunk])
            await asyncio.sleep(0.1)
        if answer.done():
            return int(answer.result().split()[1])
        return None
    finally:
        answer.cancel()
        writer.close()


async def delays(port: int, article: bytes, slow: int, seconds: float) -> list[float]:
    """Seconds each of a fast client's /infer requests took (one after another, ``seconds``
    long) while ``slow`` uploads at 5 kB/s run (100 kB bodies: 20 s each)."""
    end = time.perf_counter() + seconds
    uploads = [asyncio.ensure_future(slow_upload(port, 100_000, 5_000, end)) for _ in range(slow)]
    await asyncio.sleep(0.5)  # the uploads are under way
    connection, took = Post(port), []
    while time.perf_counter() < end:
        started = time.perf_counter()
        status, _ = await connection.post("/infer", article)
        took.append(time.perf_counter() - started if status == 200 else float("inf"))
    connection.close()
    await asyncio.gather(*uploads)
    return took


def start_api(repo: Path, url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "STREAMLDA_REDIS_URL": url, "PYTHONPATH": str(repo)}
    command = [sys.executable, "-m", "service", "api", "--port", str(port)]
    with log.open("ab") as out:
        process = subprocess.Popen(command, cwd=repo, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            import urllib.request

            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text()[-2000:]
                raise SystemExit(f"the API of {repo} did not start: {tail}") from None
            time.sleep(0.2)


def stop_api(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def has_batch(port: int) -> bool:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=10) as reply:
        return "/infer/batch" in json.loads(reply.read())["paths"]


def one_round(
    repo: Path, url: str, articles: list[str], args: argparse.Namespace, log: Path
) -> dict[str, float]:
    """Every figure of one API process (a fresh one per round)."""
    port = free_port()
    api = start_api(repo, url, port, log)
    figures: dict[str, float] = {}
    try:
        singles = [(json.dumps({"text": t}).encode(), 1) for t in articles]
        asyncio.run(measure(port, "/infer", singles, 1, 1.0, True))  # warm up: model load
        article = singles[0][0]
        for slow in (0, 4):
            took = asyncio.run(delays(port, article, slow, args.duration))
            figures[f"{slow} slow: median s"] = statistics.median(took)
            figures[f"{slow} slow: max s"] = max(took)
        for clients in CLIENTS:
            rate, refused = asyncio.run(
                measure(port, "/infer", singles, clients, args.duration, args.retry_now)
            )
            figures[f"{clients} client(s)"] = rate
            figures[f"{clients} client(s) 503s"] = refused
        if has_batch(port):
            for size in BATCHES:
                bodies = [
                    (json.dumps({"texts": articles[s : s + size]}).encode(), size)
                    for s in range(0, len(articles) - size + 1, size)
                ]
                rate, _ = asyncio.run(measure(port, "/infer/batch", bodies, 1, args.duration, True))
                figures[f"batch {size}"] = rate
    finally:
        stop_api(api)
    return figures


def tomotopy_rate(k: int, articles: list[str], train_docs: int, seconds: float) -> float:
    """tomotopy's LDAModel.infer docs/s on ``articles`` (model: ``k`` topics, the same DEV
    documents and vocabulary as ours, 200 Gibbs iterations)."""
    import tomotopy

    from lda.vocab import Vocabulary, tokenize

    vocabulary = Vocabulary.load(VOCAB)
    words = set(vocabulary.words)
    model = tomotopy.LDAModel(k=k, seed=0)
    with gzip.open(TRAIN_SHARD, "rt", encoding="utf-8") as lines:
        for _, line in zip(range(train_docs), lines, strict=False):
            tokens = [w for w in tokenize(json.loads(line)["text"]) if w in words]
            if tokens:
                model.add_doc(tokens)
    model.train(200, workers=1)
    docs = [model.make_doc([w for w in tokenize(t) if w in words]) for t in articles]
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        model.infer(docs, workers=1)
        done += len(docs)
    return done / (time.perf_counter() - start)


def report(k: int, runs: dict[str, list[dict[str, float]]], anchor: float) -> bool:
    print(f"\nK = {k} (medians of {len(next(iter(runs.values())))} rounds; docs/s)")
    names = list(next(iter(runs.values()))[0])
    medians = {
        label: {n: statistics.median(r.get(n, float("nan")) for r in rounds) for n in names}
        for label, rounds in runs.items()
    }
    ours = medians["this checkout"]
    for name in names:
        if name.endswith("503s") or " slow: " in name:
            continue
        row = f"  {name:<14}"
        for label, values in medians.items():
            refused = values.get(f"{name} 503s")
            extra = "" if refused is None else f" ({refused:.0f} x 503)"
            row += f"  {label}: {values.get(name, float('nan')):8.1f}{extra}"
        if "baseline" in medians and name in medians["baseline"]:
            row += f"  ratio {ours[name] / medians['baseline'][name]:.2f} x"
        print(row)
    for label, v in medians.items():
        print(f"  {label}: one client's /infer alone median {v['0 slow: median s']:.3f} s "
              f"(max {v['0 slow: max s']:.3f}), beside 4 uploads at 5 kB/s median "
              f"{v['4 slow: median s']:.3f} s (max {v['4 slow: max s']:.3f})")  # fmt: skip
    print(f"  tomotopy infer (1 thread): {anchor:.1f} docs/s")
    one = ours["1 client(s)"]
    ratios = {
        "20 clients / 1": ours["20 client(s)"] / one,
        "batch 100 / 1 client": ours.get("batch 100", float("nan")) / one,
    }
    if "baseline" in medians:
        theirs = medians["baseline"]["1 client(s)"]
        ratios["batch 100 / baseline's 1 client"] = ours.get("batch 100", float("nan")) / theirs
    print("  " + ", ".join(f"{n}: {v:.2f} x" for n, v in ratios.items()))
    delayed = ours["4 slow: max s"] - ours["0 slow: median s"]
    print(f"  slow uploads delay a /infer by at most {delayed:.3f} s")
    return (
        ratios["20 clients / 1"] >= GOAL_CLIENTS_RATIO
        and ratios["batch 100 / 1 client"] >= GOAL_BATCH_RATIO
        and delayed <= 1.0
    )


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--topics", type=int, nargs="+", default=[50, 200])
    p.add_argument("--baseline", type=Path, help="another checkout to measure (interleaved)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=float, default=4.0, help="seconds per figure")
    p.add_argument("--texts", type=int, default=1000, help="held-out articles sent")
    p.add_argument("--train-docs", type=int, default=3000)
    p.add_argument("--models", type=Path, help="reuse trained models in DIR/k<K>")
    p.add_argument("--retry-now", action="store_true", help="retry a 503 at once")
    p.add_argument("--quick", action="store_true", help="K = 50, 1 round, 1 s per figure")
    args = p.parse_args(argv)
    if args.quick:
        args.topics, args.rounds, args.duration, args.texts = [50], 1, 1.0, 300
        args.train_docs = min(args.train_docs, 500)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    articles = texts(args.texts)
    met = True
    with tempfile.TemporaryDirectory(prefix="infer-load-") as scratch:
        models = args.models or Path(scratch)
        redis = EmbeddedRedis(Path(scratch) / "redis", 10.0)
        server = redis.start()
        log = Path(scratch) / "api.log"
        try:
            for k in args.topics:
                publish(redis.url, train(k, models / f"k{k}", args.train_docs))
                checkouts = {"this checkout": REPO}
                if args.baseline:
                    checkouts["baseline"] = args.baseline.resolve()
                runs: dict[str, list[dict[str, float]]] = {label: [] for label in checkouts}
                for r in range(args.rounds):
                    for label, repo in checkouts.items():  # interleaved, round by round
                        runs[label].append(one_round(repo, redis.url, articles, args, log))
                        print(f"K = {k}, round {r + 1}, {label}: {runs[label][-1]}", flush=True)
                anchor = tomotopy_rate(k, articles[:200], args.train_docs, args.duration)
                met &= report(k, runs, anchor) or k != 50
        finally:
            server.terminate()
            server.wait()
    print(f"\ngoals at K = 50: {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
