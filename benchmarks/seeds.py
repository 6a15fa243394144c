"""Seeded topics on DEV: do five seeded topics hold their words, and at what cost?

Five themes of five words each (``THEMES``) seed topics 0-4 of SCIR at the service's settings
(K = 50, N = 6.9 million, minibatches of 100, W = 50,000 counted from the stream), each seed
word's prior raised by s pseudo-counts, s = :func:`lda.sgmcmc.seeds.pseudo_counts` of each
``--strengths`` entry. Every run learns the same articles from the same seed as an unseeded
peer, and is scored by :mod:`benchmarks.learner`'s estimator (held-out perplexity of the served
``beta_mean``, mean NPMI of its top words on the held-out documents). Reported per run:

* seeded: how many of each theme's words are in its topic's top 20 (the bar: >= 4 of 5);
* unseeded: each theme's best-matching topic (most of its words in the top 20) and its count;
* perplexity over the unseeded run's (bar: <= 1.02) and NPMI minus its (bar: >= -0.01);
* mid-stream (``--mid-at``): seeds set after that many articles at the first strength, and how
  many words each topic holds every ``--every`` articles after (bar: >= 4 of 5 within 6,000).

    .venv/bin/python -m benchmarks.seeds                     # 10,000 articles, a few minutes
    .venv/bin/python -m benchmarks.seeds --strengths 0.3,1,3 --no-mid
    .venv/bin/python -m benchmarks.seeds --quick             # ~20 second smoke run
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import CORPORA, minibatches, read_corpus, set_threads, stream_vocabulary
from benchmarks.scorer import Scorer
from benchmarks.streamlda_runs import parse_run_spec, run_streamlda
from lda.batch import Batch
from lda.config import SEED_STRENGTH
from lda.evaluation.perplexity import HeldoutSet
from lda.model import StreamingLDA
from lda.sgmcmc.seeds import SeedPrior, pseudo_counts
from lda.vocab import Vocabulary
from service.settings import ModelSettings

TOP = 20  # a seed holds when it is among its topic's top 20 words
HOLD = 4  # the bar: at least 4 of a theme's 5 words in the top 20

# Themes DEV holds, five words each, seeding topics 0, 1, ... in this order.
THEMES: dict[str, tuple[str, ...]] = {
    "music": ("music", "album", "band", "song", "singer"),
    "football": ("football", "club", "league", "cup", "goals"),
    "war": ("war", "army", "battle", "forces", "troops"),
    "species": ("species", "genus", "family", "described", "moth"),
    "elections": ("election", "party", "votes", "elected", "candidate"),
}


@dataclass
class Result:
    """One run: its seeds' strength, its scores at the end, and each theme's words held."""

    name: str
    strength: float | None  # None: unseeded
    pseudo_counts: float | None
    seeded_at: int | None  # articles learned before the seeds were set
    perplexity: float = float("nan")
    npmi: float = float("nan")
    learn_s: float = 0.0
    # theme -> (topic, seed words in its top 20) at the end; unseeded: the best-matching topic
    held: dict[str, tuple[int, int]] = field(default_factory=dict)
    top_words: dict[str, list[str]] = field(default_factory=dict)  # theme -> its topic's top 10
    # articles -> theme -> words held, every --every articles after the seeds were set
    trace: dict[int, dict[str, int]] = field(default_factory=dict)


def theme_ids(vocabulary: Vocabulary) -> dict[str, list[int]]:
    """Each theme's word ids; a word outside the vocabulary is an error."""
    missing = [w for words in THEMES.values() for w in words if w not in vocabulary.index]
    if missing:
        raise SystemExit(f"error: seed words outside the vocabulary: {missing}")
    return {theme: [vocabulary.index[w] for w in words] for theme, words in THEMES.items()}


def seed_prior(themes: dict[str, list[int]], s: float) -> SeedPrior:
    """Theme i's words seed topic i, each with s pseudo-counts."""
    return SeedPrior.of((k, w, s) for k, ids in enumerate(themes.values()) for w in ids)


def held(top: list[list[int]], themes: dict[str, list[int]], seeded: bool) -> dict[str, Any]:
    """theme -> (topic, its words in that topic's top words): topic i for a seeded run, the
    topic holding most of them (lowest number on a tie) for an unseeded one."""
    out: dict[str, tuple[int, int]] = {}
    for i, (theme, ids) in enumerate(themes.items()):
        counts = [len(set(ids) & set(row)) for row in top]
        k = i if seeded else max(range(len(top)), key=lambda j: (counts[j], -j))
        out[theme] = (k, counts[k])
    return out


def run(
    args: argparse.Namespace,
    name: str,
    batches: list[Batch],
    vocabulary: Vocabulary,
    scorer: Any,
    themes: dict[str, list[int]],
    strength: float | None,
    s: float | None,
    seeded_at: int | None,
) -> Result:
    """One SCIR run at the service's settings, seeded with s at ``seeded_at`` articles (None:
    never), scored at the end; top words read every --every articles once seeded."""
    result = Result(name, strength, s, seeded_at)
    n_docs = sum(b.n_documents for b in batches)

    def observe(model: StreamingLDA, docs: int) -> None:
        if s is not None and seeded_at is not None and docs == seeded_at:
            model.set_seeds(seed_prior(themes, s))
        seeded = s is not None and seeded_at is not None and docs >= seeded_at
        due = seeded and docs > seeded_at and (docs - seeded_at) % args.every == 0  # type: ignore[operator]
        if docs == n_docs or due:
            ids, _ = model.top_words(TOP)
            top = ids.cpu().tolist()
            now = held(top, themes, seeded=s is not None)
            if due or (seeded and docs == n_docs):
                result.trace[docs] = {theme: count for theme, (_, count) in now.items()}
            if docs == n_docs:
                result.held = now
                result.top_words = {
                    theme: [vocabulary.words[w] for w in top[k][:10]]
                    for theme, (k, _) in now.items()
                }

    spec = parse_run_spec(args.sampler)
    timed = run_streamlda(spec, args, batches, [n_docs], vocabulary, scorer, observe)
    if timed.error is not None:
        raise SystemExit(f"error: {name}: {timed.error}")
    last = timed.points[-1]
    assert last.perplexity_mean is not None and last.npmi is not None
    result.perplexity, result.npmi, result.learn_s = last.perplexity_mean, last.npmi, last.train_s
    return result


def report(results: list[Result], args: argparse.Namespace) -> str:
    """The table: per run its scores against the unseeded run's and each theme's words held."""
    base = results[0]
    lines = [
        f"{args.docs} articles, K={args.topics}, SCIR at the service's settings; perplexity "
        f"(served beta_mean) / mean NPMI of the top 10 words; per theme: words of 5 in its "
        f"topic's top {TOP} (unseeded: the best-matching topic, #number)",
        f"{'run':22s} {'s':>10s} {'ppl':>8s} {'x ppl':>6s} {'npmi':>7s} {'d npmi':>7s} "
        + " ".join(f"{t:>11s}" for t in THEMES)
        + "  bar",
    ]
    for r in results:
        ratio, delta = r.perplexity / base.perplexity, r.npmi - base.npmi
        s = "-" if r.pseudo_counts is None else f"{r.pseudo_counts:.3g}"
        cells = " ".join(
            f"{f'{c}/5 #{k}' if r.strength is None else f'{c}/5':>11s}" for k, c in r.held.values()
        )
        met = ""
        if r.strength is not None:
            hold = all(c >= HOLD for _, c in r.held.values())
            met = "met" if hold and ratio <= 1.02 and delta >= -0.01 else "NOT met"
        lines.append(
            f"{r.name:22s} {s:>10s} {r.perplexity:8.1f} {ratio:6.3f} {r.npmi:+7.3f} "
            f"{delta:+7.3f} {cells}  {met}"
        )
    for r in results:
        if r.trace:
            lines.append(f"{r.name}: words held after the seeds were set at {r.seeded_at}:")
            for docs, counts in sorted(r.trace.items()):
                row = " ".join(f"{theme} {c}/5" for theme, c in counts.items())
                lines.append(f"  +{docs - (r.seeded_at or 0):6d} articles: {row}")
    lines.append("top 10 words of each theme's topic:")
    for r in results:
        for theme, words in r.top_words.items():
            lines.append(f"  {r.name:22s} {theme:10s} {' '.join(words)}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line settings; ``--quick`` shrinks the unset sizes for a smoke run."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--corpus-dir", type=Path, default=CORPORA)
    p.add_argument(
        "--vocab-size",
        type=int,
        default=ModelSettings.model_fields["vocab_size"].default,
        help="W, counted from the stream's first --vocab-docs texts (default: the service's)",
    )
    p.add_argument(
        "--vocab-docs", type=int, default=ModelSettings.model_fields["vocab_docs"].default
    )
    p.add_argument("--docs", type=int, default=None, help="training articles (10000)")
    p.add_argument("--heldout", type=int, default=None, help="held-out articles (1000)")
    p.add_argument("--topics", type=int, default=ModelSettings.model_fields["topics"].default)
    p.add_argument(
        "--strengths",
        default=f"{SEED_STRENGTH:g}",
        help="comma list: a seeded run per strength (lda.sgmcmc.seeds.pseudo_counts; "
        "default: the shipped one)",
    )
    p.add_argument(
        "--mid-at",
        type=int,
        default=None,
        help="also seed a run after this many articles, at the first strength (4000; 0: no)",
    )
    p.add_argument("--every", type=int, default=None, help="read top words every (1000)")
    p.add_argument("--corpus-size", type=float, default=None, help="N (default: the service's)")
    p.add_argument("--eval-gamma", type=float, default=0.01, help="common document prior")
    p.add_argument("--eval-sweeps", type=int, default=50)
    p.add_argument("--threads", type=int, default=2, help="torch and numba threads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="600 articles, 200 held out")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    args = p.parse_args(argv)
    quick = args.quick
    args.docs = args.docs if args.docs is not None else (600 if quick else 10_000)
    args.heldout = args.heldout if args.heldout is not None else (200 if quick else 1_000)
    args.mid_at = args.mid_at if args.mid_at is not None else (200 if quick else 4_000)
    args.every = args.every if args.every is not None else (200 if quick else 1_000)
    args.strength_list = [float(x) for x in args.strengths.split(",") if x.strip()]
    if min(args.docs, args.heldout, args.topics, args.every, args.threads) < 1:
        p.error("sizes must be positive")
    if not args.strength_list or min(args.strength_list) <= 0:
        p.error("--strengths must list positive values")
    if args.topics < len(THEMES):
        p.error(f"--topics must be at least {len(THEMES)}, a topic per theme")
    if args.corpus_size is None:
        args.corpus_size = float(ModelSettings.model_fields["wikipedia_articles"].default)
    # What make_config and run_streamlda read: the service's SCIR, unchanged.
    args.sampler = "scir"
    args.step_size = args.alpha = args.sweeps = args.gibbs = None
    args.corpus_growth, args.friction, args.dtype, args.device = False, 1.0, "float64", "cpu"
    args.streamlda_batch_size = ModelSettings.model_fields["batch_size"].default
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the unseeded, seeded and mid-stream runs; print the table; return the results."""
    args = parse_args(argv)
    set_threads(args.threads)
    start = time.perf_counter()
    vocab = stream_vocabulary(args.corpus_dir, args.vocab_size, args.vocab_docs)
    themes = theme_ids(vocab)
    corpus = read_corpus(args.corpus_dir, vocab, args.heldout, args.docs)
    n_docs = len(corpus.train)
    size = args.streamlda_batch_size
    batches = [Batch.from_ids(g) for g in minibatches(corpus.train, size)]
    tokens_per_doc = corpus.train_tokens / n_docs
    scorer = Scorer(
        HeldoutSet.from_documents(corpus.heldout),
        args.eval_gamma,
        args.eval_sweeps,
        "exact",
        args.seed,
        reference=corpus.heldout,
    )
    print(
        f"{n_docs} training articles ({tokens_per_doc:.0f} tokens each), {len(corpus.heldout)} "
        f"held out, W={len(vocab)}, K={args.topics}, N={args.corpus_size:g}; prepared in "
        f"{time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )

    def s_of(strength: float) -> float:
        return pseudo_counts(strength, args.corpus_size, tokens_per_doc, args.topics)

    results = [run(args, "unseeded", batches, vocab, scorer, themes, None, None, None)]
    for strength in args.strength_list:
        name = f"seeded {strength:g}"
        results.append(run(args, name, batches, vocab, scorer, themes, strength, s_of(strength), 0))
    if 0 < args.mid_at < n_docs:
        strength = args.strength_list[0]
        name = f"seeded {strength:g} at {args.mid_at}"
        results.append(
            run(args, name, batches, vocab, scorer, themes, strength, s_of(strength), args.mid_at)
        )
    print(report(results, args))
    out: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv) if argv is None else " ".join(argv),
        "themes": THEMES,
        "train_docs": n_docs,
        "tokens_per_doc": tokens_per_doc,
        "n_words": len(vocab),
        "results": [asdict(r) for r in results],
    }
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    main()
