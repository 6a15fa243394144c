"""The worker's small pieces: its configuration, its counters, and the loop's own figures."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lda.model import StreamingLDA
from service.learn.checkpointer import Checkpointer
from service.learn.coordinator import Coordinator
from service.learn.events import Event, Part, Resumed
from service.learn.recent_rates import RecentRates
from service.learn.session import LearningSession
from service.store.counters import WORKER_COUNTERS
from service.store.redis_retry import RedisRetry


@dataclass(frozen=True)
class WorkerConfig:
    """The loop's own values: its consumer name, how long a read blocks, when an empty stream
    counts as idle, the bounds on scoring, and a vocabulary file if one was given."""

    consumer: str
    read_block_ms: int
    checkpoint_idle_s: float
    eval_stop_wait_s: float
    eval_backlog: int
    threads: int | None
    heldout: int
    vocab: Path | None
    revisit_ratio: float  # revisited documents learned at most per fresh one (0: none)
    search: bool  # keep the reservoir's articles' shares for search
    search_refresh_share: float  # of a core, at most, refolding them


class Counters(Counter[str], Part):
    """The worker's counters in every snapshot (zero until they happen), kept across restarts
    (loaded once a process)."""

    key = "counters"
    handles = (Resumed,)

    def __init__(self) -> None:
        super().__init__(dict.fromkeys(WORKER_COUNTERS, 0))

    def handle(self, event: Any) -> Iterable[Event]:
        if isinstance(event, Resumed):
            self.load_state_dict(event.extra.get(self.key))
        return ()

    def state_dict(self) -> dict[str, int]:
        return dict(self)

    def load_state_dict(self, state: dict[str, int] | None) -> None:
        self.update(state or {})

    def shown(self, model: StreamingLDA) -> dict[str, Any]:
        return {"counters": dict(self)}


@dataclass
class LoopFigures(Part):
    """The loop's figures in every snapshot: rates (0 while idle), Redis retries, the held-out
    set's size, entries waiting for a checkpoint and when the last was written."""

    session: LearningSession[Any]
    coordinator: Coordinator
    recent: RecentRates
    checkpointer: Checkpointer
    redis: RedisRetry

    def shown(self, model: StreamingLDA) -> dict[str, Any]:
        idle = self.recent.idle_since is not None
        rates = (0.0, 0.0) if idle else self.coordinator.rates(*self.session.rates())
        return {
            "docs_per_s": rates[0],
            "tokens_per_s": rates[1],
            "rank_docs_per_s": [0.0 if idle else r for r in self.coordinator.rank_rates()],
            "checkpoint_at": self.checkpointer.at,
            "counters": {
                "redis_retries": self.redis.retries,
                "heldout_docs": len(self.session.heldout_docs),
                "unacked": len(self.checkpointer.unacked),
            },
            **self.recent.shown(),
        }
