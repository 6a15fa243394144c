"""A uniform sample of the articles the worker learned, kept in Redis, for learning while quiet.

Reservoir sampling (Vitter's Algorithm R): the n-th article offered takes a random one of the
``capacity`` slots with probability capacity / n, so at every moment each article learned so far
is in the sample with the same probability. Revisits drawn from it therefore weigh the stream's
past as the stream did, whatever its length (docs/samplers.md, "Revisiting a reservoir").

Each slot holds an article's cleaned text, zlib-compressed: a few kilobytes an article, and
encodable by whatever vocabulary the learner has when it is revisited. The slots live in a
Redis hash (one per rank), written in one pipeline before each checkpoint; the count offered and
the generator's state live in the checkpoint, so both survive a restart together. Slots written
just before a crash that the checkpoint does not count are kept: a redelivered article may then
hold two slots, a small over-weighting of a few articles and never a loss.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

import redis

# zlib's fastest level: every article is compressed until the reservoir is full, on the
# learner's thread, and the default level costs more than twice the time for a tenth less size
# (docs/defaults.md, "Revisits").
LEVEL = 1


class Reservoir:
    """At most ``capacity`` articles' texts, a uniform sample of every one :meth:`offer` saw."""

    def __init__(self, client: redis.Redis | None, key: str, capacity: int, seed: int) -> None:
        """``client``: where the slots are kept (None: in memory only, never flushed)."""
        if capacity < 1:
            raise ValueError(f"a reservoir holds at least one article, asked for {capacity}")
        self.client = client
        self.key = key
        self.capacity = capacity
        self.offered = 0  # articles offered since the first
        self.random = random.Random(seed)
        self.pending: dict[int, bytes] = {}  # slots replaced since the last flush
        self.revisited = 0  # documents drawn for revisits (not in the checkpoint: a rate)
        self._order: list[int] = []  # this pass's slots still to draw, last first

    @property
    def size(self) -> int:
        """Articles held now."""
        return min(self.offered, self.capacity)

    def offer(self, text: str) -> int | None:
        """One article learned: kept in a slot with probability capacity / (articles so far);
        the slot it took (None: not kept)."""
        self.offered += 1
        if self.offered <= self.capacity:
            slot = self.offered - 1
        else:
            slot = self.random.randrange(self.offered)
            if slot >= self.capacity:
                return None
        self.pending[slot] = zlib.compress(text.encode("utf-8"), LEVEL)
        return slot

    def flush(self) -> None:
        """Write the slots replaced since the last flush (before a checkpoint counts them)."""
        if self.pending and self.client is not None:
            self.client.hset(self.key, mapping={str(s): b for s, b in self.pending.items()})
            self.pending.clear()

    def draw(self, n: int) -> list[str]:
        """Up to ``n`` held texts for one revisit minibatch (see :meth:`draw_slots`)."""
        return [text for _, text in self.draw_slots(n)]

    def draw_slots(self, n: int) -> list[tuple[int, str]]:
        """Up to ``n`` held (slot, text) for one revisit minibatch: the slots are visited in a
        random order, each once per pass, so revisits spread evenly over the sample."""
        slots: list[int] = []
        while len(slots) < min(n, self.size):
            if not self._order:
                self._order = list(range(self.size))
                self.random.shuffle(self._order)
            slots.append(self._order.pop())
        stored: dict[int, bytes] = {s: self.pending[s] for s in slots if s in self.pending}
        missing = [s for s in slots if s not in stored]
        if missing and self.client is not None:
            read: list[Any] = self.client.hmget(self.key, [str(s) for s in missing])
            stored.update(
                (s, b) for s, b in zip(missing, read, strict=True) if isinstance(b, bytes)
            )
        texts = [(s, zlib.decompress(stored[s]).decode("utf-8")) for s in slots if s in stored]
        self.revisited += len(texts)
        return texts

    def read(self, slots: list[int]) -> dict[int, str]:
        """The texts held in ``slots`` now (a slot not yet written anywhere is left out),
        without drawing: for another thread (it reads the slots not flushed yet, then Redis)."""
        stored = {s: b for s in slots if (b := self.pending.get(s)) is not None}
        missing = [s for s in slots if s not in stored]
        if missing and self.client is not None:
            read: list[Any] = self.client.hmget(self.key, [str(s) for s in missing])
            stored.update(
                (s, b) for s, b in zip(missing, read, strict=True) if isinstance(b, bytes)
            )
        return {s: zlib.decompress(b).decode("utf-8") for s, b in stored.items()}

    @property
    def passes(self) -> float:
        """Revisits per held article so far: how many times, on average, each was seen again."""
        return self.revisited / self.size if self.size else 0.0

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps: the count offered, the generator and the capacity."""
        return {
            "offered": self.offered,
            "random": self.random.getstate(),
            "capacity": self.capacity,
            "revisited": self.revisited,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Go on from a checkpoint's :meth:`state_dict` (its slots are in Redis already). A
        smaller capacity keeps the first ``capacity`` slots, still a uniform sample; a larger
        one fills its new slots with the next articles, which weigh more until the stream
        dilutes them."""
        self.offered = int(state["offered"])
        self.random.setstate(state["random"])
        self.revisited = int(state.get("revisited", 0))
        before = int(state.get("capacity", self.capacity))
        if before > self.capacity and self.client is not None:
            self.client.hdel(self.key, *[str(s) for s in range(self.capacity, before)])
        elif before < self.capacity:
            self.offered = min(self.offered, before)
        self._order = []
