"""The topic shaper's part of the worker: its state in the checkpoint, its decisions in the
snapshot (the shaper itself lives in the session, which ``train`` shares: lda.shaping). While K
is fixed the session's shaper keeps and decides nothing, and so this part shows nothing."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from service.learn.events import Event, LearnerBegun, Part

if TYPE_CHECKING:
    from lda.model import StreamingLDA
    from lda.shaping import Shaper

log = logging.getLogger(__name__)


class Shaping(Part):
    """Saves and restores the shaper's running shares, ages and decision counts; shows them
    by kind and outcome among the worker's counters."""

    key = "shaping"
    handles = (LearnerBegun,)

    def __init__(self, shaper: Shaper) -> None:
        self.shaper = shaper

    def handle(self, event: Any) -> Iterable[Event]:
        if not isinstance(event, LearnerBegun):
            return ()
        if (state := event.extra.get(self.key)) is not None:
            self.shaper.load_state_dict(state)
        elif event.model.docs_seen > 0 and self.shaper.state_dict() is not None:
            # a checkpoint written while K was fixed, resumed by a shaper that moves topics
            log.warning(
                "the checkpoint was learned with K fixed; its %d topics now split, merge and "
                "retire (--fixed-topics, or STREAMLDA_FIXED_TOPICS=true, keeps K fixed)",
                len(event.model.topic_ids.live_slots()),
            )
        return ()

    def state_dict(self) -> dict[str, Any] | None:
        return self.shaper.state_dict()

    def shown(self, model: StreamingLDA) -> dict[str, Any]:
        """The decisions as worker counters: ``topic_decisions_split_scored``, ``..._kept``, ..."""
        made = self.shaper.decisions
        return {"counters": {f"topic_decisions_{k.replace(' ', '_')}": v for k, v in made.items()}}
