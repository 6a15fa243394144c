"""Dense against sparse collapsed Gibbs on real minibatches, over K and the vocabulary size W.

For each W (the 7,702-word file, or the W words in most of the first ``--vocab-docs`` DEV
articles, built once and cached outside the repository) and each K: trains SGRLD on the first
``--warm`` documents (a learned beta: documents then use few topics, as in service), then times
``gibbs_expectations`` plus ``topic_word`` (what one learner update pays for its Gibbs part:
the dense path's full transpose of beta and (T, K) sums, the sparse path's column gather) with
the learner's sweeps, burn-in and method, on the next ``--batches`` minibatches of
``--batch-size`` documents, ``--rounds`` times, the two kernels interleaved (order alternating).
``--scorer`` times the held-out scorer's calls instead (its sweeps, a start from beta, document
sums only). Prints the median ns per token-sweep and documents per second of each.

    nice -n 10 .venv/bin/python -m benchmarks.gibbs_sparse --threads 2
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numba
import torch

from benchmarks.common import CORPORA, minibatches, read_corpus
from lda.batch import Batch
from lda.gibbs import GibbsConfig, gibbs_expectations
from lda.model import LearnerConfig, StreamingLDA
from lda.vocab import Vocabulary, build_vocabulary


def _texts(corpus_dir: Path, limit: int) -> Iterator[str]:
    """The first ``limit`` plain-text DEV articles (wikitext ones skipped: vocabulary only)."""
    n = 0
    for path in sorted(corpus_dir.glob("dev-*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for line in lines:
                record = json.loads(line)
                if record.get("format") == "wikitext":
                    continue
                yield record.get("text") or ""
                n += 1
                if n >= limit:
                    return


def vocabulary(corpus_dir: Path, size: int, vocab_docs: int, cache: Path) -> Vocabulary:
    """The 7,702-word file, or ``size`` words built from the corpus (cached in ``cache``)."""
    if size == 7702:
        return Vocabulary.load(corpus_dir / "vocab-7702.txt")
    path = cache / f"vocab-{size}-{vocab_docs}.txt"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        build_vocabulary(_texts(corpus_dir, vocab_docs), size).save(path)
    return Vocabulary.load(path)


def sweeps_of(model: StreamingLDA, scorer: bool) -> int:
    """Sweeps of one call: the held-out scorer's or the learner's."""
    sweeps = model.config.eval_sweeps if scorer else model.config.sweeps
    assert sweeps is not None
    return sweeps


def time_call(model: StreamingLDA, batch: Batch, kernel: str, seed: int, scorer: bool) -> float:
    """Seconds of one learner-style Gibbs call and its topic-word sums, or (``scorer``) of the
    held-out scorer's: its sweeps, burn-in and method, a start from beta, document sums only."""
    cfg = model.config
    assert cfg.gamma is not None and cfg.burn_in is not None and cfg.gibbs is not None
    g = torch.Generator().manual_seed(seed)
    if scorer:
        config = model.scorer_config.gibbs
    else:
        config = GibbsConfig(cfg.gamma, sweeps_of(model, False), cfg.burn_in, cfg.gibbs)
    config = replace(config, backend="cpu", kernel=kernel)  # type: ignore[arg-type]
    start = time.perf_counter()
    result = gibbs_expectations(model.beta, batch, config, g)
    if scorer:
        result.document_topic()
    else:
        result.topic_word(cfg.n_words)
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus-dir", type=Path, default=CORPORA)
    p.add_argument("--cache-dir", type=Path, default=Path("/tmp/streamlda-bench"))
    p.add_argument("--threads", type=int, default=2, help="numba threads")
    p.add_argument("--topics", default="50,200,1000", help="K values, comma-separated")
    p.add_argument("--words", default="7702,50000,100000", help="W values, comma-separated")
    p.add_argument("--vocab-docs", type=int, default=20000, help="articles the W words come from")
    p.add_argument("--warm", type=int, default=300, help="SGRLD training documents first")
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--kernels", default="dense,sparse")
    p.add_argument("--scorer", action="store_true", help="time the held-out scorer's calls")
    args = p.parse_args(argv)
    numba.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    kernels = args.kernels.split(",")
    print(f"numba threads {args.threads}; beta: SGRLD after {args.warm} documents")
    for n_words in (int(w) for w in args.words.split(",")):
        vocab = vocabulary(args.corpus_dir, n_words, args.vocab_docs, args.cache_dir)
        n_docs = args.warm + args.batch_size * args.batches
        corpus = read_corpus(args.corpus_dir, vocab, 0, n_docs)
        warm, timed = corpus.train[: args.warm], corpus.train[args.warm :]
        batches = [Batch.from_ids(g) for g in minibatches(timed, args.batch_size)]
        tokens = statistics.mean(b.n_tokens for b in batches)
        for n_topics in (int(k) for k in args.topics.split(",")):
            model = StreamingLDA(LearnerConfig(n_topics, len(vocab), sampler="sgrld"), seed=0)
            for group in minibatches(warm, args.batch_size):
                model.update(Batch.from_ids(group))
            sweeps = sweeps_of(model, args.scorer)
            for kernel in kernels:  # compile, and touch beta once
                time_call(model, batches[0], kernel, 0, args.scorer)
            seconds: dict[str, list[float]] = {k: [] for k in kernels}
            for r in range(args.rounds):
                for i, batch in enumerate(batches):
                    order = kernels if (r + i) % 2 == 0 else kernels[::-1]
                    for kernel in order:
                        seed = r * len(batches) + i
                        elapsed = time_call(model, batch, kernel, seed, args.scorer)
                        seconds[kernel].append(elapsed / (sweeps * batch.n_tokens))
            cfg = model.config
            what = f"scorer, {cfg.eval_gibbs}" if args.scorer else f"learner, {cfg.gibbs}"
            for kernel in kernels:
                per = statistics.median(seconds[kernel])
                print(
                    f"W={len(vocab):>6} K={n_topics:>4} {kernel:>6}: {1e9 * per:8.1f} ns per "
                    f"token-sweep, {args.batch_size / (per * sweeps * tokens):7.1f} docs/s "
                    f"({what}, {sweeps} sweeps, {tokens:.0f} tokens per minibatch)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
