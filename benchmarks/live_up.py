"""One run of ``streamlda up`` for the live benchmark: started on a replayed file at a pace,
``/stats`` polled until the worker has placed every article, then stopped with SIGTERM (the
worker's final checkpoint)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, get, stop_up
from service.learn.model_store import CHECKPOINT_NAME
from service.store.embedded_redis import free_port

POLL_S = 0.25  # the API's refresh (api_refresh_s): no snapshot goes unseen


STALL_S = 300.0  # neither the scraper nor the worker moved for this long: give up


STOP_TIMEOUT_S = 300.0  # up's SIGTERM: the worker's final checkpoint of K x W


WORKER_PID = re.compile(rb"started worker \(pid (\d+)\)")


@dataclass(frozen=True)
class Poll:
    """One answer of ``/stats``: the worker's last snapshot and the scraper's counters."""

    at: float  # time.time() of the poll
    snapshot_at: float | None  # the worker snapshot's updated_at (None before its first step)
    docs_seen: int
    placed: int  # docs_seen + held-out + empty: articles the worker has placed
    revisited: int  # reservoir_passes x reservoir_articles
    passes: float
    docs_per_s: float  # the learner's fresh docs per second of its steps (0 while idle)
    queued: int
    batches: int
    scraper_at: float | None
    cpu_s: float | None  # the worker process's user + system seconds
    wait_s: float | None = None  # the worker's fresh_wait_s and fresh_wait_p95_s (last minute)
    wait_p95_s: float | None = None

    @classmethod
    def of(cls, at: float, stats: dict[str, Any], cpu_s: float | None) -> Poll:
        worker = stats.get("worker") or {}
        scraper = stats.get("scraper") or {}
        docs_seen = int(stats.get("docs_seen") or 0)
        updated = stats.get("updated_at")
        passes = float(stats.get("reservoir_passes") or 0.0)
        return cls(
            at=at,
            snapshot_at=None if updated is None else _epoch(updated),
            docs_seen=docs_seen,
            placed=docs_seen
            + int(worker.get("heldout_docs", 0))
            + int(worker.get("empty_docs", 0)),
            revisited=round(passes * int(stats.get("reservoir_articles") or 0)),
            passes=passes,
            docs_per_s=float(stats.get("docs_per_s") or 0.0),
            queued=int(scraper.get("queued", 0)),
            batches=int(scraper.get("batches", 0)),
            scraper_at=scraper.get("updated_at"),
            cpu_s=cpu_s,
            wait_s=stats.get("fresh_wait_s"),
            wait_p95_s=stats.get("fresh_wait_p95_s"),
        )


@dataclass
class Live:
    """One run of ``up``: its polls, the end of its stream, its checkpoint and its figures."""

    rate: float
    revisit: bool
    started: float  # time.time() when up was started
    ended: float  # time.time() of the poll that saw every article placed
    polls: list[Poll]
    checkpoint: Path
    worker_starts: int  # more than 1: the worker was restarted (its CPU time is then partial)
    counters: dict[str, int] = field(default_factory=dict)  # the worker's, at the end

    @property
    def name(self) -> str:
        return "revisit on" if self.revisit else "revisit off"


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "service", *args]


def cpu_seconds(pid: int | None) -> float | None:
    """User + system seconds of process ``pid`` so far (None: no such process)."""
    if pid is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after the command name: field 3 on
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker_pids(log: Path) -> list[int]:
    """The worker pids ``up`` logged, in order (several: it was restarted)."""
    try:
        return [int(m) for m in WORKER_PID.findall(log.read_bytes())]
    except OSError:
        return []


def run_up(
    env: dict[str, str], articles: Path, expected: int, rate: float, revisit: bool, work: Path
) -> Live:
    """``up`` on ``articles`` at ``rate`` a second until the worker has placed all ``expected``,
    polling ``/stats``; then SIGTERM, which leaves the final checkpoint."""
    name = f"up-{rate:g}-{'on' if revisit else 'off'}"
    data, log = work / name, work / f"{name}.log"
    if data.exists():  # up would resume its checkpoint
        raise SystemExit(f"{data} exists: name an empty --work folder")
    port = free_port()
    run_env = {**env, "STREAMLDA_REVISIT": "true" if revisit else "false"}
    args = command("up", "--source", f"jsonl:{articles}", "--replay-rate", f"{rate:g}")
    args += ["--data-dir", str(data), "--port", str(port)]
    print(f"{name}: {expected} articles at {rate:g}/s (log {log})", file=sys.stderr, flush=True)
    polls: list[Poll] = []
    started = time.time()
    with log.open("wb") as out:
        up = subprocess.Popen(args, cwd=REPO, env=run_env, stdout=out, stderr=subprocess.STDOUT)
    try:
        moved, progress = time.monotonic(), (-1, -1)
        while True:
            if up.poll() is not None:
                raise failed(f"{name}: up exited with {up.returncode}", log)
            pids = worker_pids(log)
            stats = get(port, "/stats")
            if stats is not None:
                poll = Poll.of(time.time(), stats, cpu_seconds(pids[-1] if pids else None))
                polls.append(poll)
                if poll.placed >= expected and poll.queued >= expected:
                    counters = {k: int(v) for k, v in (stats.get("worker") or {}).items()}
                    break
                if (poll.queued, poll.placed) != progress:
                    moved, progress = time.monotonic(), (poll.queued, poll.placed)
            if time.monotonic() - moved > STALL_S:
                raise failed(f"{name}: no progress for {STALL_S:.0f} s at {progress}", log)
            time.sleep(POLL_S)
    finally:
        stop(up)
    if up.returncode != 0:
        raise failed(f"{name}: up exited with {up.returncode} when stopped", log)
    return Live(rate, revisit, started, polls[-1].at, polls, data / CHECKPOINT_NAME,
                len(worker_pids(log)), counters)  # fmt: skip


def failed(message: str, log: Path, lines: int = 30) -> SystemExit:
    """The error to end with: ``message`` and the end of ``up``'s log (in a folder that is
    removed on the way out unless ``--work`` named it)."""
    tail = log.read_text(errors="replace").splitlines()[-lines:] if log.exists() else []
    return SystemExit("\n".join([f"{message}; the end of {log}:", *tail]))


def stop(up: subprocess.Popen[bytes]) -> None:
    stop_up(up, STOP_TIMEOUT_S)


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
