"""What a real-size model costs: learner docs/s, Gibbs ns per token-sweep, step ms and peak
memory over a grid of K topics x W words, with tomotopy's and scikit-learn's cost in the same run.

Each grid cell runs in a process of its own (peak RSS is a process's), on the same DEV
documents: the vocabulary the service would build (the W most frequent words of the stream's
first texts), ``--docs`` training documents in minibatches of the service's size, the first
``--heldout`` documents scored at the end by the learner's own estimator. Gibbs and step time
are split by timing ``gibbs_expectations`` inside ``update``.

    .venv/bin/python -m benchmarks.cost --topics 50,200,1000 --words 7702,50000,100000
    .venv/bin/python -m benchmarks.cost --topics 1000 --words 100000 --runs scir,sgrld --docs 2000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numba
import torch

from benchmarks import peers
from benchmarks.common import CORPORA, module_env, read_corpus, stream_vocabulary


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def _corpus(args: argparse.Namespace, n_words: int) -> tuple[Any, Any]:
    vocab = stream_vocabulary(args.corpus_dir, n_words, args.vocab_docs)
    corpus = read_corpus(args.corpus_dir, vocab, args.heldout, args.docs, short_ok=True)
    return vocab, corpus


def run_streamlda(args: argparse.Namespace, n_topics: int, n_words: int, run: str) -> dict:
    """One learner cell: docs/s, the Gibbs/step split, peak RSS and held-out perplexity."""
    from lda import model as model_module
    from lda.batch import Batch
    from lda.evaluation.perplexity import HeldoutSet
    from lda.model import LearnerConfig, StreamingLDA

    vocab, corpus = _corpus(args, n_words)
    sampler, *fields = run.split(":")
    overrides = {k: float(v) for k, v in (f.split("=") for f in fields)}
    config = LearnerConfig(
        n_topics=n_topics,
        n_words=len(vocab),
        sampler=sampler,
        corpus_size=args.corpus_size,
        dtype=args.dtype,
        **overrides,
    )
    gibbs_s = [0.0]
    real = model_module.gibbs_expectations

    def timed(*a: Any, **k: Any) -> Any:
        start = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            gibbs_s[0] += time.perf_counter() - start

    model_module.gibbs_expectations = timed  # type: ignore[assignment]
    batches = [
        Batch.from_ids(corpus.train[i : i + args.batch_size])
        for i in range(0, len(corpus.train), args.batch_size)
    ]
    StreamingLDA(config, seed=99).update(batches[0])  # compile
    gibbs_s[0] = 0.0
    model = StreamingLDA(config, seed=args.seed)
    start = time.perf_counter()
    for batch in batches:
        model.update(batch)
    train_s = time.perf_counter() - start
    tokens = sum(b.n_tokens for b in batches)
    sweeps = config.sweeps or 1
    eval_start = time.perf_counter()
    perplexity, _ = model.evaluate(HeldoutSet.from_documents(corpus.heldout))
    return {
        "system": run,
        "K": n_topics,
        "W": len(vocab),
        "docs": model.docs_seen,
        "docs_per_s": model.docs_seen / train_s,
        "gibbs_ns_per_token_sweep": 1e9 * gibbs_s[0] / (tokens * sweeps),
        "step_ms": 1e3 * (train_s - gibbs_s[0]) / len(batches),
        "peak_rss_gib": _peak_rss_gib(),
        "perplexity": perplexity,
        "eval_s": time.perf_counter() - eval_start,
    }


def run_tomotopy(args: argparse.Namespace, n_topics: int, n_words: int) -> dict:
    """tomotopy's collapsed Gibbs on the same documents: ns per token-iteration."""
    vocab, corpus = _corpus(args, n_words)
    model = peers.tomotopy_lda(corpus.train, vocab.words, n_topics, args.seed)
    peers.tomotopy_train(model, 0, args.threads)
    start = time.perf_counter()
    peers.tomotopy_train(model, args.tomotopy_iters, args.threads)
    seconds = time.perf_counter() - start
    tokens = sum(len(d) for d in corpus.train)
    return {
        "system": f"tomotopy ({args.threads} workers)",
        "K": n_topics,
        "W": len(vocab),
        "docs": len(corpus.train),
        "docs_per_s": len(corpus.train) * args.tomotopy_iters / seconds,
        "gibbs_ns_per_token_sweep": 1e9 * seconds / (tokens * args.tomotopy_iters),
        "peak_rss_gib": _peak_rss_gib(),
    }


def run_sklearn(args: argparse.Namespace, n_topics: int, n_words: int) -> dict:
    """scikit-learn's online VB, partial_fit per minibatch: docs/s."""
    vocab, corpus = _corpus(args, n_words)
    model = peers.sklearn_lda(n_topics, args.batch_size, int(args.corpus_size), args.seed, 1)
    matrices = [
        peers.doc_term_matrix(corpus.train[i : i + args.batch_size], len(vocab))
        for i in range(0, len(corpus.train), args.batch_size)
    ]
    model.partial_fit(matrices[0])
    start = time.perf_counter()
    for matrix in matrices[1:]:
        model.partial_fit(matrix)
    seconds = time.perf_counter() - start
    docs = sum(m.shape[0] for m in matrices[1:])
    return {
        "system": "sklearn",
        "K": n_topics,
        "W": len(vocab),
        "docs": docs,
        "docs_per_s": docs / seconds,
        "peak_rss_gib": _peak_rss_gib(),
    }


def cell(args: argparse.Namespace) -> dict:
    """The one cell this process was asked for (``--cell K,W,SYSTEM``)."""
    torch.set_num_threads(args.threads)
    numba.set_num_threads(min(args.threads, int(numba.config.NUMBA_NUM_THREADS)))  # type: ignore[attr-defined]
    k_text, w_text, system = args.cell.split(",", 2)
    n_topics, n_words = int(k_text), int(w_text)
    if system == "tomotopy":
        return run_tomotopy(args, n_topics, n_words)
    if system == "sklearn":
        return run_sklearn(args, n_topics, n_words)
    return run_streamlda(args, n_topics, n_words, system)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--corpus-dir", type=Path, default=CORPORA)
    p.add_argument("--topics", default="50,200,1000", help="comma list of K")
    p.add_argument("--words", default="7702,50000,100000", help="comma list of W")
    p.add_argument("--runs", default="sgrld,scir", help="streamlda samplers[:field=value...]")
    p.add_argument("--peers", default="tomotopy,sklearn", help="comma list, or empty")
    p.add_argument("--docs", type=int, default=2000, help="training documents per cell")
    p.add_argument("--heldout", type=int, default=500)
    p.add_argument("--vocab-docs", type=int, default=2000, help="texts counted for the vocabulary")
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--corpus-size", type=float, default=6_900_000.0, help="N")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    p.add_argument("--tomotopy-iters", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, default=None, help="write the rows here")
    p.add_argument("--cell", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _row(r: dict) -> str:
    def cell_text(key: str, fmt: str) -> str:
        width = int(fmt.split(".")[0])
        return format(r[key], fmt) if r.get(key) is not None else f"{'-':>{width}s}"

    return (
        f"{r['system']:24s} {r['K']:5d} {r['W']:7d} {cell_text('docs_per_s', '9.1f')} "
        f"{cell_text('gibbs_ns_per_token_sweep', '9.1f')} {cell_text('step_ms', '9.1f')} "
        f"{cell_text('peak_rss_gib', '8.2f')} {cell_text('perplexity', '9.1f')}"
    )


def main(argv: Sequence[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    if args.cell is not None:
        print(json.dumps(cell(args)))
        return []
    systems = [r for r in args.runs.split(",") if r] + [p for p in args.peers.split(",") if p]
    rows: list[dict] = []
    print(
        f"{'system':24s} {'K':>5s} {'W':>7s} {'docs/s':>9s} {'ns/tok-sw':>9s} {'step ms':>9s} "
        f"{'peak GiB':>8s} {'ppl':>9s}"
    )
    base = [a for a in (argv if argv is not None else sys.argv[1:])]
    for n_topics in (int(k) for k in args.topics.split(",")):
        for n_words in (int(w) for w in args.words.split(",")):
            for system in systems:
                command = [
                    sys.executable,
                    "-m",
                    "benchmarks.cost",
                    *base,
                    "--cell",
                    f"{n_topics},{n_words},{system}",
                ]
                done = subprocess.run(
                    command, env=module_env(), capture_output=True, text=True, check=False
                )
                if done.returncode != 0:
                    print(f"{system} K={n_topics} W={n_words} FAILED: {done.stderr[-400:]}")
                    continue
                row = json.loads(done.stdout.strip().splitlines()[-1])
                rows.append(row)
                print(_row(row), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
