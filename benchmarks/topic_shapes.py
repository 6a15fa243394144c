"""Topics that shape themselves against fixed K and tomotopy's HDP: one pass over the DEV articles,
the same documents in the same minibatches, every run's live topics scored by one held-out
estimator with common random numbers and by the NPMI of their top words in the held-out documents,
and counted for dead, duplicate and junk topics (docs/topics.md, "Topics that shape themselves").

Runs: ``fixed-50`` / ``fixed-200`` (StreamingLDA at K, the learner as the service builds it),
``shaped-20`` / ``shaped-200`` (200 slots, 20 or 200 live at the start, lda.shaping's TopicShaper
with the service's defaults; ``shaped-200`` is what ``train``, ``worker`` and ``up`` run with no
topic flag) and ``hdp`` (tomotopy's HDPModel, ``--hdp-iterations`` on the same
training documents, starting at ``--hdp-initial-k`` topics; its live topics as a beta over our
word ids, benchmarks/peers.py). Only learning is timed.

Why HDP starts at 20 topics, not tomotopy's 2: from 2, 100 iterations on the 29,000 articles
left it 8 live topics (it seldom opens a topic once every document sits at its few tables); from
20, the start of ``shaped-20``, both learners that choose K begin alike.

Definitions, the same for every run, over its live topics only:

* share of a topic: its fraction of the held-out documents' expected topic assignments in the
  estimator's own fold-in (E[n_dk] = pi_dk (n_d + gamma_0) - gamma_k, summed over documents);
* dead: a share under a tenth of an average live topic's share;
* duplicate pair: two live topics with at least 5 of their top 10 words in common;
* junk: a topic whose own NPMI (top 10 words, in the held-out documents) is below 0.

HDP's document-topic prior: in its Chinese restaurant franchise a document's new table takes
topic k with probability m_k / (M + gamma) (m_k: the tables serving k, M all tables) and a word
opens a new table with weight alpha, so the live topics' Dirichlet prior is gamma_k = alpha m_k /
(M + gamma), alpha and gamma as tomotopy re-estimated them. tomotopy does not expose m_k; each
document holds at least one table for every topic it uses, and with its small alpha seldom more,
so m_k is taken as the number of training documents using topic k and M as their sum.

    .venv/bin/python -m benchmarks.topic_shapes --docs 3000 --vocab-size 8000 --runs fixed-50,hdp
    .venv/bin/python -m benchmarks.topic_shapes --docs 29000 --vocab-size 50000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks import peers
from benchmarks.common import Corpus, minibatches, read_corpus, set_threads, stream_vocabulary
from lda.batch import Batch
from lda.config import LearnerConfig, default_burn_in
from lda.evaluation.coherence import top_word_ids, topic_quality
from lda.evaluation.perplexity import (
    HeldoutSet,
    document_topic_proportions,
    perplexity_from_probabilities,
    test_token_probabilities,
)
from lda.gamma import Gamma, gamma_total, gamma_vector
from lda.gibbs import GibbsConfig
from lda.model import StreamingLDA
from lda.vocab import Vocabulary
from service.settings_learning import ModelSettings

try:  # the shaper may be absent on an older checkout: the fixed and HDP runs still work
    from lda.shaping import ShapingConfig, TopicShaper
except ImportError:  # pragma: no cover - depends on the checkout
    ShapingConfig = TopicShaper = None  # type: ignore[assignment,misc]

RUNS = ("fixed-50", "fixed-200", "shaped-20", "shaped-200", "hdp")
SLOTS = 200  # the shaped runs' max topics
DEAD_FRACTION = 0.1  # dead: under this fraction of an average live topic's share
TOP_WORDS = 10  # duplicates are compared by this many top words
OVERLAP = 5  # top words in common that make two topics a duplicate pair
MOST_JUNK = 1  # junk topics a shaped run may end with
NPMI_GAIN = 0.01  # a shaped run's NPMI over fixed-200's, at least
TIME_RATIO = 1.25  # a shaped run's learning time over fixed-200's, at most


@dataclass
class Learned:
    """A run's live topics (K_live x W, rows sum to 1), their document-topic prior, learning
    seconds and whatever else the run reports."""

    beta: torch.Tensor
    gamma: Gamma
    seconds: float
    extra: dict[str, Any]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--corpus-dir", type=Path, default=None, help="default: the shared corpora")
    p.add_argument("--vocab-size", type=int, default=50_000, help="W from the stream")
    p.add_argument("--vocab-docs", type=int, default=30_000)
    p.add_argument("--docs", type=int, default=29_000)
    p.add_argument("--heldout", type=int, default=1000)
    p.add_argument("--runs", default=",".join(RUNS), help=f"comma list of {', '.join(RUNS)}")
    p.add_argument("--hdp-iterations", type=int, default=100)
    p.add_argument("--hdp-initial-k", type=int, default=20, help="tomotopy's initial_k")
    p.add_argument("--eval-sweeps", type=int, default=50)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, default=None)
    p.add_argument(
        "--shaping",
        default="",
        help="the shaped runs' ShapingConfig fields other than the defaults, as name=value "
        "pairs separated by commas (e.g. every=20,tolerance=0)",
    )
    args = p.parse_args(argv)
    try:
        args.shaping_config = shaping_config(args.shaping)
    except (TypeError, ValueError) as e:
        p.error(f"--shaping: {e}")
    args.run_list = [r.strip() for r in args.runs.split(",") if r.strip()]
    unknown = sorted(set(args.run_list) - set(RUNS))
    if unknown:
        p.error(f"unknown runs {unknown}; choose from {', '.join(RUNS)}")
    return args


def shaping_config(pairs: str) -> Any:
    """ShapingConfig with the name=value ``pairs`` over its defaults, each parsed and checked as
    its STREAMLDA_SHAPING_ setting is (``none`` for an optional one; ``kinds`` joined by +,
    e.g. retire+merge)."""
    if ShapingConfig is None:
        return None
    from service.settings_shaping import PREFIX, ShapingSettings

    values: dict[str, Any] = {}
    for pair in filter(None, (p.strip() for p in pairs.split(","))):
        name, _, text = pair.partition("=")
        values[PREFIX + name] = text.split("+") if name == "kinds" else text
    return ShapingSettings(**values).config()


# --- the counts ---------------------------------------------------------------------------
def live_gamma(gamma: Gamma, live: Sequence[int], n_slots: int) -> Gamma:
    """The prior restricted to the ``live`` slots: a scalar stays a scalar."""
    if not isinstance(gamma, tuple):
        return gamma
    vector = gamma_vector(gamma, n_slots)
    return tuple(float(vector[k]) for k in live)


def fold_in_shares(pi: torch.Tensor, lengths: torch.Tensor, gamma: Gamma) -> torch.Tensor:
    """(K,) each topic's fraction of the documents' expected assignments, recovered from the
    fold-in's pi_dk = (E[n_dk] + gamma_k) / (n_d + gamma_0)."""
    n_topics = pi.shape[1]
    vector = torch.from_numpy(gamma_vector(gamma, n_topics)).to(pi.dtype)
    total = gamma_total(gamma, n_topics)
    counts = (pi * (lengths.to(pi.dtype)[:, None] + total) - vector).clamp_min(0.0).sum(dim=0)
    return counts / counts.sum().clamp_min(1e-300)


def dead_topics(shares: torch.Tensor, fraction: float = DEAD_FRACTION) -> int:
    """Topics whose share is under ``fraction`` of an average topic's share."""
    if shares.numel() == 0:
        return 0
    mean = float(shares.sum()) / shares.numel()
    return int((shares < fraction * mean).sum())


def duplicate_pairs(top_words: torch.Tensor, overlap: int = OVERLAP) -> int:
    """Pairs of rows of ``top_words`` (K x N word ids) with at least ``overlap`` ids in common."""
    sets = [set(row) for row in top_words.tolist()]
    return sum(
        len(sets[a] & sets[b]) >= overlap for a in range(len(sets)) for b in range(a + 1, len(sets))
    )


def quality_counts(
    beta_live: torch.Tensor, shares: torch.Tensor, heldout_docs: Sequence[Sequence[int]]
) -> dict[str, Any]:
    """Mean NPMI over the live topics and their dead, duplicate-pair and junk counts."""
    coherence = topic_quality(beta_live, heldout_docs).coherence
    return {
        "npmi": float(coherence.mean()),
        "live": int(beta_live.shape[0]),
        "dead": dead_topics(shares),
        "duplicate_pairs": duplicate_pairs(top_word_ids(beta_live, TOP_WORDS)),
        "junk": int((coherence < 0).sum()),
    }


def score(
    learned: Learned,
    heldout: HeldoutSet,
    reference: list[list[int]],
    sweeps: int,
    seed: int,
) -> dict[str, Any]:
    """Held-out perplexity of the live topics under their own prior (exact sweeps from a uniform
    start, the learner benchmark's estimator, the same seed for every run), the shares from that
    same fold-in (same seed, so the same draws), and the quality counts."""
    beta = learned.beta.double()
    config = GibbsConfig(learned.gamma, sweeps, default_burn_in(sweeps), "exact", init="uniform")
    probabilities = test_token_probabilities(
        beta, heldout, config, torch.Generator().manual_seed(seed)
    )
    pi = document_topic_proportions(
        beta, heldout.observed, config, torch.Generator().manual_seed(seed)
    )
    shares = fold_in_shares(pi, heldout.observed.lengths, learned.gamma)
    return {
        "perplexity": perplexity_from_probabilities(probabilities),
        **quality_counts(beta, shares, reference),
        "seconds": learned.seconds,
    }


def goals(runs: dict[str, dict[str, Any]]) -> dict[str, bool]:
    """Each shaped run against fixed-200 (no dead topic or duplicate pair, at most one junk
    topic, perplexity at most fixed-200's, NPMI at least 0.01 higher, at most 1.25 times its
    time) and against hdp (lower perplexity, higher NPMI, less time); only the comparisons whose
    runs are present."""
    out: dict[str, bool] = {}
    fixed, hdp = runs.get("fixed-200"), runs.get("hdp")
    for name in ("shaped-20", "shaped-200"):
        run = runs.get(name)
        if run is None:
            continue
        out[f"{name}: 0 dead"] = run["dead"] == 0
        out[f"{name}: 0 duplicate pairs"] = run["duplicate_pairs"] == 0
        out[f"{name}: at most {MOST_JUNK} junk"] = run["junk"] <= MOST_JUNK
        if fixed is not None:
            out[f"{name}: perplexity <= fixed-200"] = run["perplexity"] <= fixed["perplexity"]
            better = fixed["npmi"] + NPMI_GAIN
            out[f"{name}: NPMI >= fixed-200 + {NPMI_GAIN}"] = run["npmi"] >= better
            limit = TIME_RATIO * fixed["seconds"]
            out[f"{name}: time <= {TIME_RATIO} x fixed-200"] = run["seconds"] <= limit
        if hdp is not None:
            out[f"{name}: perplexity < hdp"] = run["perplexity"] < hdp["perplexity"]
            out[f"{name}: NPMI > hdp"] = run["npmi"] > hdp["npmi"]
            out[f"{name}: time < hdp"] = run["seconds"] < hdp["seconds"]
    return out


# --- the runs -----------------------------------------------------------------------------
def learn_fixed(config: LearnerConfig, batches: list[Batch], seed: int) -> Learned:
    """StreamingLDA at fixed K, ``update`` per minibatch."""
    model = StreamingLDA(config, seed=seed)
    start = time.perf_counter()
    for batch in batches:
        model.update(batch)
    seconds = time.perf_counter() - start
    return Learned(model.beta_mean, model.gamma, seconds, {})


def learn_shaped(
    config: LearnerConfig, batches: list[Batch], seed: int, shaping: Any = None
) -> Learned:
    """StreamingLDA over the slots, each minibatch learned through the topic shaper."""
    model = StreamingLDA(config, seed=seed)
    shaper = TopicShaper(shaping or ShapingConfig(), seed=seed)
    deciding = [0.0]
    decide = shaper.decide

    def timed(m: StreamingLDA) -> Any:
        began = time.perf_counter()
        try:
            return decide(m)
        finally:
            deciding[0] += time.perf_counter() - began

    shaper.decide = timed  # type: ignore[method-assign]
    start = time.perf_counter()
    for batch in batches:
        shaper.update(model, batch)
    seconds = time.perf_counter() - start
    live = model.topic_ids.live_slots()
    gamma = live_gamma(model.gamma, live, config.n_topics)
    decisions = {kind: int(n) for kind, n in sorted(shaper.decisions.items())}
    extra = {"decisions": decisions, "deciding_seconds": round(deciding[0], 1)}
    return Learned(model.beta_mean[live], gamma, seconds, extra)


def learn_hdp(
    corpus: Corpus, vocab: Vocabulary, iterations: int, initial_k: int, seed: int, workers: int
) -> Learned:
    """tomotopy's HDPModel (its defaults but ``initial_k``) on the training documents; only
    ``train`` is timed (``train(0)``, its initialisation, is preparation as in
    benchmarks/peer_runs.py)."""
    import tomotopy

    model = tomotopy.HDPModel(initial_k=initial_k, seed=seed)
    for document in corpus.train:
        model.add_doc([vocab.words[w] for w in document])
    peers.tomotopy_train(model, 0, workers)
    start = time.perf_counter()
    peers.tomotopy_train(model, iterations, workers)
    seconds = time.perf_counter() - start
    live = [k for k in range(int(model.k)) if model.is_live_topic(k)]
    beta = peers.tomotopy_beta(model, vocab.index, len(vocab))[live]
    used = hdp_topic_documents(model, int(model.k))[live]
    alpha, concentration = float(model.alpha), float(model.gamma)
    gamma = tuple(float(g) for g in alpha * used / (used.sum() + concentration))
    extra = {
        "alpha": alpha,
        "gamma": concentration,
        "tables": int(model.num_tables),
        "slots": int(model.k),  # live and dead: tomotopy keeps a dead topic's slot
        "initial_k": initial_k,
    }
    return Learned(beta, gamma, seconds, extra)


def hdp_topic_documents(model: Any, n_topics: int) -> np.ndarray:
    """(K,) float64: the training documents using each topic (HDP's tables per topic, nearly)."""
    used = np.zeros(n_topics, dtype=np.float64)
    for document in model.docs:
        topics = np.unique(np.asarray(document.topics, dtype=np.int64))
        used[topics[(topics >= 0) & (topics < n_topics)]] += 1.0
    return used


# --- the table ----------------------------------------------------------------------------
HEADER = "run        perplexity    NPMI  live  dead   dup  junk  seconds"


def run_line(name: str, run: dict[str, Any]) -> str:
    """One run's row of the table under HEADER."""
    return (
        f"{name:10s} {run['perplexity']:10.0f} {run['npmi']:+7.3f} {run['live']:5d} "
        f"{run['dead']:5d} {run['duplicate_pairs']:5d} {run['junk']:5d} {run['seconds']:8.1f}"
    )


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    from benchmarks.common import CORPORA

    corpus_dir = args.corpus_dir or CORPORA
    set_threads(args.threads)
    vocab = stream_vocabulary(corpus_dir, args.vocab_size, args.vocab_docs)
    corpus = read_corpus(corpus_dir, vocab, args.heldout, args.docs)
    heldout = HeldoutSet.from_documents(corpus.heldout)
    settings = ModelSettings.model_construct()  # defaults, not STREAMLDA_*
    batches = [Batch.from_ids(g) for g in minibatches(corpus.train, settings.batch_size)]
    n_words = len(vocab)
    print(
        f"W={n_words} {len(corpus.train)} training / {len(corpus.heldout)} held-out documents, "
        f"{corpus.train_tokens} training tokens, minibatches of {settings.batch_size}",
        file=sys.stderr,
    )

    learners: dict[str, Callable[[], Learned]] = {
        "fixed-50": lambda: learn_fixed(
            settings.learner_config(n_words, n_topics=50), batches, args.seed
        ),
        "fixed-200": lambda: learn_fixed(
            settings.learner_config(n_words, n_topics=200), batches, args.seed
        ),
        "shaped-20": lambda: learn_shaped(
            settings.learner_config(n_words, n_topics=SLOTS, live_topics=20),
            batches,
            args.seed,
            args.shaping_config,
        ),
        "shaped-200": lambda: learn_shaped(
            settings.learner_config(n_words, n_topics=SLOTS, live_topics=SLOTS),
            batches,
            args.seed,
            args.shaping_config,
        ),
        "hdp": lambda: learn_hdp(
            corpus, vocab, args.hdp_iterations, args.hdp_initial_k, args.seed, args.threads
        ),
    }
    results: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "settings": {
            k: v for k, v in vars(args).items() if k not in ("json", "corpus_dir", "run_list")
        },
        "n_words": n_words,
        "train_docs": len(corpus.train),
        "train_tokens": corpus.train_tokens,
        "heldout_docs": len(corpus.heldout),
        "runs": {},
    }
    print(HEADER, flush=True)
    for name in args.run_list:
        if name.startswith("shaped") and TopicShaper is None:
            print(f"{name:10s} not available (no lda.shaping)", flush=True)
            continue
        learned = learners[name]()
        run = score(learned, heldout, corpus.heldout, args.eval_sweeps, args.seed)
        run.update(learned.extra)
        results["runs"][name] = run
        print(run_line(name, run), flush=True)
    results["goals"] = goals(results["runs"])
    if results["goals"]:
        print("goals:")
        for goal, held in results["goals"].items():
            print(f"  {'yes' if held else 'NO '}  {goal}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return results


if __name__ == "__main__":
    main()
