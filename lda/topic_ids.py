"""Topic numbers as identities: which of the learner's K slots hold a live topic, the number each
live topic is known by, and what became of every number that is gone (docs/topics.md, "Topics
that shape themselves").

A slot is a row of the learner's state; a number is what people and the API use. A born topic
takes a number never used before, so a number never silently changes its meaning: a merged-away
number answers with the topic it went into, a retired one with when it went. Pure bookkeeping:
no tensors, no clock (the caller passes the documents seen and the time).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

MoveKind = Literal["birth", "merge", "retire"]
FREE = -1  # a slot with no live topic

# The moves kept for /topics/events (the oldest dropped first); every gone number stays
# answerable whatever this bound (``gone`` keeps one small record per number).
MOVES_KEPT = 2000


@dataclass(frozen=True)
class Gone:
    """What became of a number: ``merged`` into topic ``into``, or ``retired``; at ``docs``
    documents seen, ``time`` (Unix seconds)."""

    kind: Literal["merged", "retired"]
    docs: int
    time: float
    into: int | None = None


@dataclass(frozen=True)
class TopicMove:
    """One kept move: its kind, when (documents seen, Unix time), the numbers it concerned
    (birth: the new one, and the one it split from if any; merge: the kept one, then the one
    merged away; retire: the retired one), and their top words before and after (a born
    topic has none before but its parent's, a gone one none after)."""

    kind: MoveKind
    docs: int
    time: float
    topics: tuple[int, ...]
    before: tuple[tuple[str, ...], ...] = ()
    after: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Status:
    """A number's answer: ``live`` (at ``slot``), ``merged`` (``into`` the live topic that now
    holds it, followed through later merges), ``retired`` or ``unknown`` (never used)."""

    state: Literal["live", "merged", "retired", "unknown"]
    slot: int | None = None
    into: int | None = None
    gone: Gone | None = None


class Identity(tuple[int, ...]):
    """The numbers of a fixed K's topics, 0..K-1: every slot live, its number its slot. The
    listing every reader falls back on: the formats from before numbers imply it, so it is never
    written (:func:`saved`)."""

    @classmethod
    def of(cls, n: int) -> Identity:
        return cls(range(n))


def saved(numbers: Sequence[int] | None) -> list[int] | None:
    """The listed topics' numbers as the formats write them: None (the field left out, as
    before numbers) for none or a fixed K's :class:`Identity`."""
    return None if numbers is None or isinstance(numbers, Identity) else [int(n) for n in numbers]


def position(numbers: Sequence[int], number: int) -> int | None:
    """Where topic ``number`` is listed in ``numbers``, or None when no listed topic has it."""
    try:
        return numbers.index(number)
    except ValueError:
        return None


@dataclass
class TopicIds:
    """Slot -> number (``FREE`` for an empty slot), the next number to give, the gone numbers
    and the moves so far."""

    slots: list[int]
    next_id: int
    gone: dict[int, Gone] = field(default_factory=dict)
    moves: list[TopicMove] = field(default_factory=list)
    moves_total: int = 0  # every move kept, including those dropped from ``moves``
    totals: dict[str, int] = field(default_factory=dict)  # moves kept by kind, all of them

    @classmethod
    def start(cls, slots: int, live: int) -> TopicIds:
        """``live`` topics numbered 0..live-1 in the first slots, the other slots free."""
        if not 1 <= live <= slots:
            raise ValueError(f"the live topics ({live}) must be between 1 and the slots ({slots})")
        return cls(slots=[*range(live), *[FREE] * (slots - live)], next_id=live)

    # --- reading ------------------------------------------------------------------------
    @property
    def n_slots(self) -> int:
        return len(self.slots)

    def live_slots(self) -> list[int]:
        """The slots that hold a live topic, in slot order (the order topics are listed)."""
        return [s for s, number in enumerate(self.slots) if number != FREE]

    def free_slots(self) -> list[int]:
        return [s for s, number in enumerate(self.slots) if number == FREE]

    def live_ids(self) -> list[int]:
        """The live topics' numbers, in slot order."""
        return [number for number in self.slots if number != FREE]

    @property
    def fixed(self) -> bool:
        """No move ever made: numbers are slots (the fixed-K service's topics)."""
        return self.moves_total == 0 and self.slots == list(range(len(self.slots)))

    def slot_of(self, number: int) -> int | None:
        try:
            return self.slots.index(number)
        except ValueError:
            return None

    def status(self, number: int) -> Status:
        """What ``number`` answers now (a merge chain followed to its live end)."""
        slot = self.slot_of(number) if number >= 0 else None
        if slot is not None:
            return Status("live", slot=slot)
        gone = self.gone.get(number)
        if gone is None:
            return Status("unknown")
        if gone.kind == "retired":
            return Status("retired", gone=gone)
        into, seen = gone.into, {number}
        while into is not None and into not in seen:
            seen.add(into)
            later = self.gone.get(into)
            if later is None or later.kind != "merged":
                break
            into = later.into
        return Status("merged", into=into, gone=gone)  # ``into`` live, or itself retired since

    # --- the moves ----------------------------------------------------------------------
    def born(
        self,
        slot: int,
        docs: int,
        time: float,
        after: tuple[str, ...] = (),
        parent: int | None = None,
        before: tuple[str, ...] = (),
    ) -> int:
        """A new topic in free ``slot``: its number, never used before. Split from the topic
        at slot ``parent``: the move names both (new, parent), with the parent's words
        ``before``."""
        if self.slots[slot] != FREE:
            raise ValueError(f"slot {slot} holds topic {self.slots[slot]}: not free")
        number = self.next_id
        self.next_id += 1
        self.slots[slot] = number
        if parent is None:
            self._record(TopicMove("birth", docs, time, (number,), (), (after,)))
        else:
            topics = (number, self._live(parent))
            self._record(TopicMove("birth", docs, time, topics, (before,), (after,)))
        return number

    def trade(self, parent: int, born: int) -> None:
        """A split's halves trade numbers: the parent's goes to slot ``born``, the half that
        kept more of its words, and the new number to slot ``parent`` (the move's record, new
        then parent, stays as it is)."""
        numbers = self._live(parent), self._live(born)
        self.slots[born], self.slots[parent] = numbers

    def merged(
        self,
        kept: int,
        away: int,
        docs: int,
        time: float,
        before: tuple[tuple[str, ...], ...] = (),
        after: tuple[str, ...] = (),
    ) -> None:
        """Slot ``away``'s topic merged into slot ``kept``'s; slot ``away`` is free."""
        kept_id, away_id = self._live(kept), self._live(away)
        self.slots[away] = FREE
        self.gone[away_id] = Gone("merged", docs, time, into=kept_id)
        self._record(TopicMove("merge", docs, time, (kept_id, away_id), before, (after,)))

    def retired(self, slot: int, docs: int, time: float, before: tuple[str, ...] = ()) -> None:
        """Slot ``slot``'s topic retired; the slot is free."""
        number = self._live(slot)
        self.slots[slot] = FREE
        self.gone[number] = Gone("retired", docs, time)
        self._record(TopicMove("retire", docs, time, (number,), (before,), ()))

    def follow(self, matched: Sequence[int]) -> None:
        """The chain's labels moved (slot k now holds what slot ``matched[k]`` held): each
        number goes with its topic to its new slot, so it keeps its meaning."""
        if sorted(int(m) for m in matched) != list(range(len(self.slots))):
            raise ValueError("matched must be a permutation of the slots")
        self.slots = [self.slots[int(m)] for m in matched]

    def _live(self, slot: int) -> int:
        number = self.slots[slot]
        if number == FREE:
            raise ValueError(f"slot {slot} holds no live topic")
        return number

    def _record(self, move: TopicMove) -> None:
        self.moves.append(move)
        self.moves_total += 1
        self.totals[move.kind] = self.totals.get(move.kind, 0) + 1
        del self.moves[:-MOVES_KEPT]

    # --- checkpoints --------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "slots": list(self.slots),
            "next_id": self.next_id,
            "gone": {str(k): asdict(g) for k, g in self.gone.items()},
            "moves": [asdict(m) for m in self.moves],
            "moves_total": self.moves_total,
            "totals": dict(self.totals),
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> TopicIds:
        moves = [
            TopicMove(
                kind=m["kind"],
                docs=int(m["docs"]),
                time=float(m["time"]),
                topics=tuple(int(t) for t in m["topics"]),
                before=tuple(tuple(str(w) for w in ws) for ws in m["before"]),
                after=tuple(tuple(str(w) for w in ws) for ws in m["after"]),
            )
            for m in state.get("moves", [])
        ]
        gone = {
            int(k): Gone(g["kind"], int(g["docs"]), float(g["time"]), g.get("into"))
            for k, g in state.get("gone", {}).items()
        }
        saved_totals = state.get("totals")
        if saved_totals is None:  # saved before totals were kept: the moves still held
            saved_totals = Counter(m.kind for m in moves)
        ids = cls(
            slots=[int(s) for s in state["slots"]],
            next_id=int(state["next_id"]),
            gone=gone,
            moves=moves,
            moves_total=int(state.get("moves_total", len(moves))),
            totals={str(kind): int(n) for kind, n in saved_totals.items()},
        )
        used = [s for s in ids.slots if s != FREE]
        if len(set(used)) != len(used) or any(s >= ids.next_id for s in used):
            raise ValueError("the saved topic numbers repeat or run past the next number")
        return ids
