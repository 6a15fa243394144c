"""Learner docs/s with 1 and 2 data-parallel ranks (gloo) on this machine, and the all-reduce.

Every configuration learns the same DEV documents in the same global minibatches (``--batch``
documents, split evenly over the ranks), with the cores shared out so that they are not
oversubscribed: 1 rank x ``--cores`` threads against ``--cores`` ranks x 1 thread. Each rank
times its learning loop (after a barrier) and the all-reduce inside it; docs/s is the documents
over the slowest rank's seconds. Then, on paper, the all-reduce volume per step (K x W float64)
against the measured Gibbs time per minibatch, for K = 50 and 1,000 and W = 7,702 and 100,000.

    .venv/bin/python -m benchmarks.ranks            # K = 50 and 200, 6,000 documents, 3 runs
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import time

import torch
import torch.multiprocessing as mp

from benchmarks.common import CORPORA
from lda.batch import Batch
from lda.model import LearnerConfig, StreamingLDA
from lda.vocab import Vocabulary
from service.ingest.sources.jsonl import JsonlSource
from service.learn.distributed import DistributedReducer, Group, join, leave

LINK_GBPS = 10.0  # the network assumed for the on-paper figures (10 Gb/s Ethernet)
# measured in the K = 1,000 peer run: 4.1 µs per token-sweep
RB_SWEEP_NS_PER_TOPIC = 4100 / 1000


def documents(n: int, vocab: Vocabulary) -> list[list[int]]:
    """The first ``n`` DEV documents with a vocabulary word, as word ids."""
    out: list[list[int]] = []
    for shard in sorted(CORPORA.glob("dev-*.jsonl.gz")):
        for article in JsonlSource(shard):
            ids = vocab.encode(article.text)
            if ids:
                out.append(ids)
            if len(out) == n:
                return out
    return out


def _rank(rank: int, world: int, threads: int, port: str, topics: int, batch: int,
          docs: list[list[int]], n_words: int, results: dict) -> None:  # fmt: skip
    torch.set_num_threads(threads)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    import numba

    numba.set_num_threads(threads)
    reducer = None
    if world > 1:
        join(Group(rank=rank, world_size=world, local_rank=rank), torch.device("cpu"))
        reducer = DistributedReducer(torch.device("cpu"))
        reduce_s = [0.0]
        plain = reducer.sum_

        def timed(tensor: torch.Tensor) -> None:
            started = time.perf_counter()
            plain(tensor)
            reduce_s[0] += time.perf_counter() - started

        reducer.sum_ = timed  # type: ignore[method-assign]
    model = StreamingLDA(LearnerConfig(n_topics=topics, n_words=n_words), seed=0)
    share = batch // world
    model.update(Batch.from_ids(docs[:batch][rank * share : (rank + 1) * share]), reducer)  # warm
    if world > 1:
        torch.distributed.barrier()
    started = time.perf_counter()
    for start in range(batch, len(docs) - batch + 1, batch):
        mine = docs[start : start + batch][rank * share : (rank + 1) * share]
        model.update(Batch.from_ids(mine), reducer)
    seconds = time.perf_counter() - started
    results[rank] = (seconds, reduce_s[0] if world > 1 else 0.0)
    if world > 1:
        leave()


def run(world: int, threads: int, topics: int, batch: int, docs: list[list[int]], n_words: int):
    """(docs/s over the slowest rank, all-reduce seconds of rank 0, learning seconds)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    context = mp.get_context("spawn")
    manager = context.Manager()
    results = manager.dict()
    args = (world, threads, port, topics, batch, docs, n_words, results)
    procs = [context.Process(target=_rank, args=(r, *args)) for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"a rank failed with exit code {p.exitcode}")
    slowest = max(results[r][0] for r in range(world))
    trained = (len(docs) // batch - 1) * batch
    return trained / slowest, results[0][1], slowest


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=6000)
    p.add_argument("--topics", type=int, nargs="+", default=[50, 200])
    p.add_argument("--batch", type=int, default=100, help="global minibatch (documents)")
    p.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    vocab = Vocabulary.load(CORPORA / "vocab-7702.txt")
    docs = documents(args.docs, vocab)
    tokens_per_doc = sum(len(d) for d in docs) / len(docs)
    print(f"{len(docs)} DEV documents, {tokens_per_doc:.0f} tokens each, W = {len(vocab)}")
    print(f"global minibatch {args.batch}, {args.cores} cores; medians of {args.repeat} runs, "
          "configurations interleaved")  # fmt: skip
    configs = [(1, args.cores), (args.cores, 1)]
    step_seconds: dict[int, float] = {}
    for topics in args.topics:
        rates: dict[int, list[float]] = {w: [] for w, _ in configs}
        reduce: list[float] = []
        for _ in range(args.repeat):
            for world, threads in configs:
                rate, reduce_s, seconds = run(world, threads, topics, args.batch, docs, len(vocab))
                rates[world].append(rate)
                if world > 1:
                    reduce.append(reduce_s / seconds)
        one, many = statistics.median(rates[1]), statistics.median(rates[args.cores])
        step_seconds[topics] = args.batch / one
        print(f"K = {topics:>4}: 1 rank x {args.cores} threads {one:8.0f} docs/s | "
              f"{args.cores} ranks x 1 thread {many:8.0f} docs/s ({many / one:.2f}x); "
              f"all-reduce {100 * statistics.median(reduce):.1f}% of the ranks' time")  # fmt: skip
    print(f"\non paper, per step of {args.batch} documents, ring all-reduce at {LINK_GBPS:g} Gb/s")
    tokens = args.batch * tokens_per_doc
    for topics in (50, 1000):
        for words in (7702, 100_000):
            volume = topics * words * 8
            wire_s = 2 * volume / (LINK_GBPS * 1e9 / 8)  # 2(N-1)/N of the volume, N large
            gibbs_s = step_seconds.get(topics)
            if gibbs_s is None:  # K = 1,000: the Rao-Blackwellised sweep's measured cost
                gibbs_s = tokens * 6 * RB_SWEEP_NS_PER_TOPIC * topics * 1e-9
            print(f"K = {topics:>4}, W = {words:>7}: {volume / 1e6:7.1f} MB per step, "
                  f"{wire_s:7.3f} s on the wire against {gibbs_s:6.3f} s of learning "
                  f"on one machine")  # fmt: skip


if __name__ == "__main__":
    main()
