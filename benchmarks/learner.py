"""Learner benchmark (issue 2): speed and held-out perplexity of the four samplers and gensim.

Reads ``<corpus-dir>/dev-*.jsonl.gz`` in place, tokenises with ``vocab-7702.txt``, keeps the first
H non-empty documents as the held-out set (never trained on) and the next D as training documents;
all encoding happens before any timing. For each sampler a :class:`lda.model.StreamingLDA` learns
from minibatches of n documents; only ``model.update`` (Gibbs expectations + sampler step) is
timed. gensim's online VB ``LdaModel`` learns from the same documents (same word ids, chunks of
n, one pass) through ``model.update(chunk)``, of which only the update calls are timed. At each
checkpoint every model's K x W topic matrix is scored by :func:`lda.perplexity` machinery (document
completion) with the same held-out set, the same Gibbs settings, the same random numbers and the
same document prior gamma (``--eval-gamma``); a second column scores each model with its own
document prior (sampler gamma; gensim's alpha). Evaluation time is reported separately.

    .venv/bin/python benchmarks/learner.py                # the issue's configuration
    .venv/bin/python benchmarks/learner.py --quick        # ~1 minute smoke run
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import math
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import mwparserfromhell
import numba
import torch

from lda.batch import Batch
from lda.gibbs import Method
from lda.model import LearnerConfig, NonFiniteError, StreamingLDA
from lda.perplexity import (
    HeldoutSet,
    PosteriorAverage,
    perplexity_from_probabilities,
    test_token_probabilities,
)
from lda.samplers import SAMPLERS
from lda.schedules import StepSchedule
from lda.vocab import Vocabulary

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO.parent / "shared" / "corpora"
PAPER_S_PER_100 = 0.73  # Ma, Chen & Fox (2015): 0.73-0.82 s per 100 documents
TARGET_S_PER_100 = 0.08  # issue 2: at least 10x faster than the paper
TARGET_GENSIM_RATIO = 2.0  # issue 2: at least 2x gensim's tokens per second


@dataclass
class Corpus:
    """Pre-encoded documents: held-out and training word ids, and what was skipped."""

    heldout: list[list[int]]
    train: list[list[int]]
    skipped_empty: int
    files: list[str]

    @property
    def train_tokens(self) -> int:
        return sum(len(d) for d in self.train)


@dataclass
class Point:
    """One checkpoint of one model."""

    docs: int
    tokens: int
    train_s: float
    s_per_100_docs: float
    tokens_per_s: float
    perplexity: float
    perplexity_avg: float
    perplexity_own: float
    perplexity_own_avg: float
    eval_s: float


@dataclass
class Run:
    """All checkpoints of one model, with its settings and warm-up time."""

    name: str
    settings: dict[str, Any]
    warmup_s: float = 0.0
    points: list[Point] = field(default_factory=list)
    error: str | None = None


def read_corpus(
    corpus_dir: Path, vocab: Vocabulary, n_heldout: int, n_train: int, limit: int | None = None
) -> Corpus:
    """First ``n_heldout`` then ``n_train`` documents with in-vocabulary tokens, in file order."""
    files = sorted(corpus_dir.glob("dev-*.jsonl.gz"))
    if not files:
        raise SystemExit(f"error: no dev-*.jsonl.gz in {corpus_dir}")
    heldout: list[list[int]] = []
    train: list[list[int]] = []
    skipped = 0
    used: list[str] = []
    for path in files:
        used.append(path.name)
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for line in lines:
                if not line.strip():
                    continue
                record = json.loads(line)
                text = record.get("text") or ""
                if record.get("format") == "wikitext":
                    text = str(mwparserfromhell.parse(text).strip_code())
                ids = vocab.encode(text)
                if limit is not None:
                    ids = ids[:limit]
                if not ids:
                    skipped += 1
                    continue
                (heldout if len(heldout) < n_heldout else train).append(ids)
                if len(train) >= n_train:
                    return Corpus(heldout, train, skipped, used)
    print(
        f"warning: corpus ran out: {len(heldout)} held-out, {len(train)} training documents",
        file=sys.stderr,
    )
    return Corpus(heldout, train, skipped, used)


def minibatches(documents: list[list[int]], size: int) -> list[list[list[int]]]:
    """Consecutive groups of ``size`` documents (the last may be shorter)."""
    return [documents[i : i + size] for i in range(0, len(documents), size)]


def set_threads(n: int, torch_threads: int | None = None) -> int:
    """Torch and numba threads (numba is capped by its pool size); returns numba's count."""
    torch.set_num_threads(torch_threads or n)
    pool = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
    numba_threads = max(1, min(n, pool))
    numba.set_num_threads(numba_threads)
    try:  # BLAS threads for gensim's numpy, when threadpoolctl is installed
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except ImportError:
        pass
    return numba_threads


class Scorer:
    """Scores any K x W topic matrix on the held-out set, with common random numbers."""

    def __init__(
        self, heldout: HeldoutSet, gamma: float, sweeps: int, method: Method, seed: int
    ) -> None:
        self.heldout = heldout
        self.gamma = gamma
        self.sweeps = sweeps
        self.method = method
        self.seed = seed
        self.averages: dict[tuple[str, str], PosteriorAverage] = {}

    def _probabilities(self, beta: torch.Tensor, gamma: float, index: int) -> torch.Tensor:
        generator = torch.Generator().manual_seed(self.seed + 7919 * (index + 1))
        return test_token_probabilities(
            beta.double(),
            self.heldout,
            gamma,
            self.sweeps,
            self.sweeps // 2,
            generator,
            self.method,
        )

    def score(
        self, model: str, beta: torch.Tensor, own_gamma: float, index: int
    ) -> tuple[float, float, float, float]:
        """(ppl, ppl_avg) at the common gamma and (ppl, ppl_avg) at the model's own gamma."""
        out: list[float] = []
        common = self._probabilities(beta, self.gamma, index)
        own = common if own_gamma == self.gamma else self._probabilities(beta, own_gamma, index)
        for key, probabilities in (("common", common), ("own", own)):
            average = self.averages.setdefault((model, key), PosteriorAverage())
            out += [perplexity_from_probabilities(probabilities), average.add(probabilities)]
        return out[0], out[1], out[2], out[3]


def _point(
    docs: int, tokens: int, train_s: float, scores: tuple[float, ...], eval_s: float
) -> Point:
    return Point(
        docs=docs,
        tokens=tokens,
        train_s=train_s,
        s_per_100_docs=100.0 * train_s / docs,
        tokens_per_s=tokens / train_s if train_s > 0 else math.inf,
        perplexity=scores[0],
        perplexity_avg=scores[1],
        perplexity_own=scores[2],
        perplexity_own_avg=scores[3],
        eval_s=eval_s,
    )


def run_sampler(
    name: str,
    args: argparse.Namespace,
    batches: list[Batch],
    checkpoints: list[int],
    n_words: int,
    scorer: Scorer,
) -> Run:
    """Train one StreamingLDA sampler, timing only ``update``; score at the checkpoints."""
    config = LearnerConfig(
        n_topics=args.topics,
        n_words=n_words,
        sampler=name,
        corpus_size=args.corpus_size,
        corpus_growth=args.corpus_growth,
        sweeps=args.sweeps,
        gibbs=args.gibbs,
        dtype=args.dtype,
        alpha=args.alpha,
        schedule=None if args.step_size is None else StepSchedule(args.step_size),
        friction=args.friction,
    )
    assert config.gamma is not None
    settings = config.to_dict()
    run = Run(name=name, settings=settings)
    start = time.perf_counter()
    StreamingLDA(config, seed=args.seed + 999).update(batches[0])  # compile / warm caches
    run.warmup_s = time.perf_counter() - start
    model = StreamingLDA(config, seed=args.seed)
    train_s, docs, tokens, index = 0.0, 0, 0, 0
    for batch in batches:
        start = time.perf_counter()
        try:
            model.update(batch)
        except NonFiniteError as exc:
            run.error = f"{exc} after {docs} documents"
            print(f"  {name}: {run.error}", file=sys.stderr)
            return run
        train_s += time.perf_counter() - start
        docs += batch.n_documents
        tokens += batch.n_tokens
        if index < len(checkpoints) and docs >= checkpoints[index]:
            start = time.perf_counter()
            scores = scorer.score(name, model.beta, config.gamma, index)
            point = _point(docs, tokens, train_s, scores, time.perf_counter() - start)
            run.points.append(point)
            _progress(name, point)
            index += 1
    return run


def run_gensim(
    args: argparse.Namespace,
    chunks: list[list[list[tuple[int, int]]]],
    tokens_per_chunk: list[int],
    checkpoints: list[int],
    vocab: Vocabulary,
    scorer: Scorer,
) -> Run:
    """gensim online VB on the same documents, timing only ``update(chunk)``."""
    from gensim.models import LdaModel

    logging.getLogger("gensim").setLevel(logging.ERROR)
    id2word = dict(enumerate(vocab.words))
    settings: dict[str, Any] = {
        "num_topics": args.topics,
        "chunksize": args.batch_size,
        "passes": 1,
        "update_every": 1,
        "eval_every": None,  # gensim's own perplexity logging is evaluation, not learning
        "random_state": args.seed,
    }

    def build() -> Any:
        return LdaModel(id2word=id2word, **settings)

    run = Run(name="gensim", settings={**settings, "numdocs": args.gensim_numdocs})
    start = time.perf_counter()
    build().update(chunks[0])  # warm imports and numpy
    run.warmup_s = time.perf_counter() - start
    model = build()
    own_gamma = float(model.alpha[0])
    run.settings["alpha"] = own_gamma
    total_docs = sum(len(c) for c in chunks)
    train_s, docs, tokens, index = 0.0, 0, 0, 0
    for chunk, n_tokens in zip(chunks, tokens_per_chunk, strict=True):
        if args.gensim_numdocs == "total":  # as one update(corpus) call: numdocs = D throughout
            model.state.numdocs = total_docs - len(chunk)
        start = time.perf_counter()
        model.update(chunk)
        train_s += time.perf_counter() - start
        docs += len(chunk)
        tokens += n_tokens
        if index < len(checkpoints) and docs >= checkpoints[index]:
            start = time.perf_counter()
            beta = torch.from_numpy(model.get_topics()).double()
            beta = beta / beta.sum(dim=1, keepdim=True)
            scores = scorer.score("gensim", beta, own_gamma, index)
            point = _point(docs, tokens, train_s, scores, time.perf_counter() - start)
            run.points.append(point)
            _progress("gensim", point)
            index += 1
    return run


def _progress(name: str, p: Point) -> None:
    print(
        f"  {name:7s} {p.docs:6d} docs  ppl {p.perplexity:8.1f}  avg {p.perplexity_avg:8.1f}"
        f"  {p.s_per_100_docs:.3f} s/100 docs  {p.tokens_per_s:9.0f} tok/s"
        f"  (eval {p.eval_s:.1f} s)",
        file=sys.stderr,
        flush=True,
    )


def format_table(runs: list[Run], eval_gamma: float) -> str:
    """A readable table: model x checkpoint, perplexities, speeds and ratios."""
    gensim = next((r for r in runs if r.name == "gensim" and r.points), None)
    gensim_rate = {p.docs: p.tokens_per_s for p in gensim.points} if gensim else {}
    header = (
        f"{'model':8s} {'docs':>6s} {'ppl':>8s} {'ppl_avg':>8s} {'ppl_own':>8s} "
        f"{'own_avg':>8s} {'s/100doc':>9s} {'tokens/s':>9s} {'x gensim':>8s} {'x paper':>8s}"
    )
    lines = [
        f"perplexity: ppl/ppl_avg at the common gamma={eval_gamma:g}; ppl_own/own_avg at each "
        "model's own document prior",
        "x gensim = tokens/s over gensim's at the same checkpoint; "
        f"x paper = {PAPER_S_PER_100} s/100 docs over ours",
        header,
        "-" * len(header),
    ]
    for run in runs:
        if run.error and not run.points:
            lines.append(f"{run.name:8s} FAILED: {run.error}")
        for p in run.points:
            ratio = p.tokens_per_s / gensim_rate[p.docs] if p.docs in gensim_rate else math.nan
            lines.append(
                f"{run.name:8s} {p.docs:6d} {p.perplexity:8.1f} {p.perplexity_avg:8.1f} "
                f"{p.perplexity_own:8.1f} {p.perplexity_own_avg:8.1f} {p.s_per_100_docs:9.4f} "
                f"{p.tokens_per_s:9.0f} {ratio:8.2f} {PAPER_S_PER_100 / p.s_per_100_docs:8.1f}"
            )
        if run.error and run.points:
            lines.append(f"{run.name:8s} stopped: {run.error}")
    return "\n".join(lines)


def targets(runs: list[Run]) -> dict[str, Any]:
    """How far the issue's three targets are met, at the last checkpoint of each run."""
    last = {r.name: r.points[-1] for r in runs if r.points}
    gensim = last.get("gensim")
    out: dict[str, Any] = {}
    for name, p in last.items():
        if name == "gensim":
            continue
        entry: dict[str, Any] = {
            "s_per_100_docs": p.s_per_100_docs,
            "meets_0.08_s_per_100": p.s_per_100_docs <= TARGET_S_PER_100,
        }
        if gensim is not None:
            entry["x_gensim_tokens_per_s"] = p.tokens_per_s / gensim.tokens_per_s
            entry["meets_2x_gensim"] = entry["x_gensim_tokens_per_s"] >= TARGET_GENSIM_RATIO
            entry["perplexity_below_gensim"] = p.perplexity < gensim.perplexity
        out[name] = entry
    return out


def format_targets(summary: dict[str, Any]) -> str:
    """One line per sampler: the three targets, met or not."""
    lines = [
        "targets at the last checkpoint (<= 0.08 s/100 docs; >= 2x gensim tokens/s; "
        "perplexity below gensim's, required of sgrhmc):"
    ]
    for name, t in summary.items():
        parts = [
            f"{t['s_per_100_docs']:.3f} s/100 docs "
            f"({'met' if t['meets_0.08_s_per_100'] else 'not met'})"
        ]
        if "x_gensim_tokens_per_s" in t:
            parts.append(
                f"{t['x_gensim_tokens_per_s']:.2f}x gensim "
                f"({'met' if t['meets_2x_gensim'] else 'not met'})"
            )
            parts.append(
                "ppl below gensim" if t["perplexity_below_gensim"] else "ppl NOT below gensim"
            )
        lines.append(f"  {name:7s} " + "; ".join(parts))
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line settings; ``--quick`` shrinks the unset sizes for a smoke run."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--corpus-dir", type=Path, default=DEFAULT_CORPUS)
    p.add_argument("--vocab", type=Path, default=None, help="default: CORPUS_DIR/vocab-7702.txt")
    p.add_argument("--docs", type=int, default=None, help="training documents (10000)")
    p.add_argument("--heldout", type=int, default=None, help="held-out documents (1000)")
    p.add_argument("--checkpoints", default=None, help="comma list (2000,5000,10000)")
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument("--sweeps", type=int, default=50, help="Gibbs sweeps per minibatch")
    p.add_argument("--samplers", default="sgld,sghmc,sgrld,sgrhmc")
    p.add_argument("--gensim", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument(
        "--gensim-numdocs",
        choices=["total", "seen"],
        default="seen",
        help="gensim's corpus size: all D documents, as one LdaModel(corpus) call, "
        "or the documents seen so far (default), as a stream of update() calls",
    )
    p.add_argument("--gibbs", choices=get_args(Method), default="exact")
    p.add_argument("--alpha", type=float, default=None, help="topic prior (default: sampler's)")
    p.add_argument("--step-size", type=float, default=None, help="constant eps (sampler's)")
    p.add_argument("--friction", type=float, default=1.0, help="friction C of SGHMC/SGRHMC")
    p.add_argument("--corpus-size", type=float, default=10_000.0, help="N in the gradient")
    p.add_argument("--corpus-growth", action="store_true", help="N = max(N, documents seen)")
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    p.add_argument("--eval-gamma", type=float, default=0.01, help="common document prior")
    p.add_argument("--eval-sweeps", type=int, default=50)
    p.add_argument("--max-tokens", type=int, default=None, help="truncate documents (testing)")
    p.add_argument("--threads", type=int, default=2, help="torch, numba (and BLAS) threads")
    p.add_argument("--torch-threads", type=int, default=None, help="override for torch only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="600 train / 200 held-out documents")
    p.add_argument("--json", type=Path, default=None, help="write all results here")
    args = p.parse_args(argv)
    quick = args.quick
    args.docs = args.docs if args.docs is not None else (600 if quick else 10_000)
    args.heldout = args.heldout if args.heldout is not None else (200 if quick else 1_000)
    if args.checkpoints is None:
        args.checkpoints = "300,600" if quick else "2000,5000,10000"
    args.checkpoint_list = sorted({int(c) for c in args.checkpoints.split(",") if c.strip()})
    args.sampler_list = [s.strip() for s in args.samplers.split(",") if s.strip()]
    unknown = [s for s in args.sampler_list if s not in SAMPLERS]
    if unknown:
        p.error(f"unknown sampler(s) {unknown}: choose from {sorted(SAMPLERS)}")
    if min(args.docs, args.heldout, args.topics, args.batch_size, args.sweeps, args.threads) < 1:
        p.error("sizes and counts must be positive")
    if args.vocab is None:
        args.vocab = args.corpus_dir / "vocab-7702.txt"
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; print the table; return (and optionally write) the results."""
    args = parse_args(argv)
    numba_threads = set_threads(args.threads, args.torch_threads)
    vocab = Vocabulary.load(args.vocab)
    start = time.perf_counter()
    corpus = read_corpus(args.corpus_dir, vocab, args.heldout, args.docs, args.max_tokens)
    n_docs = len(corpus.train)
    checkpoints = [c for c in args.checkpoint_list if c <= n_docs]
    if not checkpoints or checkpoints[-1] != n_docs:
        checkpoints.append(n_docs)
    groups = minibatches(corpus.train, args.batch_size)
    batches = [Batch.from_ids(g) for g in groups]
    heldout = HeldoutSet.from_documents(corpus.heldout)
    bows = [[sorted(Counter(d).items()) for d in g] for g in groups] if args.gensim else []
    prep_s = time.perf_counter() - start
    tokens_per_doc = corpus.train_tokens / max(n_docs, 1)
    print(
        f"corpus: {len(corpus.heldout)} held-out docs ({heldout.n_test_tokens} test tokens), "
        f"{n_docs} training docs ({corpus.train_tokens} tokens, {tokens_per_doc:.0f}/doc), "
        f"{corpus.skipped_empty} skipped with no vocabulary word; prepared in {prep_s:.1f} s",
        file=sys.stderr,
    )
    print(
        f"threads: torch {torch.get_num_threads()}, numba {numba_threads}; K={args.topics} "
        f"n={args.batch_size} sweeps={args.sweeps} gibbs={args.gibbs} N={args.corpus_size:g} "
        f"eval gamma={args.eval_gamma:g}",
        file=sys.stderr,
    )
    scorer = Scorer(heldout, args.eval_gamma, args.eval_sweeps, "exact", args.seed)
    runs: list[Run] = []
    if args.gensim:
        tokens = [sum(len(d) for d in g) for g in groups]
        runs.append(run_gensim(args, bows, tokens, checkpoints, vocab, scorer))
    for name in args.sampler_list:
        runs.append(run_sampler(name, args, batches, checkpoints, len(vocab), scorer))
    summary = targets(runs)
    print(format_table(runs, args.eval_gamma))
    print(format_targets(summary))
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv) if argv is None else " ".join(argv),
        "settings": {
            k: (str(v) if isinstance(v, Path) else v)
            for k, v in vars(args).items()
            if k not in {"checkpoint_list", "sampler_list"}
        },
        "threads": {"torch": torch.get_num_threads(), "numba": numba_threads},
        "corpus": {
            "files": corpus.files,
            "heldout_docs": len(corpus.heldout),
            "heldout_test_tokens": heldout.n_test_tokens,
            "train_docs": n_docs,
            "train_tokens": corpus.train_tokens,
            "skipped_empty": corpus.skipped_empty,
        },
        "paper_s_per_100_docs": PAPER_S_PER_100,
        "runs": [asdict(r) for r in runs],
        "targets": summary,
    }
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
