"""The learner benchmark's peers run on the same documents as streamlda's runs: gensim's and
scikit-learn's online VB fed minibatch by minibatch, tomotopy's batch Gibbs a model per
checkpoint; only their learning is timed, and their topics are scored like ours
(``benchmarks/peers.py`` builds them)."""

from __future__ import annotations

import argparse
import logging
import math
import time
from typing import Any

import torch

from benchmarks import peers
from benchmarks.common import Corpus, peer_threads
from benchmarks.scorer import Point, Run, Scorer, point_of, progress
from lda.vocab import Vocabulary


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

    run = Run(name="gensim", settings={**settings, "numdocs": args.gensim_numdocs}, family="gensim")
    with peer_threads(args.threads):
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
                beta = torch.from_numpy(model.get_topics()).double()
                beta = beta / beta.sum(dim=1, keepdim=True)
                run.points.append(
                    _score_peer(scorer, run, beta, own_gamma, index, docs, tokens, train_s)
                )
                index += 1
    return run


def run_sklearn(
    args: argparse.Namespace,
    matrices: list[Any],
    tokens_per_chunk: list[int],
    checkpoints: list[int],
    scorer: Scorer,
) -> Run:
    """scikit-learn's online VB on the same minibatches (CSR), timing only ``partial_fit``; its
    ``total_samples`` is the corpus size N that streamlda's runs get."""
    total = int(args.corpus_size)

    def build() -> Any:
        return peers.sklearn_lda(args.topics, args.batch_size, total, args.seed, args.sklearn_jobs)

    run = Run(name="sklearn", settings={}, family="sklearn")
    warm = build()  # imports scikit-learn, so its BLAS and OpenMP pools exist to be capped
    with peer_threads(args.threads):
        start = time.perf_counter()
        warm.partial_fit(matrices[0])  # warm imports, caches and (with n_jobs > 1) the workers
        run.warmup_s = time.perf_counter() - start
        model = build()
        run.settings = {k: v for k, v in model.get_params().items() if k != "verbose"}
        train_s, docs, tokens, index = 0.0, 0, 0, 0
        for matrix, n_tokens in zip(matrices, tokens_per_chunk, strict=True):
            start = time.perf_counter()
            model.partial_fit(matrix)
            train_s += time.perf_counter() - start
            docs += matrix.shape[0]
            tokens += n_tokens
            if index < len(checkpoints) and docs >= checkpoints[index]:
                gamma = float(model.doc_topic_prior_)
                beta = peers.sklearn_beta(model)
                run.points.append(
                    _score_peer(scorer, run, beta, gamma, index, docs, tokens, train_s)
                )
                index += 1
    return run


def run_tomotopy(
    args: argparse.Namespace,
    corpus: Corpus,
    checkpoints: list[int],
    vocab: Vocabulary,
    scorer: Scorer,
) -> list[Run]:
    """tomotopy, a batch learner: a model per checkpoint on its first documents, scored after
    each of ``--tomotopy-iters`` iterations; the last model also every ``--tomotopy-every``."""
    iterations = args.tomotopy_iter_list
    runs = {
        i: Run(name=f"tomotopy-{i}", settings={}, family="tomotopy", sweeps=i) for i in iterations
    }
    start = time.perf_counter()  # one-time costs: the first alpha re-estimation takes ~0.2 s
    warm = peers.tomotopy_lda(corpus.train[: args.batch_size], vocab.words, args.topics, 1)
    peers.tomotopy_train(warm, int(warm.optim_interval) + 1, args.threads)
    for run in runs.values():
        run.warmup_s = time.perf_counter() - start
    for index, docs in enumerate(checkpoints):
        every = args.tomotopy_every if index == len(checkpoints) - 1 else 0
        marks = set(iterations) | set(range(every, iterations[-1] + 1, every) if every else ())
        documents = corpus.train[:docs]
        tokens = sum(len(d) for d in documents)
        start = time.perf_counter()
        model = peers.tomotopy_lda(documents, vocab.words, args.topics, args.seed)
        peers.tomotopy_train(model, 0, args.threads)  # initialisation: prep, not training
        prep_s = time.perf_counter() - start
        train_s, done = 0.0, 0
        for mark in sorted(marks):
            start = time.perf_counter()
            peers.tomotopy_train(model, mark - done, args.threads)
            train_s += time.perf_counter() - start
            done = mark
            beta = peers.tomotopy_beta(model, vocab.index, len(vocab))
            run = runs.get(mark)
            if run is None:  # a curve point only
                key = f"tomotopy {docs} docs"
                point = _score_curve(scorer, key, beta, index, docs, tokens, train_s)
            else:
                gamma = peers.tomotopy_gamma(model)
                point = _score_peer(scorer, run, beta, gamma, index, docs, tokens, train_s)
                run.points.append(point)
                run.settings = _tomotopy_settings(model, args.threads, mark)
            point.prep_s, point.iterations = prep_s, mark
            if every:
                runs[iterations[-1]].curve.append(point)
    return list(runs.values())


def _tomotopy_settings(model: Any, workers: int, iterations: int) -> dict[str, Any]:
    return {
        "k": int(model.k),
        "alpha_initial": peers.TOMOTOPY_ALPHA,
        "alpha_mean": peers.tomotopy_gamma(model),
        "eta": float(model.eta),
        "optim_interval": int(model.optim_interval),
        "workers": workers,
        "iterations": iterations,
        "used_vocabs": len(model.used_vocabs),
    }


def _score_peer(
    scorer: Scorer,
    run: Run,
    beta: torch.Tensor,
    own_gamma: float,
    index: int,
    docs: int,
    tokens: int,
    train_s: float,
) -> Point:
    """Score a peer's topics at checkpoint ``index``; report progress."""
    start = time.perf_counter()
    scores = scorer.score(run.name, beta, own_gamma, index)
    point = point_of(docs, tokens, train_s, scores, time.perf_counter() - start)
    point.npmi = scorer.npmi(beta)
    progress(run.name, point)
    return point


def _score_curve(
    scorer: Scorer,
    key: str,
    beta: torch.Tensor,
    index: int,
    docs: int,
    tokens: int,
    train_s: float,
) -> Point:
    """A point of tomotopy's curve: scored at the common gamma only (own columns NaN)."""
    start = time.perf_counter()
    ppl, avg = scorer.score_common(key, beta, index)
    return point_of(
        docs, tokens, train_s, (ppl, avg, math.nan, math.nan), time.perf_counter() - start
    )
