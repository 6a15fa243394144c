"""Topics that shape themselves: retire, merge and split moves decided while the stream runs, each
kept when it raises the collapsed log joint of the recent documents (docs/model.md, "The
shaper", "Scoring moves in closed form").

The shaper learns every minibatch as the learner would without it, keeping each minibatch's
documents and expected topic counts E[n_dk] (the window). Every ``every`` minibatches, before
the next step, it proposes moves of every kind (duplicates to merge, dead and junk topics to
retire, broad topics to split into the free slots), scores each from one draw of the window's
topic assignments (lda.shaping.evidence) and makes those whose score is positive. No step is
taken and no document is revisited for a decision: the learning path is untouched between
decisions. What is proposed and what is kept can be passed in. Pure: the learner, the
minibatches and a seed come in; no clock but the one passed.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from lda.batch import Batch
from lda.model import StreamingLDA
from lda.parallel import Layout, Reducer
from lda.shaping import evidence, moves, proposals
from lda.shaping.config import KINDS, Kind, ShapingConfig
from lda.shaping.divide import divide
from lda.shaping.plan import Plan, summed
from lda.shaping.proposals import Recent, Window
from lda.topic_ids import TopicMove

Words = Callable[[Sequence[int]], tuple[str, ...]]
__all__ = [
    "KINDS",
    "Accept",
    "FixedTopics",
    "Kind",
    "Plan",
    "Propose",
    "Reshaped",
    "Shaper",
    "ShapingConfig",
    "TopicShaper",
]


class Propose(Protocol):
    """What one kind of move proposes for ``model`` now, from the shaper's window."""

    def __call__(self, kind: Kind, model: StreamingLDA, shaper: Window) -> list[Any]: ...


Accept = Callable[[Kind, float], bool]


def positive(kind: Kind, gain: float) -> bool:
    """A move is made when it raises the log joint (its score, less the tolerance a retire or
    merge is given: :meth:`TopicShaper.decide`)."""
    return gain > 0.0


@dataclass(frozen=True)
class Reshaped:
    """One decision's moves as ``model.topic_ids`` recorded them, the slots they freed, the
    freed slots merged into a kept one (``merged[j] = k``), the slots a new number is in,
    and the split parents whose number went to their other half's slot (``moved[k] = j``)."""

    moves: tuple[TopicMove, ...]
    freed: tuple[int, ...] = ()
    merged: dict[int, int] = field(default_factory=dict)
    born: tuple[int, ...] = ()
    moved: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Scored:
    """A proposed move and its score: the change in the window's log joint."""

    kind: Kind
    proposal: Any
    gain: float


class Shaper(Protocol):
    """What a fresh minibatch is learned through: a :class:`TopicShaper`, which may move topics
    first, or :class:`FixedTopics`, which never does (K fixed)."""

    decisions: Counter[str]

    def update(
        self,
        model: StreamingLDA,
        batch: Batch,
        documents: Callable[[torch.Tensor], None] | None = None,
        reducer: Reducer | None = None,
        where: Layout | None = None,
    ) -> Reshaped | None: ...

    def forget_minibatches(self) -> None: ...

    def summary(self, model: StreamingLDA) -> str: ...

    def drift_rows(
        self, model: StreamingLDA, pinned: Iterable[int]
    ) -> tuple[tuple[int, ...], tuple[int, ...] | None]: ...

    def state_dict(self) -> dict[str, Any] | None: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class FixedTopics:
    """The shaper of a fixed K: learns each minibatch as the learner alone would, moves no
    topic, decides nothing and keeps nothing for a checkpoint."""

    def __init__(self) -> None:
        self.decisions: Counter[str] = Counter()  # always empty

    def update(
        self,
        model: StreamingLDA,
        batch: Batch,
        documents: Callable[[torch.Tensor], None] | None = None,
        reducer: Reducer | None = None,
        where: Layout | None = None,
    ) -> Reshaped | None:
        """One step on ``batch``; never a move."""
        model.update(batch, reducer, where, documents=documents)
        return None

    def forget_minibatches(self) -> None:
        """Nothing is kept: nothing to drop."""

    def summary(self, model: StreamingLDA) -> str:
        """Nothing to say: no topic moves."""
        return ""

    def drift_rows(
        self, model: StreamingLDA, pinned: Iterable[int]
    ) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        """The topics an evaluation's drift matching keeps in place: the ``pinned`` (seeded)
        ones, the others matched among themselves; no numbers (a slot is its topic's)."""
        return tuple(pinned), None

    def state_dict(self) -> None:
        return None

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """A checkpoint's shaper state (written while topics moved) is not used."""


class TopicShaper:
    """Decides topic moves between minibatches; :meth:`update` learns one minibatch through it."""

    def __init__(
        self,
        config: ShapingConfig | None = None,
        seed: int = 0,
        words: Words | None = None,
        clock: Callable[[], float] = time.time,
        *,
        propose: Propose | None = None,
        accept: Accept = positive,
    ) -> None:
        """``words``: a topic's top word ids as text, for the moves' record (default: the ids);
        ``clock``: the moves' time; ``propose`` and ``accept``: what is proposed and what is
        kept (default: lda.shaping.proposals, and a positive score)."""
        self.config = config or ShapingConfig()
        self.generator = torch.Generator().manual_seed(seed)
        self.seed = seed
        self.words: Words = words or (lambda ids: tuple(str(i) for i in ids))
        self.clock = clock
        self.propose: Propose = propose or proposals.propose
        self.accept = accept
        self.shares: torch.Tensor | None = None  # (K,) running mean of each slot's token share
        self.born_at: torch.Tensor | None = None  # (K,) minibatch count at each slot's birth
        self.learned = 0  # minibatches learned through the shaper
        self.decisions: Counter[str] = Counter()  # "merge scored", "merge kept", ...
        # the last ``window`` minibatches learned: their documents and E[n_dk]
        self.recent: deque[Recent] = deque(maxlen=self.config.window)
        self.last: tuple[Scored, ...] = ()  # the last decision's scored proposals

    # --- learning ----------------------------------------------------------------------
    def update(
        self,
        model: StreamingLDA,
        batch: Batch,
        documents: Callable[[torch.Tensor], None] | None = None,
        reducer: Reducer | None = None,
        where: Layout | None = None,
    ) -> Reshaped | None:
        """Learn ``batch`` (with a group's ``reducer``, every rank's union); first, when a
        decision is due, make the moves it keeps: rank 0 decides from its own window, every
        rank makes the same moves. What they changed, or None."""
        group = reducer if reducer is not None and reducer.world_size > 1 else None
        reshaped = None
        if self._due():  # before the step: the minibatch is learned by the topics as moved
            plan = self.decide(model) if group is None or group.rank == 0 else Plan()
            if group is not None:
                plan = plan.shared(group, model.config.n_words, model.device)
            reshaped = self.make(model, plan)
        received: list[torch.Tensor] = []

        def observe(counts: torch.Tensor) -> None:
            received.append(counts)
            if documents is not None:
                documents(counts)

        model.update(batch, reducer, where, documents=observe)
        self.learned += 1
        K = model.config.n_topics
        counts = received[-1] if received else torch.zeros(0, K, dtype=torch.float64)
        self._observe(model, batch, counts, group)
        return reshaped

    def _due(self) -> bool:
        c = self.config
        return (
            self.learned >= c.start_after
            and len(self.recent) >= max(1, c.window // 2)
            and (self.learned - c.start_after) % c.every == 0
        )

    def _observe(
        self, model: StreamingLDA, batch: Batch, counts: torch.Tensor, group: Reducer | None
    ) -> None:
        """The topics' running token shares (over a group's every rank), and this rank's
        minibatch kept in the window."""
        counts = counts.detach().to("cpu", torch.float64)
        K = model.config.n_topics
        if self.shares is None or self.shares.numel() != K:
            self.shares = torch.zeros(K, dtype=torch.float64)
            self.born_at = torch.zeros(K, dtype=torch.int64)
        by_topic = counts.sum(dim=0)
        if group is not None:
            by_topic = summed(group, by_topic, model.device)
        total = by_topic.sum()
        if float(total) > 0:
            decay = self.config.share_decay
            now = by_topic / total
            self.shares = now if self.learned == 1 else decay * self.shares + (1 - decay) * now
        if counts.shape[0]:
            self.recent.append(Recent.of(batch, counts))

    # --- the decision ------------------------------------------------------------------
    def decide(self, model: StreamingLDA) -> Plan:
        """Propose every kind, score each proposal on one draw of the window, and choose the
        kept ones: merges (the best first, disjoint), then retires, then splits into the
        slots free before this decision."""
        kinds = self.config.kinds
        merges = self.propose("merge", model, self) if "merge" in kinds else []
        retires = self.propose("retire", model, self) if "retire" in kinds else []
        splits = self.propose("split", model, self) if "split" in kinds else []
        if not (merges or retires or splits) or not self.recent:
            return Plan()
        # the scores' draws come from a generator of their own, so that the moves' draws
        # (self.generator) are the same on every rank of a group, which scores nothing
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.learned)
        mean = model.beta_mean  # (K, W), read once
        draw, position = self._draw(model, mean, g)
        learned = model.prior.learn
        scored: list[Scored] = []
        for kept, away in merges:
            gain = evidence.merge_gain(draw, position[kept], position[away], learned)
            scored.append(Scored("merge", (kept, away), gain))
        for k in retires:
            tokens, to = evidence.reassign(draw, position[k], g)
            gain = evidence.retire_gain(draw, position[k], tokens, to)
            scored.append(Scored("retire", k, gain))
        # a retire or merge takes a topic away: it may cost ``tolerance`` nats per token of
        # the window (the noise of one draw), so that junk and dead topics make room for splits
        allowance = self.config.tolerance * float(draw.lengths.sum()) * draw.scale
        scored = [dataclasses.replace(s, gain=s.gain + allowance) for s in scored]
        counted: Counter[str] = Counter(s.kind for s in scored)
        # a half under the dead line of the window's tokens would be retired as soon as its
        # grace ends: a split that would make one is not made. The line is drawn at the slots'
        # average, where the topics are headed, so that a few broad topics still split
        smallest = self.config.dead_share * float(draw.lengths.sum()) / model.config.n_topics
        for k, proposed in splits:
            counted["split"] += 1
            first = evidence.halves(draw, position[k], proposed)
            if not bool(first.any()):
                continue  # the topic's documents give no two halves
            if min(evidence.half_tokens(draw, position[k], first)) < smallest:
                continue  # one half would be born dead
            gain = evidence.split_gain(draw, position[k], first, learned)
            fraction = evidence.fraction_of(draw, position[k], first)
            if not proposals.distinct(mean[k], fraction, self.config):
                continue  # the halves would be a duplicate pair
            scored.append(Scored("split", (k, fraction), gain))
        self.last = tuple(scored)
        return self._choose(model, scored, counted)

    def _draw(
        self, model: StreamingLDA, mean: torch.Tensor, generator: torch.Generator
    ) -> tuple[evidence.Draw, dict[int, int]]:
        """One draw of the window's topic assignments over the live topics (``mean`` the
        slots' beta_mean), and each live slot's position in it. The window's documents stand for
        those beta_mean remembers (docs/model.md, "Scoring moves in closed form")."""
        live = model.topic_ids.live_slots()
        words = torch.cat([r.words for r in self.recent])
        lengths = torch.cat([r.lengths for r in self.recent])
        expected = torch.cat([r.counts[:, live] for r in self.recent])
        gamma = model.prior.gamma[live].to(torch.float64)
        held = float(lengths.numel())
        stands = max(held, min(float(model.docs_seen), self._remembered(model)))
        assert model.config.alpha is not None
        alpha = model.config.alpha * stands / model.corpus_size(0)
        rows = torch.tensor(live, dtype=torch.int64)
        d = evidence.draw(words, lengths, expected, mean, gamma, alpha, generator, rows=rows)
        d = dataclasses.replace(d, scale=stands / held)
        return d, {k: i for i, k in enumerate(live)}

    def _remembered(self, model: StreamingLDA) -> float:
        """The documents beta_mean stands for: a minibatch's over 1 - mean_decay."""
        decay = model.config.mean_decay
        per_batch = sum(r.n_batch for r in self.recent) / len(self.recent)
        return per_batch / max(1.0 - (decay if decay is not None else 0.0), 1e-9)

    def _choose(self, model: StreamingLDA, scored: list[Scored], counted: Counter[str]) -> Plan:
        """The scored moves that ``accept`` keeps, at most ``most`` merges and retires and
        never fewer than ``min_topics`` live; a topic in one move only."""
        ids, c = model.topic_ids, self.config
        room = len(ids.live_slots()) - c.min_topics
        best = sorted(scored, key=lambda s: -s.gain)
        touched: set[int] = set()
        merges: list[tuple[int, int]] = []
        for s in best:
            kept, away = s.proposal if s.kind == "merge" else (-1, -1)
            if s.kind != "merge" or len(merges) >= min(c.most, room):
                continue
            if not {kept, away} & touched and self.accept("merge", s.gain):
                merges.append((kept, away))
                touched |= {kept, away}
        room -= len(merges)
        retires: list[int] = []
        for s in best:
            if s.kind != "retire" or len(retires) >= min(c.most, room):
                continue
            if s.proposal not in touched and self.accept("retire", s.gain):
                retires.append(s.proposal)
                touched.add(s.proposal)
        # the slots free before this decision: one a merge or retire frees is a new topic's
        # at the next decision, so a slot is never freed and taken in one event
        free = ids.free_slots()
        splits: list[tuple[int, int, torch.Tensor]] = []
        for s in best:
            if s.kind != "split" or len(splits) >= len(free):
                continue
            k, fraction = s.proposal
            if k not in touched and self.accept("split", s.gain):
                splits.append((k, free[len(splits)], fraction))
                touched.add(k)
        return Plan(tuple(merges), tuple(retires), tuple(splits), dict(counted))

    def make(self, model: StreamingLDA, plan: Plan) -> Reshaped | None:
        """The plan's moves, made on the learner and recorded in ``model.topic_ids``."""
        g, ids, docs, now = self.generator, model.topic_ids, model.docs_seen, self.clock()
        for kind, n in plan.scored.items():
            self.decisions[f"{kind} scored"] += n
        if not (plan.merges or plan.retires or plan.splits):
            return None
        before = self._top_words(model)
        first = len(ids.moves)
        for kept, away in plan.merges:
            moves.merge(model, kept, away, g)
            ids.merged(kept, away, docs, now, (before[kept], before[away]))
        # a retired topic's counts go to the unseeded topics live after the decision's merges and
        # retires: a seeded topic's words are its seeds' and its own data's, not a retire's
        gone = set(plan.retires) | _seeded(model)
        receivers = [j for j in ids.live_slots() if j not in gone]
        for k in plan.retires:
            moves.retire(model, k, g, receivers)
            ids.retired(k, docs, now, before[k])
        for k, slot, fraction in plan.splits:
            divide(model, k, fraction, slot, g)
            ids.born(slot, docs, now, parent=k, before=before[k])
        self.decisions["merge kept"] += len(plan.merges)
        self.decisions["retire kept"] += len(plan.retires)
        self.decisions["split kept"] += len(plan.splits)
        merged = {away: kept for kept, away in plan.merges}
        split = [(k, slot) for k, slot, _ in plan.splits]
        return self._record(model, first, merged, list(plan.retires), split)

    def _record(
        self,
        model: StreamingLDA,
        first: int,
        merged: dict[int, int],
        retired: list[int],
        split: list[tuple[int, int]],
    ) -> Reshaped:
        """The kept moves' words after; the shaper's shares and ages follow them; a split's
        number stays with the half that kept more of its words."""
        assert self.shares is not None and self.born_at is not None
        ids = model.topic_ids
        after = self._top_words(model)
        made = ids.moves[first:]
        seeded = _seeded(model)
        born: list[int] = []
        moved: dict[int, int] = {}
        splits = iter(split)
        for i, move in enumerate(made):
            if move.kind == "merge":
                kept_slot = ids.slot_of(move.topics[0])
                assert kept_slot is not None
                away = next(j for j, k in merged.items() if k == kept_slot)
                made[i] = dataclasses.replace(move, after=(after[kept_slot],))
                self.shares[kept_slot] += self.shares[away]
                self.shares[away] = 0.0
            elif move.kind == "birth":  # a split: the parent's words after too, its share halved
                parent_slot, slot = next(splits)
                self.shares[parent_slot] /= 2
                self.shares[slot] = self.shares[parent_slot]
                self.born_at[slot] = self.born_at[parent_slot] = self.learned
                words = set(move.before[0])
                if parent_slot not in seeded and len(words & set(after[slot])) > len(
                    words & set(after[parent_slot])
                ):  # the number goes with its words (the slots, and so the chain, stay)
                    ids.trade(parent_slot, slot)
                    moved[parent_slot] = slot
                    slot, parent_slot = parent_slot, slot
                made[i] = dataclasses.replace(move, after=(after[slot], after[parent_slot]))
                born.append(slot)
        for k in retired:
            self.shares[k] = 0.0
        ids.moves[first:] = made
        freed = (*merged, *retired)
        return Reshaped(tuple(made), freed=freed, merged=merged, born=tuple(born), moved=moved)

    def _top_words(self, model: StreamingLDA) -> dict[int, tuple[str, ...]]:
        top, _ = model.top_words(self.config.top)
        return {k: self.words(top[k].tolist()) for k in range(top.shape[0])}

    def forget_minibatches(self) -> None:
        """Drop the minibatches in hand (their words changed, or the learner went back): a
        decision waits for new ones."""
        self.recent.clear()

    def summary(self, model: StreamingLDA) -> str:
        """The live topics and the decisions so far, in a line (``train``'s last words)."""
        decided = ", ".join(f"{k} {v}" for k, v in sorted(self.decisions.items()))
        return f"{len(model.topic_ids.live_slots())} live topics; moves: {decided or 'none'}"

    def drift_rows(
        self, model: StreamingLDA, pinned: Iterable[int]
    ) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        """The topics an evaluation's drift matching keeps in place, and each slot's topic
        number: every slot keeps its topic (a move, not the matching, says when a topic
        changes: a free slot's prior draw must never take a live topic's number), only the
        live rows are scored, and a topic's drift is from its number's last row."""
        return tuple(range(model.config.n_topics)), tuple(model.topic_ids.slots)

    # --- checkpoints -------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """What goes on after a restart (the window does not: decisions wait for new
        minibatches)."""
        return {
            "generator": self.generator.get_state(),
            "shares": None if self.shares is None else self.shares.clone(),
            "born_at": None if self.born_at is None else self.born_at.clone(),
            "learned": self.learned,
            "decisions": dict(self.decisions),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generator.set_state(state["generator"])
        self.shares = state["shares"]
        self.born_at = state["born_at"]
        self.learned = int(state["learned"])
        # (an older checkpoint's held-out trials are not decisions: they are not carried)
        decisions = state.get("decisions", {})
        self.decisions = Counter({str(k): int(v) for k, v in decisions.items()})
        self.forget_minibatches()


def _seeded(model: StreamingLDA) -> set[int]:
    """The slots whose topic holds seeds (never retired, merged away or traded)."""
    return {int(k) for k in model.seeds.topics.tolist()}
