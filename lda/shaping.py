"""Topics that shape themselves: retire, merge and birth moves tried while the stream runs, each
kept only if the held-out fit does not get worse (docs/model.md, "Topic moves", "The acceptance
test").

Every ``every`` minibatches the shaper proposes one kind of move (in turn: retire the dead
topics, merge the topics that say the same thing, birth topics from the documents no topic
holds). A trial scores the next minibatch, before it is learned (documents the learner has not
seen), twice from the same saved state: once after ``burn_in`` revisit steps on the last
minibatches (the control), once after the move and the same steps. The move is kept when its
perplexity is at most the control's times (1 + tolerance); otherwise the learner goes back to
the saved state exactly, as if no trial had been made. Pure: the learner, the minibatches and a
seed come in; no clock but the one passed.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from lda import moves
from lda.batch import Batch
from lda.evaluation.coherence import npmi_coherence
from lda.evaluation.perplexity import (
    HeldoutSet,
    perplexity_from_probabilities,
    test_token_probabilities,
)
from lda.model import NonFiniteError, StreamingLDA
from lda.topic_ids import TopicMove

Kind = Literal["retire", "merge", "birth", "split"]
KINDS: tuple[Kind, ...] = ("retire", "merge", "split", "birth")
Words = Callable[[Sequence[int]], tuple[str, ...]]
SPLIT_PSEUDO = 0.5  # tokens a split's word fraction is smoothed by, toward the halves' ratio


@dataclass(frozen=True)
class ShapingConfig:
    """When moves are tried, what makes a topic dead or a duplicate, and how a trial decides."""

    every: int = 5  # minibatches between trials
    start_after: int = 20  # minibatches learned before the first trial; a newborn's grace too
    burn_in: int = 4  # revisit steps on the last minibatches a trial gives move and control
    min_topics: int = 2
    dead_share: float = 0.1  # dead: under this fraction of an average live topic's share
    junk_npmi: float | None = 0.0  # junk: NPMI of its top words in the recent documents below
    window: int = 10  # minibatches of recent documents the junk topics' NPMI is counted in
    share_decay: float = 0.9  # per minibatch, of the running mean of the topics' shares
    top: int = 10  # the top words two topics are compared by
    overlap: int = 5  # top words in common that make two topics say the same thing
    most: int = 8  # topics one trial retires or merges away, at most
    births: int = 16  # topics one birth or split trial adds, at most
    birth_docs: int = 4  # the least-held documents one born topic starts from
    min_length: int = 20  # documents shorter than this never seed a birth
    tolerance: float = 0.002  # relative perplexity a retire or merge may cost (noise)
    eval_sweeps: int = 10  # the trial's held-out sweeps (common random numbers)
    # the moves tried, in turn: births from the least-held documents made junk topics on DEV,
    # splits of broad topics did not (docs/defaults.md); "birth" may be added
    kinds: tuple[Kind, ...] = ("retire", "merge", "split")

    def __post_init__(self) -> None:
        if self.every < 1 or self.burn_in < 1 or self.start_after < 0:
            raise ValueError("every and burn_in must be at least 1, start_after at least 0")
        if not 1 <= self.overlap <= self.top:
            raise ValueError(f"overlap must be in [1, top = {self.top}]")


@dataclass(frozen=True)
class Reshaped:
    """One kept trial: the moves as ``model.topic_ids`` recorded them, the slots they freed,
    the freed slots merged into a kept one (``merged[j] = k``) and the slots born into."""

    moves: tuple[TopicMove, ...]
    freed: tuple[int, ...] = ()
    merged: dict[int, int] = field(default_factory=dict)
    born: tuple[int, ...] = ()


@dataclass(frozen=True)
class Trial:
    """A trial's outcome, kept or not: its kind, the slots it concerned, both perplexities."""

    kind: Kind
    slots: tuple[int, ...]
    control: float
    moved: float
    kept: bool


@dataclass
class _Recent:
    """The last minibatch learned: its documents and their expected topic counts E[n_dk]."""

    documents: list[list[int]]
    counts: torch.Tensor  # (n, K) float64, CPU
    n_batch: int


class TopicShaper:
    """Tries topic moves between minibatches; :meth:`update` learns one minibatch through it."""

    def __init__(
        self,
        config: ShapingConfig | None = None,
        seed: int = 0,
        words: Words | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``words``: a topic's top word ids as text, for the moves' record (default: the ids);
        ``clock``: the moves' time."""
        self.config = config or ShapingConfig()
        self.generator = torch.Generator().manual_seed(seed)
        self.seed = seed
        self.words: Words = words or (lambda ids: tuple(str(i) for i in ids))
        self.clock = clock
        self.shares: torch.Tensor | None = None  # (K,) running mean of each slot's token share
        self.born_at: torch.Tensor | None = None  # (K,) minibatch count at each slot's birth
        self.learned = 0  # minibatches learned through the shaper
        self.turn = 0  # the next kind to propose
        self.trials: Counter[str] = Counter()  # "birth tried", "birth kept", ...
        self.batches: deque[Batch] = deque(maxlen=self.config.burn_in)
        self.last: _Recent | None = None
        self.recent: deque[list[list[int]]] = deque(maxlen=self.config.window)
        self.last_trial: Trial | None = None

    # --- learning ----------------------------------------------------------------------
    def update(
        self,
        model: StreamingLDA,
        batch: Batch,
        documents: Callable[[torch.Tensor], None] | None = None,
    ) -> Reshaped | None:
        """Learn ``batch``; first, when a trial is due, try a move scored on it (not yet
        learned). What the kept move changed, or None."""
        reshaped = self._trial(model, batch) if self._due() else None
        received: list[torch.Tensor] = []

        def observe(counts: torch.Tensor) -> None:
            received.append(counts)
            if documents is not None:
                documents(counts)

        model.update(batch, documents=observe)
        self.learned += 1
        self.batches.append(batch)
        if received:
            self._observe(model, batch, received[-1])
        return reshaped

    def _due(self) -> bool:
        c = self.config
        return (
            self.learned >= max(c.start_after, c.burn_in)
            and len(self.batches) >= c.burn_in
            and (self.learned - c.start_after) % c.every == 0
        )

    def _observe(self, model: StreamingLDA, batch: Batch, counts: torch.Tensor) -> None:
        """The topics' running token shares, and the minibatch kept for births."""
        counts = counts.detach().to("cpu", torch.float64)
        K = model.config.n_topics
        if self.shares is None or self.shares.numel() != K:
            self.shares = torch.zeros(K, dtype=torch.float64)
            self.born_at = torch.zeros(K, dtype=torch.int64)
        total = counts.sum()
        if float(total) > 0:
            decay = self.config.share_decay
            now = counts.sum(dim=0) / total
            self.shares = now if self.learned == 1 else decay * self.shares + (1 - decay) * now
        self.last = _Recent(_documents(batch), counts, batch.n_documents)
        self.recent.append(self.last.documents)

    # --- the trial ---------------------------------------------------------------------
    def _trial(self, model: StreamingLDA, validation: Batch) -> Reshaped | None:
        kinds = self.config.kinds
        for _ in kinds:
            kind = kinds[self.turn % len(kinds)]
            self.turn += 1
            proposal = self._propose(kind, model)
            if proposal:
                return self._try(kind, proposal, model, validation)
        return None

    def _try(
        self, kind: Kind, proposal: list[Any], model: StreamingLDA, validation: Batch
    ) -> Reshaped | None:
        heldout = HeldoutSet.from_documents(_documents(validation), model.device)
        saved = model.state_dict()
        try:
            model.load_state_dict(copy.deepcopy(saved))  # the saved tensors stay untouched
            self._burn_in(model)
            control = self._score(model, heldout)
            model.load_state_dict(copy.deepcopy(saved))
            before = self._top_words(model)
            first = len(model.topic_ids.moves)
            slots = self._apply(kind, proposal, model, before)
            self._burn_in(model)
            moved = self._score(model, heldout)
        except NonFiniteError:  # a trial's step would not be finite: no move, nothing changed
            model.load_state_dict(saved)
            self.trials[f"{kind} failed"] += 1
            return None
        kept = self._accept(kind, control, moved)
        self.trials[f"{kind} tried"] += 1
        self.last_trial = Trial(kind, tuple(slots), control, moved, kept)
        if not kept:
            model.load_state_dict(saved)
            return None
        self.trials[f"{kind} kept"] += 1
        return self._record(kind, slots, model, first)

    def _accept(self, kind: Kind, control: float, moved: float) -> bool:
        """Kept when the held-out perplexity is no worse than the control's: a retire or merge
        may cost ``tolerance`` (the score's noise), a birth or split must not cost anything."""
        tolerance = 0.0 if kind in ("birth", "split") else self.config.tolerance
        return moved <= control * (1.0 + tolerance)

    def _burn_in(self, model: StreamingLDA) -> None:
        for batch in list(self.batches)[-self.config.burn_in :]:
            model.update(batch, revisit=True)

    def _score(self, model: StreamingLDA, heldout: HeldoutSet) -> float:
        """Perplexity of beta_mean on ``heldout``, the same draws for move and control."""
        sweeps = self.config.eval_sweeps
        gibbs = dataclasses.replace(model.scorer_config.gibbs, sweeps=sweeps, burn_in=sweeps // 5)
        generator = torch.Generator(device=model.device).manual_seed(self.seed + self.learned)
        beta = model.live(model.beta_mean)
        probabilities = test_token_probabilities(beta, heldout, gibbs, generator)
        return perplexity_from_probabilities(probabilities)

    # --- proposals ---------------------------------------------------------------------
    def _propose(self, kind: Kind, model: StreamingLDA) -> list[Any]:
        if self.shares is None or self.born_at is None:
            return []
        ids = model.topic_ids
        live = ids.live_slots()
        seeded = {int(k) for k in model.seeds.topics.tolist()}
        c = self.config
        if kind == "retire":
            if len(live) <= c.min_topics:
                return []
            mean = float(self.shares[live].sum()) / len(live)
            old = [k for k in live if self.learned - int(self.born_at[k]) >= c.start_after]
            dead = [
                k for k in old if k not in seeded and float(self.shares[k]) < c.dead_share * mean
            ]
            dead.sort(key=lambda k: float(self.shares[k]))  # type: ignore[index]
            junk = self._junk(model, [k for k in old if k not in seeded and k not in dead])
            return (dead + junk)[: min(c.most, len(live) - c.min_topics)]
        if kind == "merge":
            if len(live) <= c.min_topics:
                return []
            return self._duplicates(model, live, seeded)[: min(c.most, len(live) - c.min_topics)]
        free = ids.free_slots()
        if not free or self.last is None:
            return []
        if kind == "split":
            return self._splits(model, live, len(free))
        return self._births(model, live, len(free))

    def _junk(self, model: StreamingLDA, candidates: list[int]) -> list[int]:
        """The ``candidates`` whose top words hardly co-occur: NPMI in the last ``window``
        minibatches' documents below ``junk_npmi``, the least coherent first."""
        c = self.config
        documents = [d for batch in self.recent for d in batch]
        if c.junk_npmi is None or not candidates or not documents:
            return []
        top, _ = model.top_words(c.top)
        npmi = npmi_coherence(top[candidates], documents).tolist()
        junk = [(v, k) for k, v in zip(candidates, npmi, strict=True) if v < c.junk_npmi]
        return [k for _, k in sorted(junk)]

    def _duplicates(
        self, model: StreamingLDA, live: list[int], seeded: set[int]
    ) -> list[tuple[int, int]]:
        """Disjoint (kept, away) pairs of live topics sharing ``overlap`` of their top words,
        the most alike first; the smaller share merges into the larger, a seeded one never
        away."""
        assert self.shares is not None
        top, _ = model.top_words(self.config.top)
        sets = {k: set(top[k].tolist()) for k in live}
        pairs = []
        for i, a in enumerate(live):
            for b in live[i + 1 :]:
                common = len(sets[a] & sets[b])
                if common >= self.config.overlap:
                    pairs.append((common, a, b))
        pairs.sort(reverse=True)
        used: set[int] = set()
        chosen = []
        for _, a, b in pairs:
            if a in used or b in used:
                continue
            kept, away = (a, b) if float(self.shares[a]) >= float(self.shares[b]) else (b, a)
            if away in seeded:
                kept, away = away, kept
            if away in seeded:
                continue
            used |= {a, b}
            chosen.append((kept, away))
        return chosen

    def _births(self, model: StreamingLDA, live: list[int], free: int) -> list[torch.Tensor]:
        """Word counts for new topics: the last minibatch's documents that no live topic holds
        (the lowest largest share), grouped around the least held by cosine likeness, each
        group's counts on the chain's scale (N/n)."""
        assert self.last is not None
        c = self.config
        docs, counts = self.last.documents, self.last.counts
        lengths = torch.tensor([len(d) for d in docs], dtype=torch.float64)
        held = counts[:, live].max(dim=1).values / lengths.clamp_min(1.0)
        order = [int(d) for d in torch.argsort(held) if int(lengths[d]) >= c.min_length]
        wanted = min(c.births, free)
        pool = order[: wanted * c.birth_docs * 2]
        if len(pool) < c.birth_docs:
            return []
        W = model.config.n_words
        tf = torch.zeros(len(pool), W, dtype=torch.float64)
        for i, d in enumerate(pool):
            tf[i].index_add_(
                0, torch.tensor(docs[d]), torch.ones(len(docs[d]), dtype=torch.float64)
            )
        # each word weighed by how little the document's topics explain it: c_dw / (1 + W p(w|d))
        pi = counts[pool] / lengths[pool].clamp_min(1.0).unsqueeze(1)
        explained = pi[:, live] @ model.beta_mean[live].to("cpu", torch.float64)
        tf = tf / (1.0 + W * explained)
        unit = tf / tf.norm(dim=1, keepdim=True).clamp_min(1e-12)
        scale = model.corpus_size(0) / self.last.n_batch
        left = list(range(len(pool)))
        born: list[torch.Tensor] = []
        while left and len(born) < wanted:
            seed = left[0]
            likeness = unit[left] @ unit[seed]
            group = [left[int(i)] for i in torch.argsort(likeness, descending=True)[: c.birth_docs]]
            left = [i for i in left if i not in group]
            born.append(tf[group].sum(dim=0) * scale)
        return born

    def _splits(
        self, model: StreamingLDA, live: list[int], free: int
    ) -> list[tuple[int, torch.Tensor]]:
        """Broad topics divided in two: for each of the largest live topics, the words it took
        in the last minibatch's documents (each token's responsibility pi_dk beta_kw / p(w|d)),
        the documents split by two-means on those words' directions, and each word's fraction
        in the first half (a word neither half used divides as the halves' totals do).
        (topic, fraction kept by the topic; the rest goes to the new one)."""
        assert self.last is not None and self.shares is not None
        c = self.config
        docs, counts = self.last.documents, self.last.counts
        lengths = torch.tensor([len(d) for d in docs], dtype=torch.float64).clamp_min(1.0)
        beta = model.beta_mean.to("cpu", torch.float64)
        beta_live = beta[live]
        pi = counts[:, live] / lengths.unsqueeze(1)
        W = model.config.n_words
        out: list[tuple[int, torch.Tensor]] = []
        for k in sorted(live, key=lambda k: -float(self.shares[k])):  # type: ignore[index]
            if len(out) >= min(c.births, free):
                break
            most = torch.argsort(counts[:, k], descending=True)[: 8 * c.birth_docs]
            pool = [int(d) for d in most]
            pool = [d for d in pool if float(counts[d, k]) >= c.min_length / 2]
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
            share = float(a.sum() / (a.sum() + b.sum()))
            fraction = (a + SPLIT_PSEUDO * share) / (a + b + SPLIT_PSEUDO)
            out.append((k, fraction))
        return out

    # --- applying and recording --------------------------------------------------------
    def _apply(
        self,
        kind: Kind,
        proposal: list[Any],
        model: StreamingLDA,
        before: dict[int, tuple[str, ...]],
    ) -> list[int]:
        """Make the proposed moves on the learner's state and in ``model.topic_ids`` (so the
        trial's steps and score see the topics as moved; a rejection restores both); the
        slots they touched."""
        g, ids, docs, now = self.generator, model.topic_ids, model.docs_seen, self.clock()
        if kind == "retire":
            for k in proposal:
                moves.retire(model, k, g)
                ids.retired(k, docs, now, before[k])
            return list(proposal)
        if kind == "merge":
            for kept, away in proposal:
                moves.merge(model, kept, away, g)
                ids.merged(kept, away, docs, now, (before[kept], before[away]))
            return [s for pair in proposal for s in pair]
        free = ids.free_slots()[: len(proposal)]
        if kind == "split":
            for slot, (k, fraction) in zip(free, proposal, strict=False):
                moves.divide(model, k, fraction, slot, g)
                ids.born(slot, docs, now, parent=k, before=before[k])
            return free
        for slot, counts in zip(free, proposal, strict=False):
            moves.birth(model, slot, counts, g)
            ids.born(slot, docs, now)
        return free

    def _record(self, kind: Kind, slots: list[int], model: StreamingLDA, first: int) -> Reshaped:
        """A kept trial: its moves' words after, and the shaper's shares and ages follow."""
        assert self.shares is not None and self.born_at is not None
        ids = model.topic_ids
        after = self._top_words(model)
        made = ids.moves[first:]
        if kind == "retire":
            self.shares[slots] = 0.0
            return Reshaped(tuple(made), freed=tuple(slots))
        if kind == "merge":
            pairs = list(zip(slots[::2], slots[1::2], strict=True))
            for i, (kept, away) in enumerate(pairs):
                made[i] = dataclasses.replace(made[i], after=(after[kept],))
                self.shares[kept] += self.shares[away]
                self.shares[away] = 0.0
            ids.moves[first:] = made
            merged = {away: kept for kept, away in pairs}
            return Reshaped(tuple(made), freed=tuple(merged), merged=merged)
        live = [k for k in ids.live_slots() if k not in slots]
        mean = float(self.shares[live].sum()) / max(len(live), 1)
        for i, slot in enumerate(slots):
            parent = made[i].topics[1:]
            parent_slot = None if not parent else ids.slot_of(parent[0])
            if parent_slot is None:
                made[i] = dataclasses.replace(made[i], after=(after[slot],))
                self.shares[slot] = mean
            else:  # a split: the parent's words after too, its share halved
                made[i] = dataclasses.replace(made[i], after=(after[slot], after[parent_slot]))
                self.shares[parent_slot] /= 2
                self.shares[slot] = self.shares[parent_slot]
            self.born_at[slot] = self.learned
        ids.moves[first:] = made
        return Reshaped(tuple(made), born=tuple(slots))

    def _top_words(self, model: StreamingLDA) -> dict[int, tuple[str, ...]]:
        top, _ = model.top_words(self.config.top)
        return {k: self.words(top[k].tolist()) for k in range(top.shape[0])}

    def forget_minibatches(self) -> None:
        """Drop the minibatches in hand (their words changed, or the learner went back): a
        trial waits for ``burn_in`` new ones."""
        self.batches.clear()
        self.recent.clear()
        self.last = None

    # --- checkpoints -------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """What goes on after a restart (the minibatches in hand do not: a trial waits for
        ``burn_in`` new ones)."""
        return {
            "generator": self.generator.get_state(),
            "shares": None if self.shares is None else self.shares.clone(),
            "born_at": None if self.born_at is None else self.born_at.clone(),
            "learned": self.learned,
            "turn": self.turn,
            "trials": dict(self.trials),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generator.set_state(state["generator"])
        self.shares = state["shares"]
        self.born_at = state["born_at"]
        self.learned = int(state["learned"])
        self.turn = int(state["turn"])
        self.trials = Counter({str(k): int(v) for k, v in state["trials"].items()})
        self.forget_minibatches()


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


def _documents(batch: Batch) -> list[list[int]]:
    """A minibatch's documents as lists of word ids."""
    words = batch.words.cpu().tolist()
    offsets = batch.offsets.tolist()
    return [words[offsets[d] : offsets[d + 1]] for d in range(len(offsets) - 1)]
