"""What the topic shaper proposes (lda.shaping; docs/model.md, "The shaper"): dead and junk
topics to retire, duplicate pairs to merge, broad topics to split, and new topics' counts from
the documents no topic holds. Pure functions of the learner and the last minibatches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lda.evaluation.coherence import npmi_coherence
from lda.model import StreamingLDA
from lda.shaping.config import ShapingConfig

SPLIT_PSEUDO = 0.5  # tokens a split's word fraction is smoothed by, toward the halves' ratio


@dataclass
class Recent:
    """Minibatches learned: their documents, their expected topic counts E[n_dk] and how many
    documents they hold."""

    documents: list[list[int]]
    counts: torch.Tensor  # (n, K) float64, CPU
    n_batch: int


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
    documents: Sequence[Sequence[int]],
    config: ShapingConfig,
) -> list[int]:
    """The ``candidates`` whose top words hardly co-occur: NPMI in ``documents`` below
    ``junk_npmi``, the least coherent first."""
    if config.junk_npmi is None or not candidates or not documents:
        return []
    top, _ = model.top_words(config.top)
    npmi = npmi_coherence(top[candidates], documents).tolist()
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


def births(
    model: StreamingLDA, live: list[int], last: Recent, wanted: int, config: ShapingConfig
) -> list[torch.Tensor]:
    """Word counts for new topics: the last minibatch's documents that no live topic holds
    (the lowest largest share), grouped around the least held by cosine likeness, each
    group's counts on the chain's scale (N/n)."""
    c = config
    docs, counts = last.documents, last.counts
    lengths = torch.tensor([len(d) for d in docs], dtype=torch.float64)
    held = counts[:, live].max(dim=1).values / lengths.clamp_min(1.0)
    order = [int(d) for d in torch.argsort(held) if int(lengths[d]) >= c.min_length]
    pool = order[: wanted * c.birth_docs * 2]
    if len(pool) < c.birth_docs:
        return []
    W = model.config.n_words
    tf = torch.zeros(len(pool), W, dtype=torch.float64)
    for i, d in enumerate(pool):
        tf[i].index_add_(0, torch.tensor(docs[d]), torch.ones(len(docs[d]), dtype=torch.float64))
    # each word weighed by how little the document's topics explain it: c_dw / (1 + W p(w|d))
    pi = counts[pool] / lengths[pool].clamp_min(1.0).unsqueeze(1)
    explained = pi[:, live] @ model.beta_mean[live].to("cpu", torch.float64)
    tf = tf / (1.0 + W * explained)
    unit = tf / tf.norm(dim=1, keepdim=True).clamp_min(1e-12)
    scale = model.corpus_size(0) / last.n_batch
    left = list(range(len(pool)))
    born: list[torch.Tensor] = []
    while left and len(born) < wanted:
        seed = left[0]
        likeness = unit[left] @ unit[seed]
        group = [left[int(i)] for i in torch.argsort(likeness, descending=True)[: c.birth_docs]]
        left = [i for i in left if i not in group]
        born.append(tf[group].sum(dim=0) * scale)
    return born


def splits(
    model: StreamingLDA,
    live: list[int],
    last: Recent,
    shares: torch.Tensor,
    wanted: int,
    config: ShapingConfig,
) -> list[tuple[int, torch.Tensor]]:
    """Broad topics divided in two: for each of the largest live topics, the words it took
    in the last minibatch's documents (each token's responsibility pi_dk beta_kw / p(w|d)),
    the documents split by two-means on those words' directions, and each word's fraction
    in the first half (a word neither half used divides as the halves' totals do); not when
    the halves' top words would make them duplicates.
    (topic, fraction kept by the topic; the rest goes to the new one)."""
    c = config
    docs, counts = last.documents, last.counts
    lengths = torch.tensor([len(d) for d in docs], dtype=torch.float64).clamp_min(1.0)
    beta = model.beta_mean.to("cpu", torch.float64)
    beta_live = beta[live]
    pi = counts[:, live] / lengths.unsqueeze(1)
    W = model.config.n_words
    out: list[tuple[int, torch.Tensor]] = []
    for k in sorted(live, key=lambda k: -float(shares[k])):
        if len(out) >= wanted:
            break
        most = torch.argsort(counts[:, k], descending=True)[: 8 * c.birth_docs]
        pool = [int(d) for d in most if float(counts[int(d), k]) >= c.min_length / 2]
        if len(pool) < 2 * c.birth_docs:
            continue
        taken = torch.zeros(len(pool), W, dtype=torch.float64)
        for i, d in enumerate(pool):
            words = torch.tensor(docs[d])
            p = (pi[d] @ beta_live[:, words]).clamp_min(1e-300)
            share = float(counts[d, k]) / float(lengths[d])
            taken[i].index_add_(0, words, share * beta[k, words] / p)
        halves = _two_means(taken)
        if halves is None or min(len(h) for h in halves) < c.birth_docs // 2:
            continue
        a, b = (taken[h].sum(dim=0) for h in halves)
        ratio = float(a.sum() / (a.sum() + b.sum()))
        fraction = (a + SPLIT_PSEUDO * ratio) / (a + b + SPLIT_PSEUDO)
        kept = set(torch.topk(beta[k] * fraction, c.top).indices.tolist())
        given = set(torch.topk(beta[k] * (1 - fraction), c.top).indices.tolist())
        if len(kept & given) >= c.overlap:  # the halves would say the same thing
            continue
        out.append((k, fraction))
    return out


def _two_means(rows: torch.Tensor, iterations: int = 8) -> tuple[list[int], list[int]] | None:
    """The rows split in two by their directions (cosine two-means, started from the largest
    row and the row least like it); None when one side is empty."""
    unit = rows / rows.norm(dim=1, keepdim=True).clamp_min(1e-300)
    first = int(rows.sum(dim=1).argmax())
    second = int((unit @ unit[first]).argmin())
    centres = unit[[first, second]]
    side = torch.zeros(rows.shape[0], dtype=torch.bool)
    for _ in range(iterations):
        likeness = unit @ centres.T  # (m, 2)
        side = likeness[:, 1] > likeness[:, 0]
        if bool(side.all()) or not bool(side.any()):
            return None
        centres = torch.stack([unit[~side].sum(dim=0), unit[side].sum(dim=0)])
        centres = centres / centres.norm(dim=1, keepdim=True).clamp_min(1e-300)
    a = [int(i) for i in torch.nonzero(~side).squeeze(1)]
    b = [int(i) for i in torch.nonzero(side).squeeze(1)]
    return a, b
