"""What the topic shaper proposes (lda.shaping; docs/model.md, "The shaper"): dead and junk
topics to retire, duplicate pairs to merge and broad topics to split. Pure functions of the
learner and the last minibatches; the shaper scores each proposal before making it."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from lda.batch import Batch
from lda.evaluation.coherence import npmi_coherence_of_tokens
from lda.model import StreamingLDA
from lda.shaping.config import Kind, ShapingConfig


@dataclass(frozen=True)
class Recent:
    """A minibatch learned: its tokens, its documents' lengths and their expected topic counts
    E[n_dk] from the learner's sweeps."""

    words: torch.Tensor  # (T,) int64 word ids, CPU, document after document
    lengths: torch.Tensor  # (n,) int64
    counts: torch.Tensor  # (n, K) float64, CPU

    @classmethod
    def of(cls, batch: Batch, counts: torch.Tensor) -> Recent:
        offsets = batch.offsets.cpu()
        return cls(batch.words.cpu(), offsets[1:] - offsets[:-1], counts)

    @property
    def n_batch(self) -> int:
        return int(self.lengths.numel())


class Window(Protocol):
    """What the proposals read of the shaper: its settings, the slots' running shares and
    birth times, the minibatches learned and the window of recent ones."""

    config: ShapingConfig
    shares: torch.Tensor | None
    born_at: torch.Tensor | None
    learned: int
    recent: deque[Recent]


def propose(kind: Kind, model: StreamingLDA, shaper: Window) -> list[Any]:
    """The default proposals of ``kind`` from the shaper's window: retire, the dead then the
    junk topics; merge, the duplicate pairs; split, the broadest topics, one per free slot."""
    if shaper.shares is None or shaper.born_at is None or not shaper.recent:
        return []
    ids = model.topic_ids
    live = ids.live_slots()
    seeded = {int(k) for k in model.seeds.topics.tolist()}
    c = shaper.config
    room = len(live) - c.min_topics
    if kind == "retire":
        if room <= 0:
            return []
        old = [k for k in live if shaper.learned - int(shaper.born_at[k]) >= c.start_after]
        found = dead(shaper.shares, live, old, seeded, c.dead_share)
        rest = [k for k in old if k not in seeded and k not in found]
        words = torch.cat([r.words for r in shaper.recent])
        lengths = torch.cat([r.lengths for r in shaper.recent])
        return (found + junk(model, rest, words, lengths, c))[: min(c.most, room)]
    if kind == "merge":
        if room <= 0:
            return []
        return duplicates(model, live, seeded, shaper.shares, c)[: min(c.most, room)]
    free = ids.free_slots()
    if kind != "split" or not free:
        return []
    return splits(live, shaper.shares, min(c.births, len(free)))


def dead(
    shares: torch.Tensor, live: list[int], old: list[int], seeded: set[int], floor: float
) -> list[int]:
    """The ``old`` unseeded topics whose running share is under ``floor`` times an average
    live topic's, the smallest first."""
    mean = float(shares[live].sum()) / len(live)
    found = [k for k in old if k not in seeded and float(shares[k]) < floor * mean]
    return sorted(found, key=lambda k: float(shares[k]))


def junk(
    model: StreamingLDA,
    candidates: list[int],
    words: torch.Tensor,
    lengths: torch.Tensor,
    config: ShapingConfig,
) -> list[int]:
    """The ``candidates`` whose top words hardly co-occur: NPMI below ``junk_npmi`` in the
    documents ``words`` ((T,) one after another, ``lengths`` (D,) tokens each), the least
    coherent first."""
    if config.junk_npmi is None or not candidates or not lengths.numel():
        return []
    top, _ = model.top_words(config.top)
    npmi = npmi_coherence_of_tokens(top[candidates], words, lengths).tolist()
    found = [(v, k) for k, v in zip(candidates, npmi, strict=True) if v < config.junk_npmi]
    return [k for _, k in sorted(found)]


def duplicates(
    model: StreamingLDA,
    live: list[int],
    seeded: set[int],
    shares: torch.Tensor,
    config: ShapingConfig,
) -> list[tuple[int, int]]:
    """Disjoint (kept, away) pairs of live topics sharing ``overlap`` of their top words,
    the most alike first; the smaller share merges into the larger, a seeded one never
    away."""
    top, _ = model.top_words(config.top)
    sets = {k: set(top[k].tolist()) for k in live}
    pairs = []
    for i, a in enumerate(live):
        for b in live[i + 1 :]:
            common = len(sets[a] & sets[b])
            if common >= config.overlap:
                pairs.append((common, a, b))
    pairs.sort(reverse=True)
    used: set[int] = set()
    chosen = []
    for _, a, b in pairs:
        if a in used or b in used:
            continue
        kept, away = (a, b) if float(shares[a]) >= float(shares[b]) else (b, a)
        if away in seeded:
            kept, away = away, kept
        if away in seeded:
            continue
        used |= {a, b}
        chosen.append((kept, away))
    return chosen


def splits(
    live: list[int], shares: torch.Tensor, wanted: int
) -> list[tuple[int, torch.Tensor | None]]:
    """The ``wanted`` broadest live topics (the largest running shares), each to be divided
    by the halves its documents in the window make (lda.shaping.evidence.halves): (topic,
    None: no fraction given)."""
    order = sorted(live, key=lambda k: -float(shares[k]))
    return [(k, None) for k in order[:wanted]]


# Top words a split's halves may share fewer of than a duplicate pair's ``overlap``: halves
# drift towards each other after a split (their running means share the parent's history).
SPLIT_MARGIN = 1


def distinct(beta: torch.Tensor, fraction: torch.Tensor, config: ShapingConfig) -> bool:
    """Whether a topic (``beta`` its (W,) row) divided by ``fraction`` gives halves that will
    not be a duplicate pair: f beta and (1 - f) beta share fewer than ``overlap`` less
    SPLIT_MARGIN top words."""
    f = fraction.to(beta.device, torch.float64)
    kept = set(torch.topk(beta * f, config.top).indices.tolist())
    given = set(torch.topk(beta * (1 - f), config.top).indices.tolist())
    return len(kept & given) < max(1, config.overlap - SPLIT_MARGIN)
