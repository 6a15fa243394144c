"""The topic shaper's part of the worker: its state in the checkpoint, its decisions in the
snapshot (the shaper itself lives in the session, which ``train`` shares: lda.shaping)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from service.learn.events import Event, LearnerBegun, Part

if TYPE_CHECKING:
    from lda.model import StreamingLDA
    from lda.shaping import TopicShaper


class Shaping(Part):
    """Saves and restores the shaper's running shares, ages and decision counts; shows them
    by kind and outcome among the worker's counters."""

    key = "shaping"
    handles = (LearnerBegun,)

    def __init__(self, shaper: TopicShaper) -> None:
        self.shaper = shaper

    def handle(self, event: Any) -> Iterable[Event]:
        if isinstance(event, LearnerBegun) and (state := event.extra.get(self.key)) is not None:
            self.shaper.load_state_dict(state)
        return ()

    def state_dict(self) -> dict[str, Any]:
        return self.shaper.state_dict()

    def shown(self, model: StreamingLDA) -> dict[str, Any]:
        """The decisions as worker counters: ``topic_decisions_split_scored``, ``..._kept``, ..."""
        made = self.shaper.decisions
        return {"counters": {f"topic_decisions_{k.replace(' ', '_')}": v for k, v in made.items()}}


def scored_rows(
    model: StreamingLDA, shaper: TopicShaper | None, pinned: Iterable[int]
) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """The topics an evaluation's drift matching keeps in place, and each slot's topic number
    (None: K is fixed). While topics move every slot keeps its topic (a move, not the matching,
    says when a topic changes: a free slot's prior draw must never take a live topic's number),
    only the live rows are scored, and a topic's drift is from its number's last row."""
    if shaper is None:
        return tuple(pinned), None
    return tuple(range(model.config.n_topics)), tuple(model.topic_ids.slots)
