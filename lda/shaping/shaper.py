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
from typing import Any

import torch

from lda.batch import Batch
from lda.evaluation.perplexity import (
    HeldoutSet,
    perplexity_from_probabilities,
    test_token_probabilities,
)
from lda.model import NonFiniteError, StreamingLDA
from lda.shaping import moves, proposals
from lda.shaping.config import KINDS, Kind, ShapingConfig
from lda.shaping.divide import divide
from lda.shaping.proposals import Recent
from lda.topic_ids import TopicMove

Words = Callable[[Sequence[int]], tuple[str, ...]]
__all__ = ["KINDS", "Kind", "Reshaped", "ShapingConfig", "TopicShaper", "Trial"]


@dataclass(frozen=True)
class Reshaped:
    """One kept trial: the moves as ``model.topic_ids`` recorded them, the slots they freed,
    the freed slots merged into a kept one (``merged[j] = k``), the slots a new number is in,
    and the split parents whose number went to their other half's slot (``moved[k] = j``)."""

    moves: tuple[TopicMove, ...]
    freed: tuple[int, ...] = ()
    merged: dict[int, int] = field(default_factory=dict)
    born: tuple[int, ...] = ()
    moved: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Trial:
    """A trial's outcome, kept or not: its kind, the slots it concerned, both perplexities."""

    kind: Kind
    slots: tuple[int, ...]
    control: float
    moved: float
    kept: bool


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
        # the last ``window`` minibatches learned, their documents and E[n_dk]: junk topics'
        # NPMI is counted in them, splits and births are drawn from the last
        self.recent: deque[Recent] = deque(maxlen=self.config.window)
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
        self.recent.append(Recent(_documents(batch), counts, batch.n_documents))

    # --- the trial ---------------------------------------------------------------------
    def _trial(self, model: StreamingLDA, validation: Batch) -> Reshaped | None:
        """One trial: duplicates first, whenever there are any (a split may have just made
        them) and the last trial was not a merge left undone, else the next kind in turn that
        has something to propose."""
        kinds, last = self.config.kinds, self.last_trial
        undone = last is not None and last.kind == "merge" and not last.kept
        if "merge" in kinds and not undone and (pairs := self._propose("merge", model)):
            return self._try("merge", pairs, model, validation)
        kinds = tuple(k for k in kinds if k != "merge") or kinds
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
        """The trial's revisit steps; they are the move's, not revisits of the stream, so they
        leave ``model.revisited_docs`` (a quiet worker's revisit budget) as it was."""
        revisited = model.revisited_docs
        for batch in list(self.batches)[-self.config.burn_in :]:
            model.update(batch, revisit=True)
        model.revisited_docs = revisited

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
        seeded = _seeded(model)
        c = self.config
        room = len(live) - c.min_topics
        if kind == "retire":
            if room <= 0:
                return []
            old = [k for k in live if self.learned - int(self.born_at[k]) >= c.start_after]
            dead = proposals.dead(self.shares, live, old, seeded, c.dead_share)
            rest = [k for k in old if k not in seeded and k not in dead]
            documents = [d for batch in self.recent for d in batch.documents]
            junk = [] if c.junk_npmi is None else proposals.junk(model, rest, documents, c)
            return (dead + junk)[: min(c.most, room)]
        if kind == "merge":
            if room <= 0:
                return []
            return proposals.duplicates(model, live, seeded, self.shares, c)[: min(c.most, room)]
        free = ids.free_slots()
        if not free or not self.recent:
            return []
        last = self.recent[-1]  # (the whole window's documents made worse splits on DEV)
        wanted = min(c.births, len(free))
        if kind == "split":
            return proposals.splits(model, live, last, self.shares, wanted, c)
        return proposals.births(model, live, last, wanted, c)

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
                divide(model, k, fraction, slot, g)
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
        seeded = _seeded(model)
        born, moved = [], {}
        for i, slot in enumerate(slots):
            parent = made[i].topics[1:]
            parent_slot = None if not parent else ids.slot_of(parent[0])
            if parent_slot is None:
                made[i] = dataclasses.replace(made[i], after=(after[slot],))
                self.shares[slot] = mean
                born.append(slot)
            else:  # a split: the parent's words after too, its share halved
                self.shares[parent_slot] /= 2
                self.shares[slot] = self.shares[parent_slot]
                words = set(made[i].before[0])
                if parent_slot not in seeded and len(words & set(after[slot])) > len(
                    words & set(after[parent_slot])
                ):  # the number goes with its words (the slots, and so the chain, stay)
                    ids.trade(parent_slot, slot)
                    moved[parent_slot] = slot
                    slot, parent_slot = parent_slot, slot
                made[i] = dataclasses.replace(made[i], after=(after[slot], after[parent_slot]))
                born.append(slot)
            self.born_at[slots[i]] = self.learned
        ids.moves[first:] = made
        return Reshaped(tuple(made), born=tuple(born), moved=moved)

    def _top_words(self, model: StreamingLDA) -> dict[int, tuple[str, ...]]:
        top, _ = model.top_words(self.config.top)
        return {k: self.words(top[k].tolist()) for k in range(top.shape[0])}

    def forget_minibatches(self) -> None:
        """Drop the minibatches in hand (their words changed, or the learner went back): a
        trial waits for ``burn_in`` new ones."""
        self.batches.clear()
        self.recent.clear()

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


def _seeded(model: StreamingLDA) -> set[int]:
    """The slots whose topic holds seeds (never retired, merged away or traded)."""
    return {int(k) for k in model.seeds.topics.tolist()}


def _documents(batch: Batch) -> list[list[int]]:
    """A minibatch's documents as lists of word ids."""
    words = batch.words.cpu().tolist()
    offsets = batch.offsets.tolist()
    return [words[offsets[d] : offsets[d + 1]] for d in range(len(offsets) - 1)]
