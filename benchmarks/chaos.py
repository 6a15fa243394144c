"""Chaos soak: ``streamlda up`` on a long replay, a random child SIGKILLed every ``--every`` s.

Writes ``--articles`` records (the DEV corpus over and over, each pass with its own page ids, so
every line is a new article) to one plain JSON-lines file, runs ``streamlda up --source
jsonl:FILE`` (embedded Redis, scraper, worker, API; a free port, a fresh data directory) and,
for ``--minutes`` (or until ``--kills`` kills), kills one of its children (one of ``--kinds``:
scraper, redis, worker, api; chosen at random; the pid ``up`` logged last for it) every
``--every`` seconds. ``/stats`` is polled throughout. Per kill it measures, from the kill: the
API answering again, ``docs_seen`` past its value before the kill and the scrapers' ``queued``
rising again (new articles queued); after a Redis kill also Redis answering PING again and,
from then, the worker's snapshot in Redis showing more documents learned than Redis came back
with ("learning resumes"). The report gives each as median and max over the kills of a kind.
Availability is the share of polls the API answered. At the end the kills stop, the stream is
let drain for up to ``--drain`` seconds with the scrapers frozen (SIGSTOP), and it reconciles:
queued = learned (docs_seen) + held out + empty + dropped + still in the stream; also the
scrapers' duplicates and re-reads (a file replayed once has neither unless a scraper read lines
again).

    .venv/bin/python -m benchmarks.chaos --minutes 2 --articles 20000   # a smoke run
    .venv/bin/python -m benchmarks.chaos --minutes 10 --json /tmp/chaos.json
    .venv/bin/python -m benchmarks.chaos --kinds redis --kills 10   # Redis recovery alone
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from benchmarks.common import REPO, SHARED, all_dev, stop_up
from service.ingest.sources.jsonl import JsonlSource
from service.keys import SNAPSHOT_KEY
from service.store.embedded_redis import free_port

KINDS = ("scraper", "redis", "worker", "api")
POLL_S = 0.25
REDIS_POLL_S = 0.05
REDIS_PORT = re.compile(r"^port (\d+)$", re.M)
REDIS_PASSWORD = re.compile(r'^requirepass "(.*)"$', re.M)
STARTED = re.compile(rb"started (scraper|redis|worker|api) \(pid (\d+)\)")
STOP_TIMEOUT_S = 300.0
SETTLE_S = 3.0


def prepare(path: Path, corpora: Path, articles: int) -> int:
    """``articles`` plain records at ``path``: DEV's articles again and again, each pass with
    its own page ids; how many were written."""
    dev = list(JsonlSource(all_dev(path.parent / "dev", corpora)))
    written = 0
    with path.open("w", encoding="utf-8") as out:
        for n in itertools.count():
            for article in dev:
                if written == articles:
                    return written
                record = {"id": f"{n}-{article.id}", "title": article.title, "text": article.text}
                out.write(json.dumps(record) + "\n")
                written += 1
    return written


def stats(port: int) -> dict[str, Any] | None:
    """``/stats``, or None while the API does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=2) as reply:
            answer: dict[str, Any] = json.loads(reply.read())
            return answer
    except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
        return None


def pids(log: Path) -> dict[str, int]:
    """The pid ``up`` logged last for each child."""
    return {m[0].decode(): int(m[1]) for m in STARTED.findall(log.read_bytes())}


@dataclass
class Kill:
    """One SIGKILL and how long each part took to come back (None: not within the interval)."""

    kind: str
    at: float
    api_s: float | None = None
    docs_s: float | None = None
    queued_s: float | None = None
    redis_s: float | None = None  # Redis answering PING again (Redis kills only)
    learn_s: float | None = None  # from then to a snapshot with more documents learned


def redis_client(data: Path) -> redis.Redis:
    """A client of the embedded Redis, from the config ``up`` wrote in ``data``."""
    config = (data / "redis" / "redis.conf").read_text()
    port, password = REDIS_PORT.search(config), REDIS_PASSWORD.search(config)
    assert port and password, "no port or password in the embedded Redis's config"
    return redis.Redis(
        host="127.0.0.1",
        port=int(port[1]),
        password=password[1],  # URL-safe: never escaped in the config
        socket_timeout=1.0,
        socket_connect_timeout=1.0,
        retry=Retry(NoBackoff(), 0),  # each PING tells, at once, whether Redis answers
    )


def learned(client: redis.Redis) -> int | None:
    """docs_seen of the snapshot in Redis; None while Redis does not answer (or holds none)."""
    try:
        raw = client.get(SNAPSHOT_KEY)
    except (redis.RedisError, OSError):
        return None
    return None if raw is None else int(json.loads(raw)["docs_seen"])


def watch_redis(kill: Kill, client: redis.Redis, until: float) -> None:
    """Fill in ``kill.redis_s`` (PING answered again) and ``kill.learn_s`` (then, a snapshot
    with more documents than the one Redis came back with), polling until ``until``."""
    back: int | None = None
    gone = False  # a dying Redis can still answer: PING must fail first
    while time.monotonic() < until:
        now = time.monotonic()
        if kill.redis_s is None:
            try:
                client.ping()
            except (redis.RedisError, OSError):
                gone = True
                time.sleep(REDIS_POLL_S)
                continue
            if not gone:
                client.connection_pool.disconnect()
                time.sleep(REDIS_POLL_S)
                continue
            kill.redis_s = now - kill.at
            client.connection_pool.disconnect()  # a fresh connection for the reads
        seen = learned(client)
        if seen is not None:
            if back is None:
                back = seen
            elif seen > back:
                kill.learn_s = max(0.0, now - kill.at - kill.redis_s)
                return
        time.sleep(REDIS_POLL_S)


@dataclass
class Totals:
    """The reconciliation at the end."""

    queued: int
    learned: int
    heldout: int
    empty: int
    dropped: int
    in_stream: int
    duplicates: int
    rereads: int

    @property
    def unaccounted(self) -> int:
        """Queued minus every place an article can be (0: nothing lost or doubled)."""
        placed = self.learned + self.heldout + self.empty + self.dropped + self.in_stream
        return self.queued - placed


def totals(answer: dict[str, Any]) -> Totals:
    worker, scraper = answer.get("worker") or {}, answer.get("scraper") or {}
    return Totals(
        queued=int(scraper.get("queued", 0)),
        learned=int(answer.get("docs_seen") or 0),
        heldout=int(worker.get("heldout_docs", 0)),
        empty=int(worker.get("empty_docs", 0)),
        dropped=int(worker.get("dropped_docs", 0)),
        in_stream=int(answer["queue"]["length"]),
        duplicates=int(scraper.get("duplicates", 0)),
        rereads=int(scraper.get("rereads", 0)),
    )


def soak(args: argparse.Namespace, work: Path, articles: Path) -> dict[str, Any]:
    """Run up, kill children for ``args.minutes``, drain, reconcile."""
    port, log, data = free_port(), work / "up.log", work / "data"
    command = [sys.executable, "-m", "service", "up", "--source", f"jsonl:{articles}"]
    command += ["--data-dir", str(data), "--port", str(port)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLDA_")}
    env.update({"PYTHONPATH": str(REPO), "STREAMLDA_TOPICS": str(args.topics)})
    rng = random.Random(args.seed)
    kinds = tuple(args.kinds)
    kills: list[Kill] = []
    watchers: list[threading.Thread] = []
    frozen: list[int] = []
    answered = polled = 0
    last: dict[str, Any] | None = None
    with log.open("wb") as out:
        up = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        began = time.monotonic()
        while (answer := stats(port)) is None or not answer.get("docs_seen"):
            if up.poll() is not None or time.monotonic() - began > 300:
                raise SystemExit(f"up did not start learning; see {log}")
            time.sleep(POLL_S)
        end = time.monotonic() + 60 * args.minutes
        if args.kills:  # the last kill gets its whole interval to recover
            end = time.monotonic() + args.every * (args.kills + 1)
        next_kill = time.monotonic() + args.every
        kill: Kill | None = None
        before: dict[str, Any] = answer
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_kill and not (args.kills and len(kills) >= args.kills):
                kind = rng.choice(kinds)
                pid = pids(log).get(kind)
                if pid is not None:
                    client = redis_client(data) if kind == "redis" else None
                    os.kill(pid, signal.SIGKILL)
                    kill = Kill(kind, now)
                    kills.append(kill)
                    before = last or before
                    print(f"killed {kind} (pid {pid})", file=sys.stderr, flush=True)
                    if client is not None:
                        watcher = threading.Thread(
                            target=watch_redis, args=(kill, client, now + args.every), daemon=True
                        )
                        watcher.start()
                        watchers.append(watcher)
                next_kill = now + args.every
            answer = stats(port)
            polled += 1
            if answer is not None:
                answered += 1
                last = answer
                if kill is not None:
                    since = time.monotonic() - kill.at
                    kill.api_s = kill.api_s if kill.api_s is not None else since
                    if kill.docs_s is None and answer["docs_seen"] > before["docs_seen"]:
                        kill.docs_s = since
                    queued = (answer.get("scraper") or {}).get("queued", 0)
                    if kill.queued_s is None and queued > (before.get("scraper") or {}).get(
                        "queued", 0
                    ):
                        kill.queued_s = since
            time.sleep(POLL_S)
        for watcher in watchers:
            watcher.join()
        # The scrapers frozen (SIGSTOP: up sees them running), the worker learns what is left
        # and acknowledges it at its idle checkpoint: then the counts hold still to compare.
        drained = time.monotonic() + args.drain
        while time.monotonic() < drained:
            pid = pids(log).get("scraper")
            if pid is not None and pid not in frozen:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
                    frozen.append(pid)
            answer = stats(port)
            if answer is not None:
                last = answer
                if answer["queue"]["length"] == 0 and pid in frozen:
                    break
            time.sleep(1.0)
        time.sleep(SETTLE_S)  # the snapshot after the stream ran dry
        last = stats(port) or last
    finally:
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        stop_up(up, STOP_TIMEOUT_S)
    if last is None:
        raise SystemExit(f"the API never answered; see {log}")
    return {"kills": kills, "availability": answered / max(1, polled), "totals": totals(last)}


def _spread(values: Sequence[float | None]) -> str:
    """``median / max s``, and how many kills it did not happen within their interval."""
    known = [v for v in values if v is not None]
    missed = len(values) - len(known)
    text = f"{statistics.median(known):5.1f} /{max(known):5.1f} s" if known else "      —      "
    return text + (f" ({missed} missed)" if missed else "")


def report(result: dict[str, Any]) -> str:
    """The per-kind recovery table (median / max), availability and the reconciliation."""
    lines = [
        "recovery after a kill, median / max over the kills of a kind:",
        "kind     kills  API again        docs_seen again  queued again",
    ]
    for kind in KINDS:
        of = [k for k in result["kills"] if k.kind == kind]
        if of:
            lines.append(
                f"{kind:8} {len(of):5}  {_spread([k.api_s for k in of]):16} "
                f"{_spread([k.docs_s for k in of]):16} {_spread([k.queued_s for k in of])}"
            )
    redis_kills = [k for k in result["kills"] if k.kind == "redis"]
    if redis_kills:
        lines.append(
            f"redis answering PING again {_spread([k.redis_s for k in redis_kills])}; "
            f"learning resumes after Redis answers {_spread([k.learn_s for k in redis_kills])}"
        )
    t: Totals = result["totals"]
    lines.append(f"availability (polls the API answered): {result['availability']:.1%}")
    lines.append(
        f"queued {t.queued} = learned {t.learned} + held out {t.heldout} + empty {t.empty} "
        f"+ dropped {t.dropped} + in the stream {t.in_stream}; unaccounted {t.unaccounted}"
    )
    lines.append(f"duplicates {t.duplicates}, re-reads {t.rereads}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10.0, help="how long to kill children")
    p.add_argument("--every", type=float, default=30.0, help="seconds between kills")
    p.add_argument(
        "--kills", type=int, default=0, help="stop after this many kills (0: run --minutes)"
    )
    p.add_argument(
        "--kinds",
        type=lambda text: [kind for kind in text.split(",") if kind],
        default=list(KINDS),
        help=f"comma-separated children to kill (default {','.join(KINDS)})",
    )
    p.add_argument("--articles", type=int, default=500_000, help="lines of the replay")
    p.add_argument("--topics", type=int, default=50, help="K")
    p.add_argument("--drain", type=float, default=120.0, help="seconds to let the stream drain")
    p.add_argument("--seed", type=int, default=0, help="which children, in which order")
    p.add_argument("--corpora", type=Path, default=SHARED / "corpora")
    p.add_argument("--work", type=Path, help="keep the file, the data and up's log here")
    p.add_argument("--json", type=Path, help="write the results here")
    args = p.parse_args(argv)
    unknown = sorted(set(args.kinds) - set(KINDS))
    if unknown or not args.kinds:
        p.error(f"--kinds: choose among {', '.join(KINDS)} (not {', '.join(unknown) or 'none'})")
    return args


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # stops up on the way out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    with tempfile.TemporaryDirectory(prefix="chaos-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        articles = work / "articles.jsonl"
        written = prepare(articles, args.corpora, args.articles)
        print(f"{written} articles in {articles}", file=sys.stderr, flush=True)
        result = soak(args, work, articles)
    print(report(result))
    if args.json:
        out = {**result, "kills": [asdict(k) for k in result["kills"]]}
        out["totals"] = asdict(result["totals"])
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
