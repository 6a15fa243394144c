"""Reading the ``extra`` of checkpoints older code wrote, and writing what older code reads.

Every part of the worker keeps its state under one key of a checkpoint's ``extra``
(``Worker``'s parts: ``state_dict`` / ``load_state_dict``). The keys' earlier forms are read
here, in one place, and nowhere else:

* ``reservoirs`` (every rank's reservoir state) was ``reservoir``, rank 0's alone; it is still
  written beside ``reservoirs`` for code that reads only that.
* ``evaluations`` is absent from checkpoints written before scoring left the learner's path:
  every point up to ``docs_seen`` was scored then, and no beta waited.
* ``counters``, ``topics`` and ``word_counts`` absent: the counters start at 0, the topics'
  record and the stream's word counts start over (their parts read None so).
"""

from __future__ import annotations

from typing import Any


def upgrade(extra: dict[str, Any], docs_seen: int) -> dict[str, Any]:
    """A checkpoint's ``extra`` (of a learner at ``docs_seen`` documents) in today's form."""
    today = dict(extra)
    if "reservoirs" not in today:
        rank0 = today.pop("reservoir", None)
        today["reservoirs"] = [] if rank0 is None else [rank0]
    if "evaluations" not in today:
        today["evaluations"] = {"scored_docs": docs_seen, "pending": []}
    today.setdefault("counters", {})
    return today


def for_older_readers(extra: dict[str, Any]) -> dict[str, Any]:
    """Today's ``extra`` with rank 0's reservoir state where older code reads it."""
    reservoirs = extra.get("reservoirs")
    if not reservoirs:
        return extra
    return {**extra, "reservoir": reservoirs[0]}
