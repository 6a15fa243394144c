"""The worker's scoring process: held-out perplexity of the betas it is sent, one at a time.

Messages in (see :mod:`service.learn.scoring_messages`): ``("reset", epoch, (gamma, sweeps,
method), packed scorer state, held-out documents)``, ``("score", epoch, docs_seen, beta,
pinned, each slot's topic number or None)`` and ``None`` (exit). Out: ``("scored", epoch,
docs_seen, perplexity, averaged, coherence, diversity, topics, packed state)``, ``topics`` each
topic's NPMI coherence and, from the second beta of an epoch on, how far it moved since the
previous one (:mod:`lda.evaluation.drift`; the ``pinned`` topics, the seeded ones, are matched
to themselves; while topics move, a topic's from its number's row in the previous beta,
wherever its slot was). Betas of an older epoch than the last reset are ignored. No Redis, no
files: the worker publishes and checkpoints.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import signal
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

import torch

from lda.evaluation.coherence import (
    DIVERSITY_WORDS,
    top_word_ids,
    topic_diversity,
    topic_quality,
)
from lda.evaluation.drift import Drift, js_divergence, match_topics, topic_drift
from lda.evaluation.perplexity import HeldoutSet
from lda.evaluation.scorer import HeldoutScorer, ScorerConfig
from lda.gamma import gamma_vector
from lda.topic_ids import FREE
from service.learn.runtime import set_threads
from service.learn.scoring_channel import Receiver, Sender
from service.learn.scoring_messages import pack_state, unpack_state
from service.process import die_with_parent

# Niceness the scoring process adds to the worker's: under contention for the cores the learner
# runs first and scoring takes what is left (a beta that waits too long is skipped, counted);
# with a core to spare it changes nothing.
SCORER_NICE = 9

# How often an idle scoring process checks that its worker is still alive.
PARENT_CHECK_S = 1.0


def _next(inbox: Receiver, parent: int) -> Any:
    """The next message, or None once the worker is gone: the parent-death signal is not
    enough alone (Linux sends it when the parent *thread* exits, and orphans were seen)."""
    while True:
        try:
            return inbox.get(timeout=PARENT_CHECK_S)
        except EOFError:  # the worker closed its end, or died
            return None
        except queue.Empty:
            if os.getppid() != parent:
                return None


def serve(
    inbox_end: Connection,
    outbox_end: Connection,
    device_name: str,
    threads: int | None,
    parent: int,
) -> None:
    """Score until told to exit or until the worker (pid ``parent``, passed in because it may
    die while this process still imports torch) is gone. The ends are pipes'
    (:mod:`service.learn.scoring_channel`)."""
    inbox, outbox = Receiver(inbox_end), Sender(outbox_end, "streamlda-scorer-results")
    preexec = die_with_parent()
    if preexec is not None:
        preexec()
    if os.getppid() != parent:
        return  # the worker died before the request took effect
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the worker's to handle
    os.nice(SCORER_NICE)  # not the autogroup's: that is the worker's too
    set_threads(threads)
    device = torch.device(device_name)
    epoch = -1
    scorer: HeldoutScorer | None = None
    heldout: HeldoutSet | None = None
    documents: list[list[int]] = []
    previous: torch.Tensor | None = None  # the last beta scored in this epoch
    previous_numbers: tuple[int, ...] | None = None  # its slots' topic numbers
    while (message := _next(inbox, parent)) is not None:
        if message[0] == "reset":
            _, epoch, (gamma, sweeps, method), state, documents = message
            config = ScorerConfig(gamma=gamma, sweeps=sweeps, method=method)
            scorer = HeldoutScorer(config, torch.Generator(device=device))
            scorer.load_state_dict(unpack_state(state))
            heldout = HeldoutSet.from_documents(documents, device)
            previous, previous_numbers = None, None
            continue
        if message[0] == "gamma":  # a learned prior moved: later betas are scored under it
            if message[1] == epoch and scorer is not None:
                scorer.config = dataclasses.replace(scorer.config, gamma=message[2])
            continue
        _, at_epoch, docs_seen, beta, pinned, numbers = message
        live = None if numbers is None else [s for s, n in enumerate(numbers) if n != FREE]
        if at_epoch != epoch or scorer is None or heldout is None:
            continue
        topics = torch.from_numpy(beta).to(device)
        scored, config = topics, scorer.config
        if live is not None:  # topics that move: the free slots are not scored
            index = torch.tensor(live, dtype=torch.int64, device=device)
            vector = gamma_vector(config.gamma, topics.shape[0])[live]
            scored = topics[index]
            scorer.config = dataclasses.replace(config, gamma=tuple(float(g) for g in vector))
        perplexity, averaged = scorer.score(scored, heldout)
        scorer.config = config
        quality = topic_quality(topics, documents)
        mean, diversity = quality.mean_coherence, quality.diversity
        if live is not None:  # the live topics' mean coherence and diversity
            mean = float(quality.coherence[live].mean())
            diversity = topic_diversity(top_word_ids(scored, DIVERSITY_WORDS))
        reference = by_number(previous, previous_numbers, numbers)
        per_topic = _per_topic(quality.coherence, reference, topics, pinned)
        previous, previous_numbers = topics, numbers
        state = pack_state(scorer.state_dict())
        message = ("scored", epoch, docs_seen, perplexity, averaged, mean, diversity, per_topic)
        outbox.put((*message, state))


# Words of each topic in a point of its history.
HISTORY_WORDS = 10


def _per_topic(
    coherence: torch.Tensor,
    previous: torch.Tensor | None,
    topics: torch.Tensor,
    pinned: Sequence[int] = (),
) -> dict[str, Any]:
    """Each topic's coherence, top words (ids, for its history) and its drift since
    ``previous`` (None for the first), the ``pinned`` topics matched to themselves."""
    top = torch.topk(topics, min(HISTORY_WORDS, topics.shape[1]), dim=1).indices
    out: dict[str, Any] = {
        "coherence": coherence.tolist(),
        "words": top.tolist(),
        "drift": None,
        "matched": None,
    }
    if previous is not None:
        drift = pinned_drift(previous, topics, pinned)
        out["drift"], out["matched"] = drift.divergence.tolist(), drift.matched.tolist()
    return out


def by_number(
    previous: torch.Tensor | None,
    before: Sequence[int] | None,
    now: Sequence[int] | None,
) -> torch.Tensor | None:
    """``previous``'s rows put where their topic numbers are ``now`` (a split's parent may
    have traded slots with its new half); a slot whose number is new keeps its own row."""
    if previous is None or before is None or now is None or list(before) == list(now):
        return previous
    was = {n: s for s, n in enumerate(before) if n != FREE}
    rows = [was.get(n, s) if n != FREE else s for s, n in enumerate(now)]
    return previous[rows]


def pinned_drift(previous: torch.Tensor, current: torch.Tensor, pinned: Sequence[int]) -> Drift:
    """The drift matching with each ``pinned`` topic (a seeded one) matched to itself, the
    others matched among themselves as :func:`lda.evaluation.drift.topic_drift` matches all:
    a seeded topic's number never moves."""
    n = current.shape[0]
    fixed = {int(k) for k in pinned if 0 <= int(k) < n}
    if not fixed:
        return topic_drift(previous, current)
    free = torch.tensor([k for k in range(n) if k not in fixed], dtype=torch.int64)
    matched = torch.arange(n, dtype=torch.int64)
    if free.numel():
        rows = free.to(current.device)
        matched[free] = free[match_topics(previous[rows], current[rows])]
    return Drift(matched=matched, divergence=js_divergence(previous, current, matched).cpu())
