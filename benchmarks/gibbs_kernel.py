"""Time the collapsed Gibbs kernel alone on real minibatches (BENCHMARKS.md, "Where the time
goes, and what was kept").

Trains SGRLD on the first ``--warm`` DEV documents (so beta looks like a learned one), then runs
the kernel (50 sweeps, burn-in 25, K = 50) on the next ``--batches`` minibatches of 50 documents,
``--rounds`` times, and prints ms per minibatch and ns per token-sweep. Compare two versions of
the kernel by running this script on each in the same sitting, alternately.

    .venv/bin/python -m benchmarks.gibbs_kernel --threads 2
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

import numba
import numpy as np
import torch

from benchmarks.common import CORPORA, minibatches, read_corpus
from lda.batch import Batch
from lda.config import default_burn_in
from lda.gamma import gamma_vector
from lda.gibbs.dense import balanced_schedule, collapsed_gibbs
from lda.model import LearnerConfig, StreamingLDA
from lda.vocab import Vocabulary


def time_kernel(batch: Batch, beta_t: np.ndarray, sweeps: int, seed: int) -> float:
    """Seconds of one kernel call on ``batch`` (fresh assignments and uniforms from ``seed``)."""
    g = torch.Generator().manual_seed(seed)
    n_topics = beta_t.shape[1]
    z = torch.randint(n_topics, (batch.n_tokens,), generator=g).numpy().copy()
    uniforms = torch.rand((sweeps, batch.n_tokens), generator=g).numpy()
    out = np.zeros((batch.n_tokens, n_topics), dtype=np.uint16)
    offsets = batch.offsets.numpy()
    schedule, bounds = balanced_schedule(np.diff(offsets), numba.get_num_threads())
    gamma = gamma_vector(0.01, n_topics)  # the kernel takes gamma_k; symmetric here
    start = time.perf_counter()
    collapsed_gibbs(
        batch.words.numpy(), offsets, schedule, bounds, beta_t, gamma, z, uniforms,
        default_burn_in(sweeps), False, out,
    )  # fmt: skip
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus-dir", type=Path, default=CORPORA)
    p.add_argument("--threads", type=int, default=2, help="numba threads")
    p.add_argument("--warm", type=int, default=2000, help="SGRLD training documents first")
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sweeps", type=int, default=50)
    args = p.parse_args(argv)
    numba.set_num_threads(args.threads)
    torch.set_num_threads(1)
    vocab = Vocabulary.load(args.corpus_dir / "vocab-7702.txt")
    corpus = read_corpus(args.corpus_dir, vocab, 0, args.warm + 50 * args.batches)
    groups = minibatches(corpus.train, 50)
    warm, timed = groups[: args.warm // 50], groups[args.warm // 50 :]
    config = LearnerConfig(50, len(vocab), sampler="sgrld", sweeps=args.sweeps)
    model = StreamingLDA(config, seed=0)
    for group in warm:
        model.update(Batch.from_ids(group))
    beta_t = model.beta.T.contiguous().numpy()
    batches = [Batch.from_ids(g) for g in timed]
    time_kernel(batches[0], beta_t, args.sweeps, 0)  # compile
    seconds = sum(
        time_kernel(b, beta_t, args.sweeps, i)
        for _ in range(args.rounds)
        for i, b in enumerate(batches)
    )
    calls = args.rounds * len(batches)
    token_sweeps = args.rounds * args.sweeps * sum(b.n_tokens for b in batches)
    print(
        f"numba threads {args.threads}: {1000 * seconds / calls:.1f} ms per minibatch of 50 docs, "
        f"{1e9 * seconds / token_sweeps:.1f} ns per token-sweep (wall)"
    )


if __name__ == "__main__":
    main()
