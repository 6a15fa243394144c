"""Learner benchmark: streamlda's samplers against gensim, scikit-learn, tomotopy.

Reads ``<corpus-dir>/dev-*.jsonl.gz`` in place, tokenises with ``vocab-7702.txt``, keeps the first
H non-empty documents as the held-out set (never trained on) and the next D as training documents;
all encoding (minibatches, bags of words, CSR matrices) happens before any timing. Systems:

* streamlda: every ``--samplers`` entry, or the ``--runs`` specs (``sampler[:field=value]...``,
  any :class:`lda.model.LearnerConfig` field, plus ``batch_size`` and ``device``), each a
  :class:`StreamingLDA` learning from minibatches of n documents on ``--device`` (or the spec's
  ``device``: a GPU run and a CPU run can share one table); only ``model.update`` is timed (on a
  GPU up to a synchronisation; the minibatches are on the device before timing, as the worker
  has them). Both the current sample (``beta``) and the served estimate (``beta_mean``) are
  scored, on the CPU, by the one estimator; a GPU run reports its peak GPU memory.
* gensim: online VB ``LdaModel`` fed chunk by chunk through ``update(chunk)`` (timed).
* sklearn: online VB ``LatentDirichletAllocation`` (batch n, ``total_samples`` = D) fed one CSR
  minibatch per ``partial_fit`` (timed); beta = ``components_`` row-normalised.
* tomotopy: batch collapsed Gibbs ``LDAModel``, a model per checkpoint trained on the first 2k,
  5k, 10k documents for 50 and 200 iterations (``train`` calls timed; ``add_doc`` and the
  initialisation reported apart as prep); the last one is also scored every 10 iterations.

A spec's ``revisit=R`` runs it as the worker runs on a quiet stream: after each fresh minibatch,
revisit minibatches from the worker's reservoir until R revisited documents per fresh one, each
step a share of the stream's step (``revisit_step=S`` sets it; default the worker's rule,
``lda.model.revisit_step_scale``), each of ``revisit_batch=B`` documents (default the fresh
minibatch's). Their time counts as the learner's.

``--repeat`` cycles through the training documents when ``--docs`` asks for more than the
corpus holds (a stream that sees each article again; the DEV corpus has ~29,000).

At each checkpoint every model's K x W topic matrix is scored by the same document-completion
estimator (:mod:`lda.evaluation.perplexity`) on the same held-out set with the same random numbers
and the
same document prior gamma (``--eval-gamma``); ``ppl_own`` scores each model with its own prior.
Prints a detail table, a time-to-quality table (perplexity and learner seconds at each
checkpoint) and the speed and peer goals; ``--plot`` draws perplexity against learner seconds.

    .venv/bin/python -m benchmarks.learner --plot /tmp/learner.png   # the goals' configuration
    .venv/bin/python -m benchmarks.learner --quick        # ~1 minute smoke run
    .venv/bin/python -m benchmarks.learner --topics 200 --samplers sgrld,sgrhmc --no-gensim
    .venv/bin/python -m benchmarks.learner --no-gensim --no-sklearn --no-tomotopy \\
        --runs 'sgrld,sgrld:sweeps=10:gibbs=rao-blackwell,sgrhmc:mean_decay=0.9'
    .venv/bin/python -m benchmarks.learner --no-gensim --no-tomotopy --docs 100000 --repeat \\
        --checkpoints 10000,100000 --runs 'sgrld,sgrld:device=cuda,sgrld:device=cuda:batch_size=500'
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import torch

from benchmarks import peers
from benchmarks.common import (
    CORPORA,
    checkpoint_docs,
    minibatches,
    read_corpus,
    repeated,
    set_threads,
    stream_vocabulary,
)
from benchmarks.learner_report import (
    PAPER_S_PER_100,
    format_table,
    format_targets,
    format_time_to_quality,
    targets,
    time_to_quality,
    write_plot,
)
from benchmarks.peer_runs import run_gensim, run_sklearn, run_tomotopy
from benchmarks.scorer import Run, Scorer
from benchmarks.streamlda_runs import RunSpec, make_config, parse_run_spec, run_streamlda
from lda.batch import Batch
from lda.config import Method
from lda.evaluation.perplexity import HeldoutSet
from lda.model import resolve_device
from lda.vocab import Vocabulary
from service.settings_learning import ModelSettings


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line settings; ``--quick`` shrinks the unset sizes for a smoke run."""
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="run specs: sampler[:field=value]..., any LearnerConfig field but n_words and "
        "extra ('none' unsets; schedule=a[/b[/c]]), e.g. "
        "'sgrld,sgrld:sweeps=10:gibbs=rao-blackwell,sgrhmc:mean_decay=0.9'",
    )
    p.add_argument("--corpus-dir", type=Path, default=CORPORA)
    vocabulary = p.add_mutually_exclusive_group()
    vocabulary.add_argument(
        "--vocab", type=Path, default=None, help="default: CORPUS_DIR/vocab-7702.txt"
    )
    vocabulary.add_argument(
        "--vocab-size",
        type=int,
        default=None,
        help="W: build the vocabulary from the stream's first --vocab-docs texts, as the service",
    )
    p.add_argument(
        "--vocab-docs",
        type=int,
        default=ModelSettings.model_fields["vocab_docs"].default,
        help="texts counted for --vocab-size (default: the service's)",
    )
    p.add_argument("--docs", type=int, default=None, help="training documents (10000)")
    p.add_argument("--heldout", type=int, default=None, help="held-out documents (1000)")
    p.add_argument("--checkpoints", default=None, help="comma list (2000,5000,10000)")
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument(
        "--streamlda-batch-size",
        type=int,
        default=ModelSettings.model_fields["batch_size"].default,
        help="streamlda's minibatch (default: the service's); --batch-size is the peers'",
    )
    p.add_argument("--sweeps", type=int, default=None, help="Gibbs sweeps (learner's default)")
    p.add_argument("--samplers", default="sgld,sghmc,sgrld,sgrhmc")
    p.add_argument(
        "--runs", default=None, help="comma list of streamlda run specs; replaces --samplers"
    )
    p.add_argument("--gensim", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument(
        "--gensim-numdocs",
        choices=["total", "seen"],
        default="seen",
        help="gensim's corpus size: all D documents, as one LdaModel(corpus) call, "
        "or the documents seen so far (default), as a stream of update() calls",
    )
    p.add_argument("--sklearn", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument(
        "--sklearn-jobs",
        type=int,
        default=1,
        help="scikit-learn's n_jobs (default 1: its process pool costs 3-4x on minibatches of "
        "50); its BLAS/OpenMP pools get --threads either way",
    )
    p.add_argument("--tomotopy", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--tomotopy-iters", default="50,200", help="Gibbs iterations, comma list")
    p.add_argument(
        "--tomotopy-every",
        type=int,
        default=10,
        help="score the last checkpoint's tomotopy model every this many iterations (0: no)",
    )
    p.add_argument("--gibbs", choices=get_args(Method), default=None, help="(learner's default)")
    p.add_argument("--alpha", type=float, default=None, help="topic prior (default: sampler's)")
    p.add_argument("--step-size", type=float, default=None, help="constant eps (sampler's)")
    p.add_argument("--friction", type=float, default=1.0, help="friction C of SGHMC/SGRHMC")
    p.add_argument(
        "--corpus-size",
        type=float,
        default=None,
        help="N in the gradient (default: the service's, English Wikipedia's article count)",
    )
    p.add_argument("--corpus-growth", action="store_true", help="N = max(N, documents seen)")
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    p.add_argument(
        "--device",
        default="cpu",
        help="streamlda's device unless a run spec names one (auto: CUDA when present); "
        "the peers and the scoring run on the CPU",
    )
    p.add_argument(
        "--repeat",
        action="store_true",
        help="cycle through the training documents when --docs exceeds the corpus",
    )
    p.add_argument("--eval-gamma", type=float, default=0.01, help="common document prior")
    p.add_argument("--eval-sweeps", type=int, default=50)
    p.add_argument("--max-tokens", type=int, default=None, help="truncate documents (testing)")
    p.add_argument(
        "--threads", type=int, default=2, help="torch, numba, BLAS/OpenMP and tomotopy threads"
    )
    p.add_argument("--torch-threads", type=int, default=None, help="override for torch only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="600 train / 200 held-out documents")
    p.add_argument("--json", type=Path, default=None, help="write all results here")
    p.add_argument("--plot", type=Path, default=None, help="write a PNG: perplexity vs seconds")
    args = p.parse_args(argv)
    quick = args.quick
    args.docs = args.docs if args.docs is not None else (600 if quick else 10_000)
    args.heldout = args.heldout if args.heldout is not None else (200 if quick else 1_000)
    if args.checkpoints is None:
        args.checkpoints = "300,600" if quick else "2000,5000,10000"
    args.checkpoint_list = sorted({int(c) for c in args.checkpoints.split(",") if c.strip()})
    args.tomotopy_iter_list = sorted({int(i) for i in args.tomotopy_iters.split(",") if i.strip()})
    sizes = [args.docs, args.heldout, args.topics, args.batch_size, args.threads]
    sizes += [args.streamlda_batch_size, args.sweeps or 1, args.vocab_size or 1, args.vocab_docs]
    if min([*sizes, args.sklearn_jobs, *args.tomotopy_iter_list]) < 1:
        p.error("sizes, counts and iterations must be positive")
    if args.tomotopy and not args.tomotopy_iter_list:
        p.error("--tomotopy-iters is empty (or pass --no-tomotopy)")
    if args.tomotopy_every < 0:
        p.error("--tomotopy-every must be 0 or positive")
    if args.corpus_size is None:  # the service's default N, resolved as its settings resolve it
        args.corpus_size = float(ModelSettings.model_fields["wikipedia_articles"].default)
    args.run_specs = _run_specs(p, args)
    if args.vocab is None:
        args.vocab = args.corpus_dir / "vocab-7702.txt"
    return args


def _run_specs(p: argparse.ArgumentParser, args: argparse.Namespace) -> list[RunSpec]:
    """The streamlda runs (``--runs``, else one per ``--samplers`` entry), each checked by
    building its LearnerConfig."""
    text = args.runs if args.runs is not None else args.samplers
    specs: list[RunSpec] = []
    for item in (s for s in text.split(",") if s.strip()):
        try:
            spec = parse_run_spec(item)
            make_config(args, spec, n_words=1)
            resolve_device(spec.device or args.device)  # cuda without a GPU fails here, not later
        except (ValueError, TypeError, RuntimeError) as exc:
            p.error(f"run {item!r}: {exc}")
        if any(s.name == spec.name for s in specs):
            p.error(f"run {item!r} is given twice")
        specs.append(spec)
    return specs


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; print the tables; return (and optionally write) the results."""
    args = parse_args(argv)
    numba_threads = set_threads(args.threads, args.torch_threads)
    start = time.perf_counter()
    if args.vocab_size is not None:
        vocab = stream_vocabulary(args.corpus_dir, args.vocab_size, args.vocab_docs)
    else:
        vocab = Vocabulary.load(args.vocab)
    corpus = read_corpus(
        args.corpus_dir, vocab, args.heldout, args.docs, args.max_tokens, short_ok=args.repeat
    )
    if args.repeat and 0 < len(corpus.train) < args.docs:
        print(
            f"--repeat: {len(corpus.train)} training documents cycled to {args.docs}",
            file=sys.stderr,
        )
        corpus.train = repeated(corpus.train, args.docs)
    n_docs = len(corpus.train)
    checkpoints = checkpoint_docs(args.checkpoint_list, n_docs, args.batch_size)
    groups = minibatches(corpus.train, args.batch_size)
    tokens = [sum(len(d) for d in g) for g in groups]
    heldout = HeldoutSet.from_documents(corpus.heldout)
    bows = [[sorted(Counter(d).items()) for d in g] for g in groups] if args.gensim else []
    matrices = [peers.doc_term_matrix(g, len(vocab)) for g in groups] if args.sklearn else []
    prep_s = time.perf_counter() - start
    tokens_per_doc = corpus.train_tokens / max(n_docs, 1)
    print(
        f"corpus: {len(corpus.heldout)} held-out docs ({heldout.n_test_tokens} test tokens), "
        f"{n_docs} training docs ({corpus.train_tokens} tokens, {tokens_per_doc:.0f}/doc), "
        f"{corpus.skipped_empty} skipped with no vocabulary word; prepared in {prep_s:.1f} s",
        file=sys.stderr,
    )
    print(
        f"threads: torch {torch.get_num_threads()}, numba {numba_threads}, BLAS/OpenMP and "
        f"tomotopy workers {args.threads}, sklearn n_jobs {args.sklearn_jobs}; K={args.topics} "
        f"n={args.batch_size} (streamlda {args.streamlda_batch_size}) sweeps={args.sweeps} "
        f"gibbs={args.gibbs} N={args.corpus_size:g} W={len(vocab)} "
        f"eval gamma={args.eval_gamma:g}; checkpoints {checkpoints}",
        file=sys.stderr,
    )
    scorer = Scorer(
        heldout, args.eval_gamma, args.eval_sweeps, "exact", args.seed, reference=corpus.heldout
    )
    runs: list[Run] = []
    if args.gensim:
        runs.append(run_gensim(args, bows, tokens, checkpoints, vocab, scorer))
    if args.sklearn:
        runs.append(run_sklearn(args, matrices, tokens, checkpoints, scorer))
    if args.tomotopy:
        runs += run_tomotopy(args, corpus, checkpoints, vocab, scorer)
    for spec in args.run_specs:
        size = spec.batch_size or args.streamlda_batch_size
        batches = [Batch.from_ids(g) for g in minibatches(corpus.train, size)]
        runs.append(run_streamlda(spec, args, batches, checkpoints, vocab, scorer))
    summary = targets(runs, args.topics)
    quality = time_to_quality(runs, checkpoints)
    print(format_table(runs, args.eval_gamma))
    print()
    print(format_time_to_quality(quality, checkpoints, args.eval_gamma))
    print()
    print(format_targets(summary))
    if args.plot is not None:
        title = (
            f"K={args.topics}, {n_docs} training / {len(corpus.heldout)} held-out documents, "
            f"gamma={args.eval_gamma:g}; markers at {', '.join(map(str, checkpoints))} docs"
        )
        write_plot(runs, args.plot, title)
        print(f"plot written to {args.plot}", file=sys.stderr)
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv) if argv is None else " ".join(argv),
        "settings": {
            k: (str(v) if isinstance(v, Path) else v)
            for k, v in vars(args).items()
            if not k.endswith("_list") and k != "run_specs"
        },
        "threads": {
            "torch": torch.get_num_threads(),
            "numba": numba_threads,
            "blas_openmp": args.threads,
            "tomotopy_workers": args.threads,
            "sklearn_n_jobs": args.sklearn_jobs,
        },
        "checkpoints": checkpoints,
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
        "time_to_quality": quality,
        "targets": summary,
    }
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
