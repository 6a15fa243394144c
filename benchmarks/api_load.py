"""Load the API the way dashboards do while the worker learns, and say what it costs the worker.

Starts ``streamlda up`` (embedded Redis, replayed corpus, worker, one API process) in a
temporary data directory, waits until topics are served, measures the worker's docs/s for
``--baseline`` seconds, then runs ``--clients`` clients that each GET /topics and /perplexity
(open loop: a slow answer does not delay the next request; latency counts from the scheduled
send) for ``--duration`` seconds, measures the worker alone again, and prints requests
sent/answered, errors, p50/p95/p99 and the worker's docs/s during the load against the mean of
the two windows alone (its rate drifts over a run: with one client it read 0.70x "before").
``--mode`` says when clients poll:

* ``random`` (default): each client waits 0.5-1.5 s (uniform) between its requests, so the
  clients drift apart, as independent dashboards do;
* ``lockstep``: every client polls at the same instant once a second (the worst case);
* ``phase``: once a second each, at a random phase fixed per client.

Then the floor: the same open loop against a server that answers fixed bytes at once (no API
in it), while the worker still learns: what the machine's load and the generator alone make
of the latency, to read the API's p99 against (``--no-floor`` skips it). The generator's cyclic
collector is off during each open loop (one of its collections stopped every client for 57 ms).

Last, the closed loop: ``--max-clients`` clients GET /topics back to back for ``--max-duration``
seconds, ``--rounds`` times: the requests/s of one API process and its CPU time per request.
With ``--compare REPO`` another checkout's API (e.g. ``git archive`` of main into a directory)
is started too, as one more process on the same Redis, and measured the same way, its open
loop after ours (``--baseline-first``: before; the 30,000 articles may run out during the second,
leaving the machine quieter for it) and its closed-loop rounds interleaved with ours; medians
and ratios printed.

    .venv/bin/python -m benchmarks.api_load                       # 200 clients, 30 s, random
    .venv/bin/python -m benchmarks.api_load --compare /tmp/main   # against main, same run
    .venv/bin/python -m benchmarks.api_load --quick               # a short check that it runs
    .venv/bin/python -m benchmarks.api_load --topic-view 50       # + a topic's view, history

Goal: p99 < 10 ms, 0 errors, worker docs/s during load >= 0.9 x alone. Run on a quiet machine:
the load generator shares the CPU with the service it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx
import numpy as np

from benchmarks.api_clients import Results, closed_loop, dashboard, panel_paths, percentiles
from benchmarks.common import CORPORA, all_dev
from service.store.embedded_redis import free_port

GOAL_P99_MS = 10.0
GOAL_WORKER_RATIO = 0.9
STOP_TIMEOUT_S = 90.0


def start_up(args: argparse.Namespace, data_dir: Path, port: int, log: Path) -> subprocess.Popen:
    """``streamlda up`` on ``port``, its output in ``log``."""
    env = dict(os.environ)
    if args.vocab and "STREAMLDA_VOCAB" not in env:
        env["STREAMLDA_VOCAB"] = str(args.vocab)
    if args.quick:  # evaluate sooner so /perplexity has points within the short run
        env.setdefault("STREAMLDA_HELDOUT", "100")
        env.setdefault("STREAMLDA_EVAL_EVERY", "200")
    command = [sys.executable, "-m", "service.cli", "up", "--source", args.source]
    command += ["--data-dir", str(data_dir), "--port", str(port)]
    with log.open("wb") as out:
        return subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def stop_up(process: subprocess.Popen) -> int:
    """Ctrl-C (``up`` checkpoints and stops its children), killed if it takes too long."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            return process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    return process.wait()


async def wait_for_topics(client: httpx.AsyncClient, up: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if up.poll() is not None:
            raise SystemExit(f"streamlda up exited with code {up.returncode}")
        try:
            if (await client.get("/topics?top=1")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"no topics served after {timeout:.0f} s")
        await asyncio.sleep(0.5)


@dataclass
class WorkerRate:
    """The worker's progress, sampled from /stats: (updated_at, docs_seen) of each snapshot."""

    seen: list[tuple[float, int]] = field(default_factory=list)

    async def sample(self, client: httpx.AsyncClient, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            stats = (await client.get("/stats")).json()
            if stats["updated_at"] is not None:
                at = datetime.fromisoformat(stats["updated_at"]).timestamp()
                point = (at, int(stats["docs_seen"]))
                if not self.seen or self.seen[-1] != point:
                    self.seen.append(point)
            await asyncio.sleep(0.5)

    def docs_per_s(self) -> float | None:
        """Documents per second between the first and last snapshot seen (None if < 2)."""
        if len(self.seen) < 2 or self.seen[-1][0] <= self.seen[0][0]:
            return None
        (t0, d0), (t1, d1) = self.seen[0], self.seen[-1]
        return (d1 - d0) / (t1 - t0)


def rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def api_pid(up: subprocess.Popen) -> int | None:
    """The pid of ``up``'s API child (Linux /proc), or None where it cannot be found."""
    try:
        children = Path(f"/proc/{up.pid}/task/{up.pid}/children").read_text().split()
        for pid in children:
            if b" api" in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" "):
                return int(pid)
    except OSError:
        pass
    return None


def cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) used so far by ``pid``, or by this process when None."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def redis_url(data_dir: Path) -> str:
    """The embedded Redis's URL, from the config ``up`` wrote (port and password)."""
    config = (data_dir / "redis" / "redis.conf").read_text()
    port = re.search(r"^port (\d+)$", config, re.M)
    password = re.search(r'^requirepass "(.*)"$', config, re.M)
    assert port and password, "no port or password in the embedded Redis's config"
    return f"redis://:{password.group(1)}@127.0.0.1:{port.group(1)}/0"


def start_api(repo: Path, url: str, port: int, log: Path) -> subprocess.Popen:
    """``streamlda api`` of the checkout ``repo`` on ``port`` (one process)."""
    env = {**os.environ, "STREAMLDA_REDIS_URL": url, "PYTHONPATH": str(repo)}
    command = [sys.executable, "-m", "service", "api", "--port", str(port)]
    with log.open("ab") as out:
        return subprocess.Popen(
            command, cwd=repo, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


@dataclass
class Target:
    """One API process under test: its name, address and pid (for its CPU time)."""

    name: str
    host: str
    port: int
    pid: int | None


async def open_loop(args: argparse.Namespace, target: Target, client: httpx.AsyncClient) -> tuple:
    """The open-loop load on ``target`` with the worker's rate sampled meanwhile."""
    print(f"{target.name}: {args.clients} clients ({args.mode}) for {args.duration:.0f} s ...",
          flush=True)  # fmt: skip
    results, during = Results(), WorkerRate()
    clients = [
        dashboard(
            target.host,
            target.port,
            args.duration,
            results,
            args.etag,
            args.mode,
            panel_paths(args.topic_view),
        )
        for _ in range(args.clients)
    ]
    cpu_before = (cpu_s(target.pid) if target.pid else math.nan, cpu_s(None))
    with collector_off():
        await asyncio.gather(during.sample(client, args.duration + 1), *clients)
    api_cpu = (cpu_s(target.pid) if target.pid else math.nan) - cpu_before[0]
    load_cpu = cpu_s(None) - cpu_before[1]
    return results, during, api_cpu, load_cpu


@contextmanager
def collector_off() -> Iterator[None]:
    """The load generator's cyclic collector off during an open loop: one of its collections
    over the clients' tasks stopped every client for up to 57 ms, counted as the API's latency."""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


# A server that answers every request with fixed bytes (3 kB, as /topics' size order) at once.
FLOOR_SERVER = """
import asyncio, sys
REPLY = (b"HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\n"
         b"content-length: 3000\\r\\n\\r\\n" + b"x" * 3000)
async def answer(reader, writer):
    try:
        while True:
            while (line := await reader.readline()) not in (b"\\r\\n", b""):
                pass
            if not line:
                return
            writer.write(REPLY)
    finally:
        writer.close()
async def main():
    await (await asyncio.start_server(answer, "127.0.0.1", int(sys.argv[1]))).serve_forever()
asyncio.run(main())
"""


async def floor(args: argparse.Namespace) -> Results:
    """The same open loop against :data:`FLOOR_SERVER`: the latency that the machine's load and
    the generator set with no API in it (what the API's p99 is to be read against)."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", FLOOR_SERVER, str(port)])
    try:
        for _ in range(100):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        print(f"floor: {args.clients} clients ({args.mode}) on a server of fixed bytes for "
              f"{args.duration:.0f} s ...", flush=True)  # fmt: skip
        results = Results()
        with collector_off():
            await asyncio.gather(
                *(
                    dashboard(
                        "127.0.0.1",
                        port,
                        args.duration,
                        results,
                        False,
                        args.mode,
                        panel_paths(args.topic_view),
                    )
                    for _ in range(args.clients)
                )
            )
        return results
    finally:
        server.terminate()
        server.wait()


async def closed_round(args: argparse.Namespace, target: Target) -> tuple[float, float, list]:
    """One closed-loop round: (requests/s, API CPU microseconds per request, latencies)."""
    cpu_before = cpu_s(target.pid) if target.pid else math.nan
    started = time.perf_counter()
    loops = await asyncio.gather(
        *(closed_loop(target.host, target.port, args.max_duration) for _ in range(args.max_clients))
    )
    elapsed = time.perf_counter() - started
    answers = sum(n for n, _ in loops)
    cpu = (cpu_s(target.pid) if target.pid else math.nan) - cpu_before
    return answers / elapsed, cpu / max(answers, 1) * 1e6, [ms for _, lat in loops for ms in lat]


def print_open(args: argparse.Namespace, name: str, measured: tuple, rate_before: float | None):
    results, during, api_cpu, load_cpu = measured
    rate_during = during.docs_per_s()
    ratio = None if not rate_before or rate_during is None else rate_during / rate_before
    errors = sum(results.errors.values())
    panels = "/topics + /perplexity" + (" + a topic's view and history" if args.topic_view else "")
    print(f"{name}: open loop, {args.clients} clients ({args.mode}) x ({panels}), "
          f"{args.duration:.0f} s{' with If-None-Match' if args.etag else ''}:")  # fmt: skip
    print(f"  requests sent {results.sent}, answered {results.answered}, errors {errors}"
          + (f" {results.errors}" if results.errors else ""))  # fmt: skip
    print(f"  latency {percentiles(results.latencies_ms)}")
    cores = os.cpu_count() or 1
    print(f"  CPU seconds over the load: API {api_cpu:.1f}, load generator {load_cpu:.1f} "
          f"(of {cores * args.duration:.0f} on {cores} cores)")  # fmt: skip
    shown = "" if ratio is None else f" ({ratio:.2f} x)"
    print(f"  worker docs/s: alone (mean of before and after) {rate(rate_before)}, "
          f"during {rate(rate_during)}{shown}")  # fmt: skip
    return results, ratio


async def measure(
    args: argparse.Namespace, base: str, up: subprocess.Popen, data_dir: Path, log: Path
) -> bool:
    limits = httpx.Limits(max_connections=args.clients * 2 + 8, max_keepalive_connections=None)
    timeout = httpx.Timeout(args.request_timeout)
    url = httpx.URL(base)
    compared, floored = None, None
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=timeout) as client:
        print(f"waiting for topics at {base} ...", flush=True)
        await wait_for_topics(client, up, args.ready_timeout)
        targets = [Target("this checkout", url.host, url.port or 80, api_pid(up))]
        if args.compare:
            port = free_port()
            compared = start_api(args.compare.resolve(), redis_url(data_dir), port, log)
            other = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=timeout)
            async with other:
                await wait_for_topics(other, up, args.ready_timeout)
            targets.append(Target("baseline", "127.0.0.1", port, compared.pid))
        try:
            before = WorkerRate()
            print(f"worker alone for {args.baseline:.0f} s ...", flush=True)
            await before.sample(client, args.baseline)
            order = targets[::-1] if args.baseline_first else targets
            opened_by = {t.name: await open_loop(args, t, client) for t in order}
            opened = [opened_by[t.name] for t in targets]
            floored = await floor(args) if args.floor else None
            # The worker alone again: its rate drifts over a run (longer documents, scoring), so
            # the load is judged against the mean of the windows either side of it.
            after = WorkerRate()
            print(f"worker alone again for {args.baseline:.0f} s ...", flush=True)
            await after.sample(client, args.baseline)
            print(f"closed loop: {args.max_clients} clients x {args.max_duration:.0f} s, "
                  f"{args.rounds} rounds per API process, interleaved ...", flush=True)  # fmt: skip
            closed: dict[str, list[tuple[float, float, list]]] = {t.name: [] for t in targets}
            for _ in range(args.rounds):
                for target in targets:
                    closed[target.name].append(await closed_round(args, target))
        finally:
            if compared is not None:
                compared.send_signal(signal.SIGTERM)
                compared.wait(STOP_TIMEOUT_S)

    print()
    rate_before = before.docs_per_s()
    rate_after = after.docs_per_s()
    if rate_before and rate_after:
        print(f"worker alone: before {rate_before:.1f}, after {rate_after:.1f} docs/s")
    alone = (rate_before + rate_after) / 2 if rate_before and rate_after else rate_before
    outcomes = [
        print_open(args, t.name, measured, alone)
        for t, measured in zip(targets, opened, strict=True)
    ]
    results, ratio = outcomes[0]
    if floored is not None:
        print(f"floor: the same clients on a server of fixed bytes (the machine and the load "
              f"generator alone): {percentiles(floored.latencies_ms)}, "
              f"errors {sum(floored.errors.values())}")  # fmt: skip
    medians = {}
    for name, rounds in closed.items():
        rates = [r for r, _, _ in rounds]
        cpus = [c for _, c, _ in rounds]
        medians[name] = statistics.median(rates)
        latencies = [ms for _, _, lat in rounds for ms in lat]
        print(f"{name}: closed loop, {args.max_clients} clients on /topics: median "
              f"{medians[name]:.0f} requests/s (rounds: {', '.join(f'{r:.0f}' for r in rates)}), "
              f"API CPU {statistics.median(cpus):.0f} us per request, "
              f"{percentiles(latencies)}")  # fmt: skip
    if "baseline" in medians:
        ours, theirs = medians["this checkout"], medians["baseline"]
        print(f"closed-loop requests/s per API process: {ours:.0f} against {theirs:.0f} "
              f"({ours / theirs:.2f} x)")  # fmt: skip
    p99 = float(np.percentile(results.latencies_ms, 99)) if results.latencies_ms else float("inf")
    errors = sum(results.errors.values())
    goals = {
        f"p99 < {GOAL_P99_MS:.0f} ms": p99 < GOAL_P99_MS,
        "0 errors": errors == 0,
        f"worker docs/s during >= {GOAL_WORKER_RATIO} x alone": ratio is not None
        and ratio >= GOAL_WORKER_RATIO,
    }
    print(
        "goals: " + ", ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in goals.items())
    )
    return all(goals.values())


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--source", help="default: the six DEV shards as one file (30,000 articles)")
    vocab = CORPORA / "vocab-7702.txt"
    p.add_argument("--vocab", type=Path, default=vocab if vocab.is_file() else None)
    p.add_argument("--clients", type=int, default=200, help="dashboards polling (open loop)")
    p.add_argument("--duration", type=float, default=30.0, help="seconds of open-loop load")
    p.add_argument("--baseline", type=float, default=10.0, help="seconds of worker alone")
    p.add_argument("--max-clients", type=int, default=4, help="closed-loop clients")
    p.add_argument("--max-duration", type=float, default=10.0, help="seconds of closed loop")
    p.add_argument("--etag", action="store_true", help="clients send If-None-Match")
    p.add_argument(
        "--topic-view",
        type=int,
        default=0,
        metavar="K",
        help="each client also polls one of the K topics' view (?uncertainty=true) and history",
    )
    p.add_argument(
        "--mode", choices=("random", "lockstep", "phase"), default="random",
        help="when clients poll (see above)",
    )  # fmt: skip
    p.add_argument("--rounds", type=int, default=3, help="closed-loop rounds per API process")
    p.add_argument("--compare", type=Path, help="another checkout's API, measured alike")
    p.add_argument(
        "--baseline-first",
        action="store_true",
        help="the compared API's open loop first (the stream may run dry during the second)",
    )
    p.add_argument(
        "--no-floor", dest="floor", action="store_false",
        help="skip the floor (the same open loop on a server of fixed bytes)",
    )  # fmt: skip
    p.add_argument("--request-timeout", type=float, default=30.0)
    p.add_argument("--ready-timeout", type=float, default=600.0, help="seconds to first topics")
    p.add_argument("--data-dir", type=Path, help="default: a temporary directory")
    p.add_argument("--quick", action="store_true", help="20 clients, 5 s load: a smoke run")
    args = p.parse_args(argv)
    if args.quick:
        args.clients, args.duration, args.baseline = min(args.clients, 20), 5.0, 4.0
        args.max_duration, args.rounds = 3.0, 1
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop `up` (finally below)
    with tempfile.TemporaryDirectory(prefix="api-load-") as scratch:
        data_dir = args.data_dir or Path(scratch) / "data"
        if args.source is None:
            args.source = f"jsonl:{all_dev(Path(scratch))}"
        log = Path(scratch) / "up.log"
        port = free_port()
        up = start_up(args, data_dir, port, log)
        try:
            met = asyncio.run(measure(args, f"http://127.0.0.1:{port}", up, data_dir, log))
        finally:
            code = stop_up(up)
            if code != 0:
                print(f"streamlda up exited with code {code}; its log:\n"
                      + log.read_text(errors="replace")[-3000:])  # fmt: skip
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
