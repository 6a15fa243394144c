"""The stream into the session: one read, and what becomes of each article placed.

An article goes one way: its text and a reference (:class:`~service.learn.topic_record.EntryRef`:
entry, title, page id, source) go to the session, which hands back where it placed it. A
held-out article is stored and acknowledged at once; an empty one (no vocabulary word) waits to
be acknowledged with the next checkpoint; one placed for training goes to the reservoir, and
waits in the session as word ids and its reference until the step that learns it.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any, Protocol

from service.learn.checkpointer import Checkpointer
from service.learn.recent_rates import RecentRates
from service.learn.revisits import Revisits
from service.learn.scoring import Scoring
from service.learn.session import Events, LearningSession, Placed
from service.learn.topic_record import EntryRef
from service.store.redis_retry import RedisRetry

Read = tuple[list[Placed[EntryRef]], Events[EntryRef]]


class Queue(Protocol):
    """What the worker uses of the article queue (``service.ingest.queue.ArticleQueue``)."""

    def ensure_group(self) -> None: ...
    def read(self, consumer: str, n: int, block_ms: int | None = None) -> list[Any]: ...
    def ack(self, entry_ids: list[str]) -> int: ...


class Intake:
    """Reads for the session and places what it hands back."""

    def __init__(
        self,
        queue: Queue,
        consumer: str,
        session: LearningSession[EntryRef],
        parts: tuple[Revisits, Scoring, RecentRates, Checkpointer, Counter[str]],
        retry: RedisRetry,
    ) -> None:
        """``parts``: where placed articles go (reservoir, held-out store, the entries held for
        the next checkpoint), and the figures a read moves."""
        self.queue = queue
        self.consumer = consumer
        self.session = session
        self.revisits, self.scoring, self.recent, self.checkpointer, self.counters = parts
        self.redis = retry

    def ensure_group(self) -> None:
        self.redis("creating the consumer group", self.queue.ensure_group)

    def read(self) -> Read | None:
        """Up to what the session wants (not waiting while there is something to revisit),
        offered to it: where each article went and what the session reports (None: nothing
        came)."""
        wanted = self.session.wanted
        block_ms = self.revisits.block_ms(self.session.model)
        entries = self.redis(
            "reading the stream",
            lambda: self.queue.read(self.consumer, wanted, block_ms=block_ms),
        )
        self.revisits.read(wanted, len(entries))
        if not entries:
            return None
        self.recent.read()
        placed = self.session.offer(
            (EntryRef(entry, a.title, a.id, a.source), a.text) for entry, a in entries
        )
        return placed, self.session.take_events()

    def place(self, placed: list[Placed[EntryRef]], events: Events[EntryRef]) -> None:
        """Each article to where it belongs (see the module's docstring), then the session's
        news."""
        for where in placed:
            ref = where.item
            if where.kind == "empty":  # nothing to learn: acknowledged with the rest
                self.counters["empty_docs"] += 1
                self.checkpointer.hold([ref.entry])
            elif where.kind == "heldout":
                self.scoring.hold_out(ref.entry, ref.id, where.text)
                ack = functools.partial(self.queue.ack, [ref.entry])
                self.redis("acknowledging a held-out article", ack)
            else:
                self.revisits.offer(ref, where.text)  # held-out articles never enter it
        self.news(events)

    def news(self, events: Events[EntryRef]) -> None:
        """What the session reported: the held-out set complete (a learner begun with it got
        it with its scoring), entries new words left with no word (counted empty)."""
        if events.heldout and not events.began:
            self.scoring.heldout(self.session.heldout_docs)
        emptied = [ref.entry for ref in events.emptied]
        self.counters["empty_docs"] += len(emptied)
        self.checkpointer.hold(emptied)
