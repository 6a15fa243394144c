"""`streamlda up` at a real size: each process's peak memory, the worker's docs/s, how fresh
the snapshot stays, and what the API answers meanwhile.

Starts `up` on the six DEV shards as one file (30,000 articles, written outside the
repository) with K topics over W words (the vocabulary counted over ``--vocab-docs``
articles), polls `/stats` and `/topics` every ``--every`` seconds while the worker learns,
posts three `/infer` requests at the end, stops `up` with SIGINT and prints every child's peak
RSS: the kernel's own peak (VmHWM of /proc/PID/status, read at each poll: every transient up to
the last poll counts) and the largest RSS `ps` showed at a poll.

    .venv/bin/python -m benchmarks.up_size --topics 1000 --words 100000 --seconds 240
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks.common import CORPORA, all_dev


def _children(root: int) -> list[tuple[int, int, str]]:
    """(pid, RSS in MB, command) of ``root`` and every process below it."""
    out = subprocess.run(["ps", "-eo", "pid,ppid,rss,args"], capture_output=True, text=True)
    rows = [line.split(None, 3) for line in out.stdout.splitlines()[1:]]
    tree, grown = {root}, True
    while grown:
        grown = False
        for pid, ppid, _, _ in rows:
            if int(ppid) in tree and int(pid) not in tree:
                tree.add(int(pid))
                grown = True
    return [(int(p), int(rss) // 1024, args) for p, _, rss, args in rows if int(p) in tree]


def _kernel_peak_mb(pid: int) -> int:
    """The process's peak resident set so far (VmHWM), in MB; 0 where it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def _role(command: str) -> str:
    for role in ("worker", "api", "scrape"):
        if f"-m service {role}" in command:
            return role
    if "spawn_main" in command:
        return "scoring process"
    if "redis-server" in command or "redis-aof" in command:
        return "redis" + (" (AOF rewrite fork)" if "aof" in command else "")
    return "up" if " up " in command else command[:40]


def _get(url: str) -> tuple[bytes, float]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as response:
        body = response.read()
    return body, (time.perf_counter() - started) * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--topics", type=int, default=1000)
    p.add_argument("--words", type=int, default=100_000)
    p.add_argument("--vocab-docs", type=int, default=30_000)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--seconds", type=float, default=240.0, help="how long to poll")
    p.add_argument("--every", type=float, default=5.0)
    p.add_argument("--port", type=int, default=8123)
    args = p.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="streamlda-up-size-"))
    source = all_dev(Path(tempfile.gettempdir()) / "streamlda-bench")
    env = dict(
        os.environ,
        STREAMLDA_TOPICS=str(args.topics),
        STREAMLDA_VOCAB_SIZE=str(args.words),
        STREAMLDA_VOCAB_DOCS=str(args.vocab_docs),
        STREAMLDA_DTYPE=args.dtype,
    )
    command = [sys.executable, "-m", "service.cli", "up", "--source", f"jsonl:{source}"]
    command += ["--data-dir", str(scratch / "data"), "--port", str(args.port)]
    log = (scratch / "up.log").open("w")
    up = subprocess.Popen(
        command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{args.port}"
    peak: dict[str, int] = {}  # the largest RSS seen at a poll
    hwm: dict[str, int] = {}  # the kernel's peak

    def sample() -> None:
        for pid, rss, cmd in _children(up.pid):
            role = _role(cmd)
            peak[role] = max(peak.get(role, 0), rss)
            hwm[role] = max(hwm.get(role, 0), _kernel_peak_mb(pid))

    started = time.time()
    print("     s   docs  docs/s  /stats ms  /topics ms", flush=True)
    try:
        while time.time() - started < args.seconds:
            time.sleep(args.every)
            sample()
            try:
                stats, stats_ms = _get(f"{base}/stats")
                _, topics_ms = _get(f"{base}/topics?top=10")
            except OSError as exc:  # not serving yet (vocabulary) or 503 before a snapshot
                print(f"{time.time() - started:6.0f}  ({type(exc).__name__})", flush=True)
                continue
            s = json.loads(stats)
            print(
                f"{time.time() - started:6.0f} {s.get('docs_seen', 0):6d} "
                f"{s.get('docs_per_s') or 0.0:7.1f} {stats_ms:10.1f} {topics_ms:11.1f}",
                flush=True,
            )
        with gzip.open(CORPORA / "dev-05.jsonl.gz", "rt") as shard:
            text = json.loads(shard.readline())["text"][:20_000]
        for i in range(3):
            request = urllib.request.Request(
                f"{base}/infer",
                data=json.dumps({"text": text}).encode(),
                headers={"Content-Type": "application/json"},
            )
            t0 = time.perf_counter()
            with urllib.request.urlopen(request, timeout=120) as response:
                response.read()
            print(f"/infer {i + 1}: {(time.perf_counter() - t0) * 1000:.0f} ms", flush=True)
            sample()
    finally:
        os.killpg(up.pid, signal.SIGINT)
        t0 = time.time()
        while up.poll() is None and time.time() - t0 < 300:  # the final checkpoint counts too
            sample()
            time.sleep(0.5)
        up.wait(timeout=1)
        print(f"stop (checkpoint included): {time.time() - t0:.1f} s; log: {scratch / 'up.log'}")
    print("peak RSS (VmHWM)  largest at a poll  process")
    for role, mb in sorted(hwm.items(), key=lambda item: -item[1]):
        print(f"      {mb:6d} MB       {peak[role]:6d} MB  {role}")


if __name__ == "__main__":
    main()
