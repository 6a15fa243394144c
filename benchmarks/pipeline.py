"""Is ``streamlda up`` as fast as its learner? docs/s of ``up`` replaying a file vs ``train``.

Runs ``streamlda train --json`` on the first documents of a JSON-lines file (its
``docs_per_second`` counts learner time only), then ``streamlda up`` on the same file with the
same settings (embedded Redis, scraper, worker, API), reading ``docs_seen`` from the API's
``/stats`` until as many documents are trained. ``up``'s rate is wall-clock, from its first
trained minibatch to the last, so it includes reading, checkpoints and publishing. Prints both,
their ratio and the goal (>= 0.8). Settings come from STREAMLDA_* variables as usual;
``--quick`` is a smoke run on a few hundred documents.

    .venv/bin/python -m benchmarks.pipeline --quick
    .venv/bin/python -m benchmarks.pipeline --docs 19000
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import CORPORA, REPO, all_dev, get
from service.store.embedded_redis import free_port

GOAL = 0.8
POLL_S = 0.5
STOP_TIMEOUT_S = 120.0


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "service", *args]


def train_rate(env: dict[str, str], source: str, docs: int, out: Path) -> float:
    """docs/s of ``streamlda train`` (learner seconds only), from its last JSON row."""
    run = subprocess.run(
        command("train", "--source", source, "--docs", str(docs), "--out", str(out), "--json"),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    if not rows:
        raise SystemExit(f"train printed no rows:\n{run.stdout}\n{run.stderr}")
    return float(rows[-1]["docs_per_second"])


def docs_seen(port: int) -> int:
    stats = get(port, "/stats")
    return 0 if stats is None else int(stats.get("docs_seen") or 0)


def evaluations(port: int) -> tuple[int, int]:
    """(perplexity points published, evaluations skipped) so far: what the speed cost."""
    points, stats = get(port, "/perplexity"), get(port, "/stats")
    published = 0 if points is None else len(points["history"])
    skipped = 0 if stats is None else int(stats["worker"].get("evals_skipped", 0))
    return published, skipped


def up_rate(
    env: dict[str, str], source: str, docs: int, data_dir: Path, log: Path
) -> tuple[float, tuple[int, int]]:
    """Wall-clock docs/s of ``streamlda up`` from its first trained documents to ``docs``, and
    its perplexity points published and skipped by then."""
    port = free_port()
    args = command("up", "--source", source, "--data-dir", str(data_dir), "--port", str(port))
    with log.open("wb") as out:
        up = subprocess.Popen(args, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        first: tuple[float, int] | None = None
        while True:
            if up.poll() is not None:
                raise SystemExit(f"up exited with {up.returncode}; see {log}")
            seen, now = docs_seen(port), time.monotonic()
            if seen > 0 and first is None:
                first = (now, seen)
            if first is not None and seen >= docs:
                return (seen - first[1]) / max(now - first[0], 1e-9), evaluations(port)
            time.sleep(POLL_S)
    finally:
        if up.poll() is None:
            up.send_signal(signal.SIGTERM)
            try:
                up.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                up.kill()
                up.wait()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--file", type=Path, help="default: the six DEV shards as one file (30,000)")
    p.add_argument("--vocab", type=Path, default=CORPORA / "vocab-7702.txt")
    p.add_argument("--docs", type=int, default=19_000, help="documents trained (after held-out)")
    p.add_argument("--quick", action="store_true", help="smoke run: 600 documents, small eval")
    args = p.parse_args()
    env = {**os.environ, "STREAMLDA_VOCAB": str(args.vocab)}
    env.pop("STREAMLDA_REDIS_URL", None)  # up starts its own Redis
    docs = args.docs
    if args.quick:
        docs = 600
        env.setdefault("STREAMLDA_HELDOUT", "100")
        env.setdefault("STREAMLDA_EVAL_EVERY", "200")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop `up` (finally below)
    with tempfile.TemporaryDirectory(prefix="streamlda-bench-") as tmp:
        work = Path(tmp)
        source = f"jsonl:{args.file or all_dev(work)}"
        learner = train_rate(env, source, docs, work / "train")
        pipeline, (points, skipped) = up_rate(env, source, docs, work / "up", work / "up.log")
    ratio = pipeline / learner
    print(f"documents            {docs}")
    print(f"train (learner only) {learner:8.1f} docs/s")
    print(f"up (wall clock)      {pipeline:8.1f} docs/s")
    verdict = "met" if ratio >= GOAL else "NOT met"
    print(f"ratio up/train       {ratio:8.2f}  (goal >= {GOAL}: {verdict})")
    print(f"perplexity points    {points:5d} published by then, {skipped} evaluations skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
