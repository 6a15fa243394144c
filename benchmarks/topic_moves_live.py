"""Topic moves on the live replay: ``streamlda up`` with ``--max-topics``, its numbers and words
watched from outside, as a client would.

Replays the first ``--articles`` DEV articles (``benchmarks/live.py``'s ``prepare``) through
``streamlda up --source jsonl:FILE --replay-rate R --max-topics N`` (embedded Redis, a fresh data
directory, K = ``--topics`` at the start through ``STREAMLDA_TOPICS``: ``up`` has no ``--topics``
flag), polls ``/topics?top=10`` and
``/stats`` every ``--poll`` seconds for ``--minutes`` or until ``--docs`` documents are
learned, then, before stopping ``up``, checks:

a. every number ``/topics`` ever listed answers now: 200 (live), or 410 with ``merged_into`` a
   live number (410s followed to the end), or 410 with ``retired_at``;
b. the topics listed by the first model and by the last (numbers are never reused: alive all
   along) keep at least 5 of their top 10 words from one evaluation to the next (the polls that
   first show a new ``quality_docs``; the first model, published before any evaluation, is not
   one). A topic that absorbed a merge between two evaluations is excused for that step; a
   split's parent keeps its number and changes, so the fraction is given twice: split parents
   counted as any topic, and excused like a merge's keeper; again from the first evaluation at
   ``--settle-docs``; and once more with the first model's words (one minibatch learned when
   the worker is slow enough for a poll to catch it) before the first evaluation's;
c. ``/topics/events``: the moves by kind and the live topics over time.

The worker's docs/s is the median of ``/stats`` ``docs_per_s`` while it learned; ``--compare``
runs ``up --fixed-topics`` again for the same time, K the moving run's last number of live
topics, and gives check b for its topics too: how much a fixed K's young topics change on their
own.

    nice .venv/bin/python -m benchmarks.topic_moves_live --json /tmp/moves.json
    nice .venv/bin/python -m benchmarks.topic_moves_live --minutes 2 --compare
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import CORPORA, REPO, get
from benchmarks.live import prepare
from benchmarks.live_up import command, failed, stop
from service.store.embedded_redis import free_port

KEEP = 5  # of the top 10 words, kept from one evaluation to the next
TOP = 10
GOAL = 0.9


# ---- the checks (pure) ------------------------------------------------------------------------


@dataclass(frozen=True)
class Evaluation:
    """The live topics' top words at the first poll showing a new evaluation."""

    elapsed_s: float
    docs_seen: int  # the snapshot's
    quality_docs: int | None
    words: dict[int, list[str]]  # number -> top 10 words


@dataclass(frozen=True)
class Move:
    """One entry of ``/topics/events``."""

    kind: str
    docs_seen: int
    at: str
    topics: list[int]
    before: list[list[str]] = field(default_factory=list)
    after: list[list[str]] = field(default_factory=list)

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> Move:
        return cls(
            str(event["kind"]),
            int(event["docs_seen"]),
            str(event["at"]),
            [int(t) for t in event["topics"]],
            [list(w) for w in event.get("before") or []],
            [list(w) for w in event.get("after") or []],
        )


def verdict(number: int, answers: Mapping[int, tuple[int, Mapping[str, Any]]]) -> str | None:
    """Why ``number``'s answer is right (``live``, ``merged into N``, ``retired``), or None when
    it is not: a 404, another status, a merge chain that ends nowhere live, or a loop."""
    seen: list[int] = []
    current = number
    while current not in seen:
        seen.append(current)
        if current not in answers:
            return None
        code, body = answers[current]
        if code == 200:
            return "live" if current == number else f"merged into {current}"
        if code != 410:
            return None
        if body.get("retired_at") is not None:
            return "retired" if current == number else None  # merged into one retired since
        into = body.get("merged_into")
        if not isinstance(into, int):
            return None
        current = into
    return None


def excused(moves: Sequence[Move], low: int, high: int, split_parents: bool) -> set[int]:
    """Topics whose words may change between evaluations at ``low`` and ``high`` docs seen: a
    merge's keeper, and with ``split_parents`` a split's parent (a birth naming two topics)."""
    out: set[int] = set()
    for move in moves:
        if not low < move.docs_seen <= high:
            continue
        if move.kind == "merge" and move.topics:
            out.add(move.topics[0])
        elif split_parents and move.kind == "birth" and len(move.topics) == 2:
            out.add(move.topics[1])
    return out


@dataclass
class Stability:
    """Of the topics alive from the first evaluation to the last: those keeping ``KEEP`` of their
    top words at every step not excused, and the steps that did."""

    topics: int
    kept_topics: int
    steps: int
    kept_steps: int
    excused_steps: int
    losers: dict[int, list[int]]  # topic -> the overlaps of its failed steps

    @property
    def fraction(self) -> float | None:
        return self.kept_topics / self.topics if self.topics else None

    @property
    def step_fraction(self) -> float | None:
        return self.kept_steps / self.steps if self.steps else None


def stability(
    evaluations: Sequence[Evaluation],
    moves: Sequence[Move],
    split_parents: bool,
    first: Evaluation | None = None,
) -> Stability:
    """Each consecutive pair of evaluations compared, topic by topic, for the topics the
    ``first`` model listed (default: the first evaluation) that every evaluation lists (see the
    module docstring)."""
    if not evaluations:
        return Stability(0, 0, 0, 0, 0, {})
    listed = (first or evaluations[0]).words
    alive = sorted(set(listed) & set(evaluations[-1].words))
    alive = [t for t in alive if all(t in e.words for e in evaluations)]
    steps = kept_steps = excused_steps = 0
    losers: dict[int, list[int]] = {}
    for before, after in itertools.pairwise(evaluations):
        free = excused(moves, before.docs_seen, after.docs_seen, split_parents)
        for topic in alive:
            if topic in free:
                excused_steps += 1
                continue
            overlap = len(set(before.words[topic][:TOP]) & set(after.words[topic][:TOP]))
            steps += 1
            if overlap >= KEEP:
                kept_steps += 1
            else:
                losers.setdefault(topic, []).append(overlap)
    return Stability(len(alive), len(alive) - len(losers), steps, kept_steps, excused_steps, losers)


def kinds(moves: Sequence[Move]) -> dict[str, int]:
    """The moves by kind, splits (births naming a parent) apart from other births."""
    counts = Counter(m.kind for m in moves)
    counts["split"] = sum(1 for m in moves if m.kind == "birth" and len(m.topics) == 2)
    return dict(sorted(counts.items()))


# ---- one run of up ----------------------------------------------------------------------------


@dataclass
class Run:
    """What one ``up`` showed: the numbers listed, the evaluations, the counts over time."""

    max_topics: int | None
    seconds: float = 0.0
    docs_seen: int = 0
    listed: set[int] = field(default_factory=set)
    first: Evaluation | None = None  # the first model listed, evaluated or not
    evaluations: list[Evaluation] = field(default_factory=list)
    live: list[tuple[float, int, int]] = field(default_factory=list)  # (s, docs seen, live)
    docs_per_s: list[float] = field(default_factory=list)
    answers: dict[int, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    moves: list[Move] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def speed(self) -> float | None:
        return statistics.median(self.docs_per_s) if self.docs_per_s else None


def status_of(port: int, path: str) -> tuple[int, dict[str, Any]]:
    """The API's status code and JSON body (``get`` gives None for a 410)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        try:
            return error.code, json.loads(error.read())
        except ValueError:
            return error.code, {}


def answers_of(port: int, numbers: set[int]) -> dict[int, tuple[int, dict[str, Any]]]:
    """Each number's ``/topics/{n}`` answer, and those of the numbers merges point at."""
    out: dict[int, tuple[int, dict[str, Any]]] = {}
    todo = sorted(numbers)
    while todo:
        number = todo.pop()
        if number in out:
            continue
        out[number] = status_of(port, f"/topics/{number}?top=1")
        into = out[number][1].get("merged_into")
        if out[number][0] == 410 and isinstance(into, int) and into not in out:
            todo.append(into)
    return out


def all_moves(port: int) -> tuple[list[Move], dict[str, int]]:
    """Every move ``/topics/events`` keeps, oldest first, and its totals by kind."""
    moves: list[Move] = []
    totals: dict[str, int] = {}
    offset = 0
    while True:
        page = get(port, f"/topics/events?limit=200&offset={offset}")
        if page is None:
            break
        totals = dict(page.get("totals") or {})
        events = page.get("events") or []
        moves += [Move.of(e) for e in events]
        offset += len(events)
        if not events or offset >= int(page.get("kept") or 0):
            break
    return moves[::-1], totals


def watch(
    args: argparse.Namespace,
    env: dict[str, str],
    articles: Path,
    work: Path,
    fixed_at: int | None = None,
) -> Run:
    """``up`` on ``articles`` polled until time or documents run out; checked, then stopped.
    Topics move (the default), or K = ``fixed_at`` is fixed (``--fixed-topics``)."""
    moving = fixed_at is None
    name = "moves" if moving else "fixed"
    data, log = work / f"up-{name}", work / f"up-{name}.log"
    port = free_port()
    argv = command("up", "--source", f"jsonl:{articles}", "--replay-rate", f"{args.rate:g}")
    argv += ["--data-dir", str(data), "--port", str(port)]
    env = dict(env)
    if moving:
        argv += ["--max-topics", str(args.max_topics)]
        env["STREAMLDA_TOPICS"] = str(args.topics)
    else:
        argv += ["--fixed-topics"]
        env["STREAMLDA_TOPICS"] = str(fixed_at)
    print(f"{name}: {' '.join(argv[1:])} (log {log})", file=sys.stderr, flush=True)
    run = Run(args.max_topics if moving else None)
    started = time.monotonic()
    with log.open("wb") as out:
        up = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        quality: int | None = None
        while time.monotonic() - started < args.minutes * 60 and run.docs_seen < args.docs:
            if up.poll() is not None:
                raise failed(f"{name}: up exited with {up.returncode}", log)
            elapsed = time.monotonic() - started
            stats = get(port, "/stats")
            if stats is not None:
                run.docs_seen = int(stats.get("docs_seen") or 0)
                if float(stats.get("docs_per_s") or 0.0) > 0:
                    run.docs_per_s.append(float(stats["docs_per_s"]))
            listed = get(port, f"/topics?top={TOP}")
            if listed is not None and listed.get("topics"):
                words = {int(t["id"]): [w["word"] for w in t["words"]] for t in listed["topics"]}
                run.listed |= set(words)
                docs = int(listed["docs_seen"])
                if not run.live or run.live[-1][2] != len(words):
                    run.live.append((round(elapsed, 1), docs, len(words)))
                seen = Evaluation(round(elapsed, 1), docs, listed.get("quality_docs"), words)
                run.first = run.first or seen
                if seen.quality_docs is not None and seen.quality_docs != quality:
                    quality = seen.quality_docs
                    run.evaluations.append(seen)
            time.sleep(args.poll)
        run.seconds = time.monotonic() - started
        run.answers = answers_of(port, run.listed)
        run.moves, run.totals = all_moves(port)
        run.stats = get(port, "/stats") or {}
        run.docs_seen = int(run.stats.get("docs_seen") or run.docs_seen)
    finally:
        stop(up)
    return run


# ---- the report -------------------------------------------------------------------------------


def report(run: Run, fixed: Run | None, settle: int) -> dict[str, Any]:
    """The figures of the checks, printed and returned for the JSON."""
    verdicts = {n: verdict(n, run.answers) for n in sorted(run.listed)}
    wrong = {n: run.answers.get(n) for n, v in verdicts.items() if v is None}
    states = Counter((v or "WRONG").split(" ")[0] for v in verdicts.values())
    strict = stability(run.evaluations, run.moves, False, run.first)
    lenient = stability(run.evaluations, run.moves, True, run.first)
    later = [e for e in run.evaluations if e.docs_seen >= settle]
    settled = {
        parents: stability(later, run.moves, parents, run.first) for parents in (False, True)
    }
    young = _from_first(run, run.moves)
    by_kind = kinds(run.moves)
    out: dict[str, Any] = {
        "seconds": round(run.seconds, 1),
        "docs_seen": run.docs_seen,
        "docs_per_s_median": run.speed,
        "numbers_listed": len(run.listed),
        "numbers_by_answer": dict(states),
        "numbers_wrong": {str(n): a for n, a in wrong.items()},
        "stability_split_parents_counted": asdict(strict)
        | {"fraction": strict.fraction, "step_fraction": strict.step_fraction},
        "stability_split_parents_excused": asdict(lenient)
        | {"fraction": lenient.fraction, "step_fraction": lenient.step_fraction},
        "settled_from_docs": settle,
        "settled_split_parents_counted": _figures(settled[False]),
        "settled_split_parents_excused": _figures(settled[True]),
        "first_model": None if run.first is None else _first(run.first),
        "from_first_model_split_parents_counted": None if young is None else _figures(young),
        "evaluations": len(run.evaluations),
        "moves_kept": len(run.moves),
        "moves_by_kind": by_kind,
        "moves_totals": run.totals,
        "live_over_time": run.live,
        "moves": [asdict(m) for m in run.moves],
    }
    print(f"{run.seconds:.0f} s, {run.docs_seen} docs seen, worker {_speed(run)} docs/s (median)")
    print(
        f"a. {len(run.listed)} numbers listed: {dict(states)}; "
        + ("all answer as they should" if not wrong else f"WRONG: {wrong}")
    )
    for label, s in (("split parents counted", strict), ("split parents excused", lenient)):
        print(
            f"b. {label}: {s.kept_topics}/{s.topics} topics alive all along keep >= {KEEP}/{TOP} "
            f"words at every step ({_pct(s.fraction)}; goal {GOAL:.0%}); steps "
            f"{s.kept_steps}/{s.steps} ({_pct(s.step_fraction)}), {s.excused_steps} excused, "
            f"over {len(run.evaluations)} evaluations"
        )
    print(
        f"b'. from {settle} docs seen ({len(later)} evaluations): "
        f"{settled[False].kept_topics}/{settled[False].topics} "
        f"({_pct(settled[False].fraction)}) split parents counted, "
        f"{settled[True].kept_topics}/{settled[True].topics} "
        f"({_pct(settled[True].fraction)}) excused"
    )
    print(_young_line(run, young))
    print(f"c. moves {by_kind} (totals {run.totals}); live topics (s, docs, live): {run.live}")
    if fixed is not None:
        base = stability(fixed.evaluations, [], False, fixed.first)
        later = [e for e in fixed.evaluations if e.docs_seen >= settle]
        base_later = stability(later, [], False, fixed.first)
        base_young = _from_first(fixed, [])
        out["fixed"] = {"seconds": round(fixed.seconds, 1), "docs_seen": fixed.docs_seen,
                        "docs_per_s_median": fixed.speed, "stability": _figures(base),
                        "settled": _figures(base_later),
                        "first_model": None if fixed.first is None else _first(fixed.first),
                        "from_first_model": None if base_young is None else _figures(base_young),
                        }  # fmt: skip
        print(
            f"--fixed-topics: {fixed.docs_seen} docs seen, {_speed(fixed)} docs/s; "
            f"b. {base.kept_topics}/{base.topics} ({_pct(base.fraction)}) keep >= {KEEP}/{TOP} "
            f"words at every step over {len(fixed.evaluations)} evaluations, "
            f"{base_later.kept_topics}/{base_later.topics} ({_pct(base_later.fraction)}) "
            f"from {settle} docs seen; {_young_line(fixed, base_young)}"
        )
    return out


def _from_first(run: Run, moves: Sequence[Move]) -> Stability | None:
    """Check b with the first model's words before the first evaluation's, split parents
    counted; None when the first model a poll saw was already an evaluation."""
    if run.first is None or run.first.quality_docs is not None:
        return None
    return stability([run.first, *run.evaluations], moves, False, run.first)


def _first(first: Evaluation) -> dict[str, Any]:
    return {"docs_seen": first.docs_seen, "quality_docs": first.quality_docs}


def _young_line(run: Run, young: Stability | None) -> str:
    if run.first is None:
        return "b0. no model listed"
    if young is None:
        return f"b0. the first model polled ({run.first.docs_seen} docs seen) was an evaluation"
    return (
        f"b0. with the first model's words ({run.first.docs_seen} docs seen, before any "
        f"evaluation): {young.kept_topics}/{young.topics} ({_pct(young.fraction)}) split "
        f"parents counted"
    )


def _figures(s: Stability) -> dict[str, Any]:
    return asdict(s) | {"fraction": s.fraction, "step_fraction": s.step_fraction}


def _speed(run: Run) -> str:
    return "n/a" if run.speed is None else f"{run.speed:.0f}"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--topics", type=int, default=20, help="K at the start")
    p.add_argument("--max-topics", type=int, default=100)
    p.add_argument("--rate", type=float, default=50.0, help="articles per second replayed")
    p.add_argument("--minutes", type=float, default=6.0, help="how long each up runs")
    p.add_argument("--docs", type=int, default=10**9, help="or until this many are learned")
    p.add_argument("--articles", type=int, default=0, help="articles (default: rate x time)")
    p.add_argument("--poll", type=float, default=3.0, help="seconds between polls")
    p.add_argument(
        "--settle-docs",
        type=int,
        default=5000,
        help="b is also given from the first evaluation at this many docs seen",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="also run up --fixed-topics at the moving run's last K",
    )
    p.add_argument("--corpus-dir", type=Path, default=CORPORA)
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--work", type=Path, default=None, help="keep articles and logs here")
    args = p.parse_args(argv)
    args.articles = args.articles or int(args.rate * args.minutes * 60) + 1000
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    for name in ("STREAMLDA_REDIS_URL", "STREAMLDA_DATA_DIR", "STREAMLDA_REPLAY_RATE"):
        env.pop(name, None)
    for name in ("STREAMLDA_MAX_TOPICS", "STREAMLDA_TOPICS", "STREAMLDA_FIXED_TOPICS"):
        env.pop(name, None)  # each run's own flags and variables say how its topics go
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop `up`
    with contextlib.ExitStack() as stack:
        if args.work is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="streamlda-mv-")))
        else:
            work = args.work
            work.mkdir(parents=True, exist_ok=True)
        articles, written = prepare(work, args.corpus_dir, args.articles)
        run = watch(args, env, articles, work)
        last_k = run.live[-1][2] if run.live else args.topics
        fixed = watch(args, env, articles, work, fixed_at=last_k) if args.compare else None
    result = report(run, fixed, args.settle_docs)
    if args.json is not None:
        result = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv) if argv is None else " ".join(argv),
            "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "articles": written,
            **result,
            "evaluations_words": [asdict(e) for e in run.evaluations],
        }
        args.json.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
