"""What revisiting buys on a stream paced like live Wikipedia: ``streamlda up`` with and without.

Writes the first ``--articles`` DEV articles (the shards in order, cleaned as the ``jsonl:``
source cleans them) to one plain JSON-lines file, then for each ``--rates`` pace runs
``streamlda up --source jsonl:FILE --replay-rate R`` (embedded Redis, scraper, worker and API;
a free port and a fresh data directory) twice, revisits on and off (``STREAMLDA_REVISIT``),
with K = ``--topics`` and W = ``--words`` and the shipped defaults otherwise. It polls
``/stats`` until the worker has placed every article (``docs_seen`` plus the held-out and empty
ones equal the scraper's ``queued``), then stops ``up`` with SIGTERM (the worker checkpoints)
and scores the checkpoint's ``beta_mean``, the topics served.

Scoring is the learner benchmark's: the same held-out estimator and settings (the ``Scorer`` of
``benchmarks/scorer.py`` at ``benchmarks/learner.py``'s default document prior, sweeps and
seed) and the NPMI of the top words in the held-out documents. The held-out set is rebuilt from
the file with the worker's vocabulary,
read from the checkpoint, as the worker builds it (the first ``STREAMLDA_HELDOUT`` articles with
a vocabulary word); the counts of held-out, empty and trained articles are checked against the
worker's, and every run must have built the same vocabulary, so every system is scored on the
same documents and test tokens. tomotopy (``benchmarks/peers.py``, run by
``benchmarks/peer_runs.py``) learns the other articles, encoded with that vocabulary, for each
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

    .venv/bin/python -m benchmarks.live --quick
    .venv/bin/python -m benchmarks.live --json /tmp/live.json   # 20,000 articles at 50/s, K = 200
    .venv/bin/python -m benchmarks.live --rates 50,200 --json /tmp/live.json
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import signal
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import learner
from benchmarks.common import REPO, SHARED, Corpus, all_dev, set_threads
from benchmarks.live_measure import Row, live_row
from benchmarks.live_up import Live, run_up
from benchmarks.peer_runs import run_tomotopy
from benchmarks.scorer import Scorer
from lda.evaluation.perplexity import HeldoutSet
from lda.vocab import Vocabulary
from service.ingest.sources.jsonl import JsonlSource
from service.learn.model_store import load_model
from service.settings_learning import ModelSettings

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


# ---- scoring ----------------------------------------------------------------------------------


@dataclass
class Scoring:
    """What every system is scored with: the vocabulary, the articles' placement, the scorer."""

    vocab: Vocabulary
    articles: Split
    heldout: HeldoutSet
    scorer: Scorer


def scoring(
    vocab: Vocabulary, articles: Path, n_heldout: int, defaults: argparse.Namespace
) -> Scoring:
    """The learner benchmark's Scorer at its defaults (document prior, sweeps, exact Gibbs,
    seed) on the held-out articles, NPMI counted in them, as learner.py scores every system."""
    placed = split(articles, vocab, n_heldout)
    heldout = HeldoutSet.from_documents(placed.heldout)
    scorer = Scorer(
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
    """The learner benchmark's tomotopy runs (peers.py's adapters) on the trained articles,
    scored by the common scorer: one model, scored after each iteration count."""
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
    corpus = Corpus(placed.heldout, placed.train, placed.empty, [])
    runs = run_tomotopy(settings, corpus, [len(placed.train)], common.vocab, common.scorer)
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
    set_threads(args.threads)
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
