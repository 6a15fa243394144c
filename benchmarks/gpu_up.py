"""The GPU check's ``up`` part: ``streamlda up`` on the device for a minute from its first
learned article, the worker's docs/s from ``/stats``, and every topic served by ``/topics``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.common import REPO
from benchmarks.gpu_context import GRACE_S, SHARDS, Context, PartFailed


def part_up(ctx: Context) -> None:
    """``streamlda up`` on a replay of the data's articles, device cuda (the CPU in a dry
    run), shipped settings otherwise, for ``up_seconds`` from its first learned document;
    the worker's docs/s from ``/stats``, and ``/topics`` must serve every topic."""
    from service.store.embedded_redis import free_port

    sizes = ctx.sizes
    work = Path(tempfile.mkdtemp(prefix="gpu-check-up-"))
    try:
        source = _replay_file(ctx, work)
        port = free_port()
        env = {**os.environ, **sizes.up_env, "STREAMLDA_DEVICE": "cpu" if ctx.dry_run else "cuda"}
        command = [
            sys.executable, "-m", "service", "up", "--source", f"jsonl:{source}",
            "--data-dir", str(work / "data"), "--port", str(port),
        ]  # fmt: skip
        log = ctx.logs / "up-service.log"
        with log.open("wb") as out:
            up = subprocess.Popen(
                command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
            )  # fmt: skip
        try:
            result = _watch_up(ctx, up, port, log)
        finally:
            _stop(up, max(5.0, ctx.left() + GRACE_S - 3))
        result["exit_after_stop"] = up.returncode
        text = log.read_text(errors="replace")
        result["cuda_kernel_fallback_warning"] = "numba cannot compile" in text
        ctx.emit("up", **result)
        if not result["topics_served"]:
            raise PartFailed("/topics served no topics")
        if result["docs_seen"] <= 0:
            raise PartFailed("the worker learned nothing")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _replay_file(ctx: Context, work: Path) -> Path:
    """The data's shards as one gzip file (members back to back), or the first shard alone
    in a dry run."""
    shards = sorted(ctx.data.glob("dev-*.jsonl.gz"))
    if not shards:
        raise PartFailed(f"no dev-*.jsonl.gz in {ctx.data}")
    if ctx.dry_run:
        return shards[0]
    target = work / "replay.jsonl.gz"
    with target.open("wb") as out:
        for shard in shards[: len(SHARDS)]:
            with shard.open("rb") as part:
                shutil.copyfileobj(part, out)
    return target


def _get(port: int, path: str) -> Any:
    """The API's JSON answer, or None while it is not up (or not ready)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return json.loads(reply.read())
    except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
        return None


def _watch_up(ctx: Context, up: subprocess.Popen[bytes], port: int, log: Path) -> dict[str, Any]:
    """Poll ``/stats`` each second: the window starts at the first learned document and lasts
    ``up_seconds`` (less if this part's deadline comes first, keeping time to stop)."""
    stop_reserve = 15.0 if not ctx.dry_run else 10.0
    polls: list[tuple[float, int, float]] = []
    first: float | None = None
    stats: dict[str, Any] | None = None
    launched = time.monotonic()
    while True:
        if up.poll() is not None:
            raise PartFailed(f"up exited with {up.returncode} (see {log.name})")
        now = time.monotonic()
        answer = _get(port, "/stats")
        if answer is not None:
            stats = answer
            seen = int(answer.get("docs_seen") or 0)
            if seen > 0 and first is None:
                first = now
            if first is not None:
                polls.append((now, seen, float(answer.get("docs_per_s") or 0.0)))
        window_over = first is not None and now - first >= ctx.sizes.up_seconds
        if window_over or ctx.left() < stop_reserve:
            break
        time.sleep(1.0)
    topics = _get(port, "/topics")
    served = len(topics["topics"]) if isinstance(topics, dict) and "topics" in topics else 0
    rates = [rate for _, _, rate in polls if rate > 0]
    fresh = 0.0
    if len(polls) > 1:
        # fresh docs/s: from the first learned document to the last new one (then revisits)
        top = max(seen for _, seen, _ in polls)
        reached = next(at for at, seen, _ in polls if seen == top)
        if reached > polls[0][0]:
            fresh = (top - polls[0][1]) / (reached - polls[0][0])
    stats = stats or {}
    return {
        "device": stats.get("device"),
        "topics": stats.get("topics"),
        "vocab_size": stats.get("vocab_size"),
        "started_learning_after_s": None if first is None else round(first - launched, 1),
        "window_s": round(polls[-1][0] - polls[0][0], 1) if polls else 0.0,
        "docs_seen": int(stats.get("docs_seen") or 0),
        "fresh_docs_per_s": round(fresh, 1),
        "worker_docs_per_s": round(statistics.median(rates), 1) if rates else 0.0,
        "worker_docs_per_s_max": round(max(rates), 1) if rates else 0.0,
        "revisit_docs_per_s": stats.get("revisit_docs_per_s"),
        "tokens_per_s": stats.get("tokens_per_s"),
        "topics_served": served,
    }


def _stop(up: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM (up stops its children in order, the worker checkpointing), then SIGKILL."""
    if up.poll() is None:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()
