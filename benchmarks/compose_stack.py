"""The compose stack's timings and its worker's rate against ``streamlda up`` on the same replay.

Starts the stack (deploy/compose/compose.sh, as ``make compose-up``) in its own project from
empty volumes on a replay of ``--file``: seconds to the API answering (the build included when
an image is missing or changed), then to the first topics served, and the worker's wall-clock
docs/s from its first trained documents to ``--docs`` (as benchmarks.pipeline measures ``up``);
then down and up again: seconds to the restarted worker's first snapshot. Then ``streamlda up``
on the same file, and the ratio. The project and its volumes are removed at the end.

    .venv/bin/python -m benchmarks.compose_stack
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common import CORPORA, REPO, get
from benchmarks.pipeline import up_rate
from service.store.embedded_redis import free_port

SCRIPT = REPO / "deploy" / "compose" / "compose.sh"
POLL_S = 0.5


def script(env: dict[str, str], *args: str) -> float:
    """Seconds the script took; fails on its failure."""
    began = time.monotonic()
    subprocess.run([str(SCRIPT), *args], env=env, check=True)
    return time.monotonic() - began


def until(check: Callable[[], object], timeout: float = 1800) -> float:
    """Poll ``check`` until true; the monotonic time it was."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return time.monotonic()
        time.sleep(POLL_S)
    raise SystemExit("timed out")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--file", type=Path, default=CORPORA / "dev-00.jsonl.gz")
    p.add_argument("--docs", type=int, default=4000, help="documents trained (after held-out)")
    args = p.parse_args()
    port = free_port()
    env = {**os.environ, "COMPOSE_PROJECT_NAME": "streamlda-bench"}
    env.update({"STREAMLDA_API_PORT": str(port), "STREAMLDA_SOURCE": f"jsonl:{args.file}"})

    def seen() -> int:
        return int((get(port, "/stats") or {}).get("docs_seen") or 0)

    script(env, "down", "--volumes")
    try:
        began = time.monotonic()
        up_s = script(env, "up")
        first_at = until(lambda: seen() > 0 and (get(port, "/topics") or {}).get("topics"))
        first_docs = seen()
        done_at = until(lambda: seen() >= args.docs)
        rate = (seen() - first_docs) / max(done_at - first_at, 1e-9)
        script(env, "down")
        restarted, again = datetime.now(UTC), time.monotonic()
        script(env, "up")

        def resumed() -> bool:
            stats = get(port, "/stats") or {}
            at = stats.get("updated_at")
            return bool(at) and datetime.fromisoformat(at) > restarted

        resume_s = until(resumed) - again
        after = seen()
    finally:
        script(env, "down", "--volumes")
    local_env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLDA_")}
    with tempfile.TemporaryDirectory(prefix="streamlda-bench-") as tmp:
        work = Path(tmp)
        local, _ = up_rate(local_env, f"jsonl:{args.file}", args.docs, work / "up", work / "log")
    print(f"up (build + start)     {up_s:8.1f} s")
    print(f"first topics           {first_at - began:8.1f} s after the start")
    print(f"resume                 {resume_s:8.1f} s to the worker's snapshot, at {after} docs")
    print(f"stack worker           {rate:8.1f} docs/s")
    print(f"streamlda up           {local:8.1f} docs/s")
    print(f"ratio stack/up         {rate / local:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
