"""The worker's small pieces: its configuration and its counters."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from service.store.counters import WORKER_COUNTERS


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


class Counters(Counter[str]):
    """The worker's counters in every snapshot (zero until they happen), kept across restarts
    (a checkpoint part)."""

    key = "counters"

    def __init__(self) -> None:
        super().__init__(dict.fromkeys(WORKER_COUNTERS, 0))

    def state_dict(self) -> dict[str, int]:
        return dict(self)

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.update(state)
