"""Command-line flags of the learner's settings, shared by ``train`` and ``worker``, and the
seeds file they (and ``up``) read at start.

Each flag's ``dest`` is a Settings field, so ``service.cli.settings_from_args`` applies it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import get_args

from lda.config import Method, SamplerName
from service.errors import CommandError
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
    add_seeds_flag(p)


def add_seeds_flag(p: argparse.ArgumentParser) -> None:
    """``--seeds FILE``: topics seeded at start (``train``, ``worker`` and ``up``)."""
    p.add_argument(
        "--seeds",
        type=Path,
        metavar="FILE",
        help='seeds file: JSON from topic number to words, e.g. {"3": ["film", "actor"]}',
    )


def given_seeds(path: Path | None, n_topics: int) -> dict[int, list[str]]:
    """The seeds file's words by topic (none without one): a JSON object from topic number (0
    to ``n_topics`` - 1) to a non-empty list of words. A file that cannot be used is a
    CommandError saying why (read without the learner's imports: ``up`` checks it too)."""
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read seeds file {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise CommandError(f"seeds file {path} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise CommandError(f"seeds file {path}: expected an object from topic number to words")
    seeds: dict[int, list[str]] = {}
    for key, words in data.items():
        try:
            k = int(key)
        except ValueError:
            raise CommandError(f"seeds file {path}: {key!r} is not a topic number") from None
        if not 0 <= k < n_topics:
            raise CommandError(f"seeds file {path}: no topic {k}: topics are 0 to {n_topics - 1}")
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise CommandError(f"seeds file {path}: topic {k}'s seeds must be a list of words")
        if not words:
            raise CommandError(f"seeds file {path}: topic {k} has no word")
        seeds[k] = words
    return seeds
