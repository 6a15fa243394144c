"""What revisiting buys on a stream paced like live Wikipedia: ``streamlda up`` with and without.

Writes the first ``--articles`` DEV articles (the shards in order, cleaned as the ``jsonl:``
source cleans them) to one plain JSON-lines file, then for each ``--rates`` pace runs
``streamlda up --source jsonl:FILE --replay-rate R`` (embedded Redis, scraper, worker and API;
a free port and a fresh data directory) twice, revisits on and off (``STREAMLDA_REVISIT``),
with K = ``--topics`` and W = ``--words`` and the shipped defaults otherwise. It polls
``/stats`` until the worker has placed every article (``docs_seen`` plus the held-out and empty
ones equal the scraper's ``queued``), then stops ``up`` with SIGTERM (the worker checkpoints)
and scores the checkpoint's ``beta_mean``, the topics served.

Scoring is ``benchmarks/learner.py``'s: the same held-out estimator and settings (its
``Scorer`` at its default document prior, sweeps and seed) and the NPMI of the top words in
the held-out documents. The held-out set is rebuilt from the file with the worker's vocabulary,
read from the checkpoint, as the worker builds it (the first ``STREAMLDA_HELDOUT`` articles with
a vocabulary word); the counts of held-out, empty and trained articles are checked against the
worker's, and every run must have built the same vocabulary, so every system is scored on the
same documents and test tokens. tomotopy (``benchmarks/peers.py``, run by learner.py's
``run_tomotopy``) learns the other articles, encoded with that vocabulary, for each
``--tomotopy-iterations`` count.

Measured while ``up`` runs, over the steady part of the run (from the first time the worker
has caught up with the stream, or from its first step if it never does, to the last article):

* fresh and revisited docs/s: ``docs_seen`` and ``reservoir_passes`` x ``reservoir_articles``
  of ``/stats`` over that time; passes: ``reservoir_passes`` once every article is learned;
* the worker's CPU share: its process's user + system time (``/proc/<pid>/stat``, the pid
  ``up`` logs; its scoring process apart) over that time (1.0 is one core);
* a fresh article's wait, as the worker measures it (``/stats`` ``fresh_wait_s`` and
  ``fresh_wait_p95_s``: from the article's stream entry id to the end of the step that learned
  it, over the last minute): the median over the steady part's polls of each. The bound printed
  beside it is one step's time, ``batch_size`` over the learner's own docs/s: a fresh minibatch
  waits at most for the revisit step in progress. The JSON also holds the wait until the first
  snapshot counting the article (the scraper's ``queued`` and ``updated_at`` to ``/stats``
  ``updated_at``), which adds the publication delay and resolves only the snapshots' spacing.

Wall time is from ``up``'s start to the last article placed (the stream alone lasts articles /
rate); tomotopy's is its ``add_doc``, initialisation and training.

``--quick`` is a smoke run: 600 articles, K = 20, W = 5,000, a vocabulary from the first 200
articles, 100 held out, tomotopy 10 and 20 iterations.

    .venv/bin/python benchmarks/live.py --quick
    .venv/bin/python benchmarks/live.py --json /tmp/live.json   # 20,000 articles at 50/s, K = 200
    .venv/bin/python benchmarks/live.py --rates 50,200 --json /tmp/live.json
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import itertools
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's packages, not an installed copy's

from benchmarks import learner  # noqa: E402
from benchmarks.dev_corpus import all_dev  # noqa: E402
from benchmarks.up_process import stop_up  # noqa: E402
from lda.evaluation.perplexity import HeldoutSet  # noqa: E402
from lda.vocab import Vocabulary  # noqa: E402
from service.ingest.sources.jsonl import JsonlSource  # noqa: E402
from service.learn.model_store import CHECKPOINT_NAME, load_model  # noqa: E402
from service.settings_learning import ModelSettings  # noqa: E402
from service.store.embedded_redis import free_port  # noqa: E402

SHARED = Path(os.environ.get("STREAMLDA_SHARED", REPO.parent / "shared"))
POLL_S = 0.25  # the API's refresh (api_refresh_s): no snapshot goes unseen
STALL_S = 300.0  # neither the scraper nor the worker moved for this long: give up
STOP_TIMEOUT_S = 300.0  # up's SIGTERM: the worker's final checkpoint of K x W
WORKER_PID = re.compile(rb"started worker \(pid (\d+)\)")
# --quick: a vocabulary and a held-out set that 600 articles can fill
QUICK_ENV = {
    "STREAMLDA_HELDOUT": "100",
    "STREAMLDA_VOCAB_DOCS": "200",
    "STREAMLDA_EVAL_EVERY": "200",
}


# ---- the articles -----------------------------------------------------------------------------


def prepare(work: Path, corpora: Path, articles: int) -> tuple[Path, int]:
    """``work/articles.jsonl``: the first ``articles`` DEV articles as plain records (the
    ``jsonl:`` source's cleaning done once), and how many were written. Re-read with the source,
    so the texts the scraper will queue are the ones counted here."""
    path = work / "articles.jsonl"
    source = JsonlSource(all_dev(work / "dev", corpora))
    with path.open("w", encoding="utf-8") as out:
        for article in itertools.islice(source, articles):
            record = {"id": article.id, "title": article.title, "text": article.text}
            out.write(json.dumps(record) + "\n")
    (work / "dev" / "dev-all.jsonl.gz").unlink()
    written = sum(1 for _ in texts(path))
    if written < articles:
        print(f"warning: the corpus holds {written} articles, not {articles}", file=sys.stderr)
    return path, written


def texts(path: Path) -> Iterator[str]:
    """The texts of ``path`` as the scraper reads them, in order."""
    for article in JsonlSource(path):
        yield article.text


@dataclass
class Split:
    """The articles as the worker places them: held out, trained, empty (no vocabulary word)."""

    heldout: list[list[int]]
    train: list[list[int]]
    empty: int


def split(path: Path, vocab: Vocabulary, n_heldout: int) -> Split:
    """The worker's placement (``LearningSession._place``): the first ``n_heldout`` articles
    with a vocabulary word held out, the others with one trained."""
    heldout: list[list[int]] = []
    train: list[list[int]] = []
    empty = 0
    for text in texts(path):
        ids = vocab.encode(text)
        if not ids:
            empty += 1
        elif len(heldout) < n_heldout:
            heldout.append(ids)
        else:
            train.append(ids)
    return Split(heldout, train, empty)


# ---- one run of up ----------------------------------------------------------------------------


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


def get(port: int, path: str) -> dict[str, Any] | None:
    """The API's JSON answer, or None while it is not up (or not ready)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            answer: dict[str, Any] = json.loads(reply.read())
            return answer
    except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
        return None


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


# ---- what a run measured ----------------------------------------------------------------------


@dataclass
class Waits:
    """The fresh articles' waits (s) over the steady part of a run, and where it begins."""

    seconds: list[float]
    since: float  # time.time(): the first snapshot at which the worker had caught up
    caught_up: bool  # False: it never did; the waits are then from its first step on


def arrival_times(polls: Sequence[Poll], started: float) -> list[float]:
    """When each article was queued (index j: the (j+1)-th), from the scraper's counters: a
    batch at the time the scraper published it; batches a poll missed spread evenly between
    the publications it saw."""
    seen = sorted({(p.scraper_at, p.queued, p.batches) for p in polls if p.scraper_at})
    times: list[float] = []
    before_at, before_queued, before_batches = started, 0, 0
    for at, queued, batches in seen:
        added, n_batches = queued - before_queued, batches - before_batches
        if added <= 0 or n_batches <= 0:
            continue
        per_batch = added / n_batches
        for j in range(added):
            batch = math.ceil((j + 1) / per_batch)  # 1 ... n_batches
            times.append(before_at + (at - before_at) * batch / n_batches)
        before_at, before_queued, before_batches = at, queued, batches
    return times


def snapshots(polls: Sequence[Poll]) -> list[Poll]:
    """The distinct worker snapshots the polls saw, in order."""
    out: dict[float, Poll] = {}
    for p in polls:
        if p.snapshot_at is not None and p.docs_seen > 0:
            out.setdefault(p.snapshot_at, p)
    return [out[at] for at in sorted(out)]


def waits(polls: Sequence[Poll], started: float, expected: int) -> Waits:
    """Each article's time from queued to the first snapshot counting it placed, for the
    articles queued once the worker first caught up with the stream (a snapshot counting every
    article queued by its time): before, it builds its vocabulary and catches up a backlog."""
    arrived = arrival_times(polls, started)
    shots = snapshots(polls)
    if not shots or len(arrived) < expected:
        return Waits([], math.nan, False)
    caught = next(
        (s for s in shots if s.placed >= bisect.bisect_right(arrived, s.snapshot_at or 0.0)),
        None,
    )
    since = (caught or shots[0]).snapshot_at or 0.0
    placed = [s.placed for s in shots]
    seconds = []
    for j, at in enumerate(arrived[:expected]):
        if at < since:
            continue
        shot = shots[min(bisect.bisect_left(placed, j + 1), len(shots) - 1)]
        seconds.append(max((shot.snapshot_at or at) - at, 0.0))
    return Waits(seconds, since, caught is not None)


@dataclass
class Row:
    """One line of the table: a system at one pace."""

    rate: float
    system: str
    perplexity: float
    npmi: float | None
    over_off: float | None = None  # perplexity / revisit off's at this pace
    fresh_per_s: float | None = None
    revisit_per_s: float | None = None
    passes: float | None = None
    wait_median_s: float | None = None
    wait_p95_s: float | None = None
    step_bound_s: float | None = None
    cpu_share: float | None = None
    wall_s: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)


def live_row(live: Live, expected: int, batch_size: int) -> Row:
    """The run's figures over its steady part (see the module docstring); perplexity later."""
    shots = snapshots(live.polls)
    measured = waits(live.polls, live.started, expected)
    first = next((s for s in shots if (s.snapshot_at or 0.0) >= measured.since), shots[0])
    last = shots[-1]
    span = max((last.snapshot_at or 0.0) - (first.snapshot_at or 0.0), 1e-9)
    cpu = [p for p in live.polls if p.cpu_s is not None and p.at >= measured.since]
    cpu_share = None
    if len(cpu) >= 2 and live.worker_starts == 1:
        assert cpu[-1].cpu_s is not None and cpu[0].cpu_s is not None
        cpu_share = (cpu[-1].cpu_s - cpu[0].cpu_s) / max(cpu[-1].at - cpu[0].at, 1e-9)
    speed = next((p.docs_per_s for p in reversed(live.polls) if p.docs_per_s > 0), 0.0)
    seconds = sorted(measured.seconds)
    # The worker's own measure, entry id to the step's end: the median of its last-minute
    # figures over the steady part (snapshot times resolve seconds, not a step's time).
    steady = [p for p in live.polls if p.at >= measured.since and p.wait_s is not None]
    return Row(
        rate=live.rate,
        system=live.name,
        perplexity=math.nan,
        npmi=None,
        fresh_per_s=(last.docs_seen - first.docs_seen) / span,
        revisit_per_s=(last.revisited - first.revisited) / span,
        passes=last.passes,
        wait_median_s=statistics.median(p.wait_s for p in steady) if steady else None,  # type: ignore[type-var]
        wait_p95_s=statistics.median(p.wait_p95_s for p in steady) if steady else None,  # type: ignore[type-var]
        step_bound_s=batch_size / speed if speed > 0 else None,
        cpu_share=cpu_share,
        wall_s=live.ended - live.started,
        detail={
            "snapshot_wait_median_s": statistics.median(seconds) if seconds else None,
            "snapshot_wait_p95_s": _quantile(seconds, 0.95) if seconds else None,
            "waits_measured": len(seconds),
            "caught_up": measured.caught_up,
            "steady_from_s": measured.since - live.started,
            "steady_s": span,
            "learner_docs_per_s": speed,
            "snapshot_gap_median_s": _gap(shots),
            "worker_starts": live.worker_starts,
            "counters": live.counters,
            "snapshots": [_series(s, live.started) for s in shots],
        },
    )


def _series(shot: Poll, started: float) -> list[float]:
    """A snapshot in the JSON: seconds since up started, docs_seen, revisited, placed, queued."""
    at = round((shot.snapshot_at or started) - started, 3)
    return [at, shot.docs_seen, shot.revisited, shot.placed, shot.queued]


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values (linear between order statistics)."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _gap(shots: Sequence[Poll]) -> float | None:
    times = [s.snapshot_at for s in shots if s.snapshot_at is not None]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    return statistics.median(gaps) if gaps else None


# ---- scoring ----------------------------------------------------------------------------------


@dataclass
class Scoring:
    """What every system is scored with: the vocabulary, the articles' placement, the scorer."""

    vocab: Vocabulary
    articles: Split
    heldout: HeldoutSet
    scorer: learner.Scorer


def scoring(
    vocab: Vocabulary, articles: Path, n_heldout: int, defaults: argparse.Namespace
) -> Scoring:
    """learner.py's Scorer at its defaults (document prior, sweeps, exact Gibbs, seed) on the
    held-out articles, NPMI counted in them, as learner.py scores every system."""
    placed = split(articles, vocab, n_heldout)
    heldout = HeldoutSet.from_documents(placed.heldout)
    scorer = learner.Scorer(
        heldout,
        defaults.eval_gamma,
        defaults.eval_sweeps,
        "exact",
        defaults.seed,
        reference=placed.heldout,
    )
    return Scoring(vocab, placed, heldout, scorer)


def score_checkpoint(live: Live, row: Row, common: Scoring | None, articles: Path) -> Scoring:
    """Score the checkpoint's beta_mean into ``row`` (the first run's checkpoint sets up the
    scoring); checks the run placed the articles as the scoring does."""
    model, vocab, _ = load_model(live.checkpoint)
    counters = live.counters
    if common is None:
        common = scoring(vocab, articles, counters["heldout_docs"], learner_defaults())
    elif vocab.words != common.vocab.words:
        raise SystemExit(f"{live.name} at {live.rate:g}/s built another vocabulary")
    placed = common.articles
    worker = (counters["heldout_docs"], counters["empty_docs"], model.docs_seen)
    ours = (len(placed.heldout), placed.empty, len(placed.train))
    if worker != ours:
        raise SystemExit(
            f"{live.name} at {live.rate:g}/s placed (held out, empty, trained) = {worker}, "
            f"the articles give {ours}"
        )
    perplexity, _ = common.scorer.score_common(f"{live.name} {live.rate:g}", model.beta_mean, 0)
    row.perplexity, row.npmi = perplexity, common.scorer.npmi(model.beta_mean)
    row.detail.update(
        revisited_docs=model.revisited_docs,
        revisit_steps=model.revisit_steps,
        steps=int(model.state.step),
    )
    live.checkpoint.unlink()  # K x W, several times over: one at a time on disk
    return common


def learner_defaults() -> argparse.Namespace:
    """learner.py's settings when given no flags: its scoring's among them."""
    return learner.parse_args([])


def tomotopy_rows(args: argparse.Namespace, common: Scoring) -> list[Row]:
    """learner.py's tomotopy runs (peers.py's adapters) on the trained articles, scored by the
    common scorer: one model, scored after each iteration count."""
    defaults = learner_defaults()
    settings = argparse.Namespace(
        tomotopy_iter_list=args.tomotopy_iteration_list,
        tomotopy_every=0,
        batch_size=defaults.batch_size,  # its warm-up's documents
        topics=args.topics,
        threads=args.threads,
        seed=defaults.seed,
    )
    placed = common.articles
    corpus = learner.Corpus(placed.heldout, placed.train, placed.empty, [])
    runs = learner.run_tomotopy(settings, corpus, [len(placed.train)], common.vocab, common.scorer)
    rows = []
    for run in runs:
        (point,) = run.points
        rows.append(
            Row(
                rate=math.nan,
                system=run.name,
                perplexity=point.perplexity,
                npmi=point.npmi,
                wall_s=point.train_s + point.prep_s,
                detail={"train_s": point.train_s, "prep_s": point.prep_s, **run.settings},
            )
        )
    return rows


# ---- the table --------------------------------------------------------------------------------


def with_ratios(lives: list[Row], peers: list[Row]) -> list[Row]:
    """Per pace: revisit on and off, then the peers, each with its perplexity over off's."""
    rows: list[Row] = []
    for rate in dict.fromkeys(r.rate for r in lives):
        here = [r for r in lives if r.rate == rate]
        off = next(r.perplexity for r in here if r.system == "revisit off")
        for row in [*here, *(Row(**{**asdict(p), "rate": rate}) for p in peers)]:
            row.over_off = row.perplexity / off
            rows.append(row)
    return rows


COLUMNS = (  # heading, width, format, Row field
    ("perplexity", 10, ".1f", "perplexity"),
    ("NPMI", 7, "+.3f", "npmi"),
    ("/off", 6, ".3f", "over_off"),
    ("fresh/s", 8, ".1f", "fresh_per_s"),
    ("revisit/s", 9, ".1f", "revisit_per_s"),
    ("passes", 6, ".2f", "passes"),
    ("wait med", 8, ".2f", "wait_median_s"),
    ("wait p95", 8, ".2f", "wait_p95_s"),
    ("step s", 6, ".2f", "step_bound_s"),
    ("CPU", 5, ".2f", "cpu_share"),
    ("wall s", 7, ".0f", "wall_s"),
)


def format_table(rows: Sequence[Row]) -> str:
    """A line per row; ``-`` where a figure does not apply (the peers' stream figures)."""

    def cell(value: float | None, width: int, spec: str) -> str:
        text = "-" if value is None or not math.isfinite(value) else format(value, spec)
        return f"{text:>{width}}"

    lines = [" ".join([f"{'rate':>5} {'system':14}", *(f"{h:>{w}}" for h, w, _, _ in COLUMNS)])]
    for r in rows:
        cells = (cell(getattr(r, name), w, spec) for _, w, spec, name in COLUMNS)
        lines.append(" ".join([f"{r.rate:>5g} {r.system:14}", *cells]))
    return "\n".join(lines)


def finite(value: Any) -> Any:
    """``value`` with every non-finite float as None (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


# ---- command line -----------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--corpus-dir", type=Path, default=SHARED / "corpora")
    p.add_argument("--articles", type=int, default=None, help="DEV articles streamed (20,000)")
    p.add_argument("--rates", default=None, help="articles a second, comma list (50)")
    p.add_argument("--topics", type=int, default=None, help="K (200)")
    p.add_argument("--words", type=int, default=None, help="W, built from the stream (50,000)")
    p.add_argument(
        "--tomotopy-iterations", default=None, help="comma list (50,200); 0 or empty: no tomotopy"
    )
    p.add_argument("--threads", type=int, default=2, help="scoring's and tomotopy's threads")
    p.add_argument("--quick", action="store_true", help="smoke run: 600 articles, K = 20")
    p.add_argument("--json", type=Path, default=None, help="write the table and details here")
    p.add_argument(
        "--work", type=Path, default=None, help="keep the articles and logs here (else a temp dir)"
    )
    args = p.parse_args(argv)
    quick = args.quick
    args.articles = args.articles or (600 if quick else 20_000)
    args.topics = args.topics or (20 if quick else 200)
    args.words = args.words or (5_000 if quick else 50_000)
    args.rate_list = [float(r) for r in (args.rates or "50").split(",") if r]
    iterations = args.tomotopy_iterations or ("10,20" if quick else "50,200")
    args.tomotopy_iteration_list = sorted({int(i) for i in iterations.split(",") if int(i or 0)})
    if min([args.articles, args.topics, args.words, args.threads, *args.rate_list]) <= 0:
        p.error("sizes and rates must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> list[Row]:
    args = parse_args(argv)
    learner.set_threads(args.threads)
    env = {
        **os.environ,
        "STREAMLDA_TOPICS": str(args.topics),
        "STREAMLDA_VOCAB_SIZE": str(args.words),
        "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    for name in ("STREAMLDA_REDIS_URL", "STREAMLDA_DATA_DIR", "STREAMLDA_REPLAY_RATE"):
        env.pop(name, None)  # up starts its own Redis, in its own folder, at our pace
    if args.quick:
        env = {**QUICK_ENV, **env}
    batch_size = int(
        env.get("STREAMLDA_BATCH_SIZE", ModelSettings.model_fields["batch_size"].default)
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop `up` (finally blocks)
    lives: list[Row] = []
    common: Scoring | None = None
    with contextlib.ExitStack() as stack:
        if args.work is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="streamlda-live-")))
        else:
            work = args.work
            work.mkdir(parents=True, exist_ok=True)
        articles, expected = prepare(work, args.corpus_dir, args.articles)
        for rate, revisit in itertools.product(args.rate_list, (True, False)):
            live = run_up(env, articles, expected, rate, revisit, work)
            row = live_row(live, expected, batch_size)
            common = score_checkpoint(live, row, common, articles)
            lives.append(row)
            print(format_table([row]).splitlines()[1], file=sys.stderr, flush=True)
        assert common is not None
        peers = tomotopy_rows(args, common) if args.tomotopy_iteration_list else []
    rows = with_ratios(lives, peers)
    placed = common.articles
    print(
        f"{expected} articles: {len(placed.heldout)} held out ({common.heldout.n_test_tokens} "
        f"test tokens), {len(placed.train)} trained, {placed.empty} with no vocabulary word; "
        f"K = {args.topics}, W = {len(common.vocab)}, minibatches of {batch_size}"
    )
    print(format_table(rows))
    if args.json is not None:
        result = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv) if argv is None else " ".join(argv),
            "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "corpus": {
                "articles": expected,
                "heldout_docs": len(placed.heldout),
                "heldout_test_tokens": common.heldout.n_test_tokens,
                "train_docs": len(placed.train),
                "empty_docs": placed.empty,
                "words": len(common.vocab),
            },
            "rows": [asdict(r) for r in rows],
        }
        text = json.dumps(finite(result), indent=2, default=str, allow_nan=False)
        args.json.write_text(text + "\n", encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
