"""Helpers of the worker tests: small fast settings, queueing real articles, worker processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from lda.batch import Batch
from lda.evaluation.perplexity import HeldoutSet
from lda.model import StreamingLDA
from lda.vocab import Vocabulary, build_vocabulary
from service.ingest.queue import ArticleQueue, QueueConfig
from service.ingest.sources import Article
from service.learn.command import build_worker
from service.learn.model_store import CHECKPOINT_NAME, load_model
from service.settings import Settings
from service.store.redis_client import connect
from service.store.snapshot import read_snapshot
from tests.support.corpora import SHARDS, read_jsonl

REPO = Path(__file__).resolve().parents[3]
DEADLINE_S = 60.0  # every wait of these tests is bounded by this
POLL_S = 0.1
HELDOUT = 20
VOCAB_DOCS = 30

# Small and fast: K=5, 4 sweeps, a 500-word vocabulary built from the first 30 articles. No
# revisits: these tests hold the worker to exactly the steps of the stream (replay() and the
# idle state); tests/service/learn/test_revisit.py turns them on.
WORKER_ENV = {
    "STREAMLDA_REVISIT": "false",
    "STREAMLDA_TOPICS": "5",
    # the helpers' small K stays fixed, as the tests of drift, labels and records expect; a
    # test of moving topics passes fixed_topics=False (and max_topics) itself
    "STREAMLDA_FIXED_TOPICS": "true",
    "STREAMLDA_SWEEPS": "4",
    "STREAMLDA_BATCH_SIZE": "10",
    "STREAMLDA_HELDOUT": str(HELDOUT),
    "STREAMLDA_EVAL_EVERY": "20",
    "STREAMLDA_EVAL_SWEEPS": "4",
    "STREAMLDA_VOCAB_SIZE": "500",
    "STREAMLDA_VOCAB_DOCS": str(VOCAB_DOCS),
    "STREAMLDA_TOPIC_WORDS": "20",
    "STREAMLDA_THREADS": "1",
    "STREAMLDA_DEVICE": "cpu",
    "STREAMLDA_READ_BLOCK_MS": "200",
    "STREAMLDA_REDIS_RETRY_FIRST": "0.1",
    "STREAMLDA_REDIS_RETRY_MAX": "0.5",
    "STREAMLDA_QUEUE_TIMEOUT": "2",
}


def worker_settings(redis_url: str, data_dir: Path, **overrides: Any) -> Settings:
    """Settings of an in-process worker equal to WORKER_ENV."""
    values: dict[str, Any] = {
        name.removeprefix("STREAMLDA_").lower(): value for name, value in WORKER_ENV.items()
    }
    values.update(redis_url=redis_url, data_dir=data_dir, checkpoint_every_s=1.0)
    values.update(overrides)
    return Settings.model_validate(values)


def articles(start: int, count: int) -> list[Article]:
    """Plain-text articles ``start`` .. ``start + count`` of shard 0."""
    records = list(read_jsonl(SHARDS[0], limit=start + count))[start:]
    return [
        Article(id=f"dev0-{start + i}", title=r["title"], text=r["text"], source="test")
        for i, r in enumerate(records)
    ]


def replay(
    settings: Settings, count: int
) -> tuple[StreamingLDA, Vocabulary, list[tuple[int, float, float]]]:
    """The worker's run on articles 0 .. ``count`` replayed in this process: the same vocabulary,
    held-out set and minibatches, evaluating in line as ``train`` does. The learner, its
    vocabulary and its (docs_seen, perplexity, perplexity_avg) points."""
    texts = [a.text for a in articles(0, count)]
    vocab = build_vocabulary(texts[: settings.model.vocab_docs], settings.model.vocab_size)
    encoded = [ids for ids in (vocab.encode(t) for t in texts) if ids]
    heldout = HeldoutSet.from_documents(encoded[: settings.model.heldout])
    train = encoded[settings.model.heldout :]
    model = StreamingLDA(settings.model.learner_config(len(vocab)), "cpu", settings.model.seed)
    points, next_eval = [], settings.model.eval_every
    for start in range(0, len(train), settings.model.batch_size):
        model.update(Batch.from_ids(train[start : start + settings.model.batch_size]))
        if model.docs_seen >= next_eval:
            points.append((model.docs_seen, *model.evaluate(heldout)))
            next_eval = (
                model.docs_seen // settings.model.eval_every + 1
            ) * settings.model.eval_every
    return model, vocab, points


def queue_articles(client: redis.Redis, start: int, count: int) -> None:
    """Queue articles into the stream the way the scraper does."""
    queue = ArticleQueue(client, Settings().part(QueueConfig))
    queue.ensure_group()
    result = queue.add(articles(start, count))
    assert result.queued == count


def wait_until(condition: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
    """Poll until ``condition()`` holds; fail the test with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(POLL_S)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def docs_seen(client: redis.Redis) -> int:
    snap = read_snapshot(client)
    return -1 if snap is None else snap.docs_seen


def drained(client: redis.Redis) -> bool:
    """Every queued entry acknowledged: the stream is empty and nothing is pending."""
    queue = ArticleQueue(client, Settings().part(QueueConfig))
    return queue.length() == 0 and queue.pending() == 0


def checkpoint_docs(data_dir: Path) -> int:
    """docs_seen of the checkpoint in ``data_dir``."""
    model, _, _ = load_model(data_dir / CHECKPOINT_NAME)
    return model.docs_seen


def group_command(ranks: int) -> list[str]:
    """torchrun starting ``ranks`` workers on this machine (gloo over loopback)."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={ranks}",
        "--max-restarts=3",
        "-m",
        "service.cli",
        "worker",
    ]


class WorkerProcess:
    """``streamlda worker`` as a child process, its output in a log file."""

    def __init__(
        self, redis_url: str, data_dir: Path, log: Path, ranks: int = 1, **env: str
    ) -> None:
        """One worker, or a group of ``ranks`` under torchrun (restarting the group up to 3
        times when a rank dies)."""
        self.log = log
        self.offset = log.stat().st_size if log.exists() else 0  # the log may be shared
        environment = {
            **os.environ,
            **WORKER_ENV,
            "STREAMLDA_REDIS_URL": redis_url,
            "STREAMLDA_DATA_DIR": str(data_dir),
            **env,
        }
        self.handle = log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "worker"] if ranks == 1 else group_command(ranks),
            cwd=REPO,
            env=environment,
            stdout=self.handle,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def ready(self) -> bool:
        """This process has installed its stop handlers (it logs so right after)."""
        return b"worker started (pid" in self.log.read_bytes()[self.offset :]

    def terminate(self, timeout: float = DEADLINE_S) -> int:
        """SIGTERM once the stop handlers are in place (earlier, the default action kills)."""
        wait_until(lambda: self.ready() or self.process.poll() is not None, "the worker to start")
        self.process.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> None:
        self.process.kill()
        self.wait()

    def wait(self, timeout: float = DEADLINE_S) -> int:
        try:
            return self.process.wait(timeout=timeout)
        finally:
            self.handle.close()

    def ensure_dead(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.handle.close()


def started(settings: Settings) -> tuple[Any, threading.Event, threading.Thread]:
    """A worker built from ``settings``, running in a thread of this process until stopped:
    (the worker, its stop event, its thread)."""
    stop = threading.Event()
    worker = build_worker(settings, connect(settings.store), stop)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    return worker, stop, thread


def run_until(settings: Settings, done: Callable[[Any], bool]) -> Any:
    """A worker of :func:`started`, stopped once ``done(worker)`` holds (or it ended); it."""
    worker, stop, thread = started(settings)
    try:
        wait_until(lambda: done(worker) or not thread.is_alive(), "the worker to learn")
    finally:
        stopped(stop, thread)
    return worker


def stopped(stop: threading.Event, thread: threading.Thread) -> None:
    """Stop a worker of :func:`started` and wait for it to end."""
    stop.set()
    thread.join(60)
    assert not thread.is_alive()
