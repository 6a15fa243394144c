"""What one vocabulary refresh costs a large learner: seconds and peak memory.

A session as the worker's (K topics, W words, float32 by default) takes its first vocabulary from
the first ``--vocab-docs`` DEV articles, counts every DEV article as the stream would, then
refreshes once (``LearningSession.refresh``: the counts' top W chosen, the learner's columns,
the held-out set and the minibatch in hand moved). Prints the words that entered, the seconds
the refresh took, and the process's peak resident memory before and after it (the learner's
K x W matrices are most of it), beside the worker's 3 GB.

    .venv/bin/python -m benchmarks.refresh_cost --topics 1000 --vocab-size 100000
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import time
from pathlib import Path

import torch

from benchmarks.common import CORPORA, read_texts
from lda.batch import Batch
from lda.vocab import build_vocabulary
from service.learn.session import LearningSession
from service.settings import Settings

WORKER_GB = 3.0


def peak_gb() -> float:
    """This process's peak resident memory so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus-dir", type=Path, default=CORPORA)
    p.add_argument("--topics", type=int, default=1000)
    p.add_argument("--vocab-size", type=int, default=100_000)
    p.add_argument("--vocab-docs", type=int, default=2000)
    p.add_argument("--heldout", type=int, default=1000)
    p.add_argument("--dtype", default="float32")
    args = p.parse_args()

    _, texts = read_texts(args.corpus_dir)
    stream = list(texts)
    settings = Settings(
        topics=args.topics,
        vocab_size=args.vocab_size,
        vocab_docs=args.vocab_docs,
        heldout=args.heldout,
        dtype=args.dtype,
        fixed_topics=True,  # a refresh's cost at a fixed K
    )
    session: LearningSession[int] = LearningSession(settings.model, torch.device("cpu"))
    session.begin(build_vocabulary(stream[: args.vocab_docs], args.vocab_size))
    started = time.perf_counter()
    for first in range(0, len(stream), 1000):  # held out, then counted, as the worker does
        session.offer((first + i, text) for i, text in enumerate(stream[first : first + 1000]))
        session.buffer = session.buffer[-settings.model.batch_size :]  # as if learned
    counted_s = time.perf_counter() - started
    model = session.model
    assert model is not None and session.word_counts is not None
    _, batch = session.take(50)
    session.learn(batch)  # one step: the chain's state as a learning worker's
    before = peak_gb()
    started = time.perf_counter()
    keep = session.refresh()
    refresh_s = time.perf_counter() - started
    after = peak_gb()
    entered = 0 if keep is None else int((keep < 0).sum())
    assert session.vocabulary is not None and model.config.n_words == len(session.vocabulary)
    session.learn(Batch.from_ids([ids for _, ids in itertools.islice(session.buffer, 50)]))
    figures = {
        "topics": args.topics,
        "words": args.vocab_size,
        "dtype": args.dtype,
        "counted_articles": session.word_counts.documents,
        "counting_s": round(counted_s, 2),
        "entered": entered,
        "refresh_s": round(refresh_s, 2),
        "peak_gb_before": round(before, 3),
        "peak_gb_after": round(after, 3),
        "peak_gb_after_a_step": round(peak_gb(), 3),
    }
    print(
        f"K = {args.topics}, W = {args.vocab_size}, {args.dtype}: {entered} words entered; "
        f"refresh {refresh_s:.2f} s; peak memory {before:.2f} GB before, {after:.2f} GB after "
        f"(worker's {WORKER_GB:g} GB); counting {session.word_counts.documents} articles took "
        f"{counted_s:.1f} s with their encoding"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
