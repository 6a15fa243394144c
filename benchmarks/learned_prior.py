"""The learned document-topic prior against the symmetric one: one pass over the DEV articles at
fixed K, the same documents in the same minibatches, the learner as the service builds it (only
``learn_gamma`` differs), both scored by one held-out estimator with common random numbers, each
under its own gamma (the learned vector, or the scalar), and the NPMI of the served topics' top
words in the held-out documents. Goal: perplexity ratio (learned / symmetric) at most 0.98, NPMI
not lower (docs/model.md, "The learned document-topic prior").

    .venv/bin/python -m benchmarks.learned_prior --docs 5000            # a quick look
    .venv/bin/python -m benchmarks.learned_prior --docs 29000 --vocab-size 50000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from benchmarks.common import CORPORA, minibatches, read_corpus, set_threads, stream_vocabulary
from lda.batch import Batch
from lda.config import default_burn_in
from lda.evaluation.coherence import topic_quality
from lda.evaluation.perplexity import (
    HeldoutSet,
    perplexity_from_probabilities,
    test_token_probabilities,
)
from lda.gibbs import GibbsConfig
from lda.model import StreamingLDA
from lda.vocab import Vocabulary
from service.settings_learning import ModelSettings


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus-dir", type=Path, default=CORPORA)
    p.add_argument("--vocab-size", type=int, default=None, help="W from the stream (else 7,702)")
    p.add_argument("--vocab-docs", type=int, default=30_000)
    p.add_argument("--docs", type=int, default=5000)
    p.add_argument("--heldout", type=int, default=1000)
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--eval-sweeps", type=int, default=50)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, default=None)
    return p.parse_args(argv)


def score(
    model: StreamingLDA, heldout: HeldoutSet, reference: list[list[int]], sweeps: int, seed: int
) -> dict[str, float]:
    """Held-out perplexity of beta_mean under the model's own gamma (exact sweeps from a
    uniform start, the learner benchmark's estimator, same seed for both runs) and NPMI."""
    beta = model.beta_mean.double()
    config = GibbsConfig(model.gamma, sweeps, default_burn_in(sweeps), "exact", init="uniform")
    generator = torch.Generator().manual_seed(seed)
    probabilities = test_token_probabilities(beta, heldout, config, generator)
    return {
        "perplexity": perplexity_from_probabilities(probabilities),
        "npmi": float(topic_quality(beta, reference).mean_coherence),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    set_threads(args.threads)
    if args.vocab_size is not None:
        vocab = stream_vocabulary(args.corpus_dir, args.vocab_size, args.vocab_docs)
    else:
        vocab = Vocabulary.load(args.corpus_dir / "vocab-7702.txt")
    corpus = read_corpus(args.corpus_dir, vocab, args.heldout, args.docs)
    heldout = HeldoutSet.from_documents(corpus.heldout)
    settings = ModelSettings.model_construct(topics=args.topics)  # defaults, not STREAMLDA_*
    batches = [Batch.from_ids(g) for g in minibatches(corpus.train, settings.batch_size)]
    print(
        f"W={len(vocab)} K={args.topics} {len(corpus.train)} training / {len(corpus.heldout)} "
        f"held-out documents, minibatches of {settings.batch_size}",
        file=sys.stderr,
    )
    results: dict[str, Any] = {"command": " ".join(sys.argv), "runs": {}}
    for name, learn in (("symmetric", False), ("learned", True)):
        config = settings.learner_config(len(vocab), learn_gamma=learn)
        model = StreamingLDA(config, seed=args.seed)
        start = time.perf_counter()
        for batch in batches:
            model.update(batch)
        seconds = time.perf_counter() - start
        run = score(model, heldout, corpus.heldout, args.eval_sweeps, args.seed)
        gamma = model.prior.gamma
        run.update(
            seconds=seconds,
            gamma_min=float(gamma.min()),
            gamma_median=float(gamma.median()),
            gamma_max=float(gamma.max()),
            gamma_sum=float(gamma.sum()),
        )
        results["runs"][name] = run
        print(f"{name:9s} {json.dumps(run)}", file=sys.stderr, flush=True)
    learned, symmetric = results["runs"]["learned"], results["runs"]["symmetric"]
    ratio = learned["perplexity"] / symmetric["perplexity"]
    results["ratio"] = ratio
    results["npmi_delta"] = learned["npmi"] - symmetric["npmi"]
    met = ratio <= 0.98 and learned["npmi"] >= symmetric["npmi"]
    results["goal_met"] = met
    print(
        f"perplexity {symmetric['perplexity']:.0f} -> {learned['perplexity']:.0f} "
        f"(ratio {ratio:.3f}, goal <= 0.98); NPMI {symmetric['npmi']:+.3f} -> "
        f"{learned['npmi']:+.3f}; goal {'met' if met else 'NOT met'}"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
