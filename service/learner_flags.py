"""Command-line flags of the learner's settings, shared by ``train`` and ``worker``.

Each flag's ``dest`` is a Settings field, so ``service.cli.settings_from_args`` applies it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import get_args

from lda.config import Method, SamplerName
from service.settings_learning import DeviceName


def add_learner_flags(p: argparse.ArgumentParser) -> None:
    """Vocabulary, sampler, Gibbs, beta_mean, evaluation and device flags."""
    vocab = p.add_mutually_exclusive_group()
    vocab.add_argument("--vocab", type=Path, help="vocabulary file, one word per line")
    vocab.add_argument("--vocab-size", type=int, help="build a vocabulary of W words")
    p.add_argument("--sampler", choices=get_args(SamplerName))
    p.add_argument("--topics", type=int, help="number of topics K")
    p.add_argument("--batch-size", type=int, help="documents per minibatch")
    p.add_argument("--sweeps", type=int, help="Gibbs sweeps per minibatch")
    p.add_argument("--burn-in", type=int, help="sweeps discarded (default: half)")
    p.add_argument("--gibbs", choices=get_args(Method))
    p.add_argument("--step-size", type=float, help="step size: the schedule's a")
    p.add_argument("--step-b", type=float, help="schedule a(1+t/b)^-c: b")
    p.add_argument("--step-c", type=float, help="schedule a(1+t/b)^-c: c (0: constant)")
    p.add_argument("--corpus-size", type=float, help="corpus size N")
    p.add_argument(
        "--corpus-growth", action="store_true", default=None, help="N grows with the documents seen"
    )
    p.add_argument("--alpha", type=float, help="topic-word Dirichlet prior")
    p.add_argument("--gamma", type=float, help="document-topic Dirichlet prior")
    p.add_argument(
        "--mean-decay",
        type=float,
        help="beta_mean's decay per step, in [0, 1) (0: the last sample)",
    )
    p.add_argument("--heldout", type=int, help="first H documents held out")
    p.add_argument("--eval-every", type=int, help="evaluate every M trained documents")
    p.add_argument("--device", choices=get_args(DeviceName))
    p.add_argument("--threads", type=int, help="CPU threads")
    p.add_argument("--seed", type=int)
