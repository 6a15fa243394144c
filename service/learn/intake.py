"""The stream into the session: one read, offered to it, and the acknowledgement of what
needs no checkpoint.

An article goes one way: its text and a reference (:class:`~service.learn.entry_ref.EntryRef`:
entry, title, page id, source) go to the session, which hands back where it placed it; the loop
announces each placement (:class:`~service.learn.events.ArticlePlaced`). A held-out article is
stored by the scoring part, then acknowledged here at once; an empty one (no vocabulary word)
waits to be acknowledged with the next checkpoint; one placed for training is offered to the
reservoir, and waits in the session as word ids and its reference until the step that learns it.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

from service.learn.entry_ref import EntryRef
from service.learn.session import Events, LearningSession, Placed
from service.store.redis_retry import RedisRetry


class Queue(Protocol):
    """What the worker uses of the article queue (``service.ingest.queue.ArticleQueue``)."""

    def ensure_group(self) -> None: ...
    def read(self, consumer: str, n: int, block_ms: int | None = None) -> list[Any]: ...
    def ack(self, entry_ids: list[str]) -> int: ...


class Intake:
    """Reads for the session; acknowledges the held-out articles once stored."""

    def __init__(
        self, queue: Queue, consumer: str, session: LearningSession[EntryRef], retry: RedisRetry
    ) -> None:
        self.queue = queue
        self.consumer = consumer
        self.session = session
        self.redis = retry

    def ensure_group(self) -> None:
        self.redis("creating the consumer group", self.queue.ensure_group)

    def read(
        self, wanted: int, block_ms: int | None
    ) -> tuple[int, list[Placed[EntryRef]], Events[EntryRef]]:
        """Up to ``wanted`` entries (waiting ``block_ms`` for them, None: not at all), offered
        to the session: how many came, where each went, what the session reports."""
        entries = self.redis(
            "reading the stream",
            lambda: self.queue.read(self.consumer, wanted, block_ms=block_ms),
        )
        if not entries:
            return 0, [], Events()
        placed = self.session.offer(
            (EntryRef(entry, a.title, a.id, a.source), a.text) for entry, a in entries
        )
        return len(entries), placed, self.session.take_events()

    def settle(self, placed: list[Placed[EntryRef]]) -> list[str]:
        """The held-out articles among ``placed``, stored already, need no checkpoint: they are
        acknowledged now; the empty ones' entries, to hold for the next checkpoint."""
        for where in placed:
            if where.kind == "heldout":
                ack = functools.partial(self.queue.ack, [where.item.entry])
                self.redis("acknowledging a held-out article", ack)
        return [where.item.entry for where in placed if where.kind == "empty"]
