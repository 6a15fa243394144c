"""Where what a worker part holds per topic slot goes when topics are born, merged or retired
(:class:`~service.learn.events.TopicsReshaped`): one rule for every part, so that the record,
the search rows and the seeds agree on it. Slots are never renumbered; K stays the same."""

from __future__ import annotations

import numpy as np

from service.learn.events import TopicsReshaped

DROPPED = -1  # a slot whose holdings are dropped (a retired topic's, a newborn's)


def destinations(event: TopicsReshaped, n_topics: int) -> np.ndarray:
    """(K,) int64: per slot, the slot its holdings go to: itself (untouched), the slot a
    merged-away topic went into (a chain of merges followed to its end), the slot a split
    parent's number went to, or ``DROPPED`` for a freed slot not merged and a slot born into
    (a new topic starts from nothing)."""
    moved = {int(k): int(j) for k, j in event.moved.items()}
    slots = [*event.freed, *event.born, *event.merged, *event.merged.values(), *moved]
    slots += moved.values()
    bad = [s for s in slots if not 0 <= int(s) < n_topics]
    if bad:
        raise ValueError(f"topics reshaped in slots {bad}, outside the {n_topics} slots held")
    merged = {int(away): int(into) for away, into in event.merged.items()}
    emptied = {int(s) for s in (*event.freed, *event.born)}
    dest = np.arange(n_topics, dtype=np.int64)
    dest[sorted(emptied | merged.keys())] = DROPPED
    for away, into in merged.items():
        seen = {away}
        while into in merged and into not in seen:  # merged away itself, in this move
            seen.add(into)
            into = merged[into]
        if into not in seen and into not in emptied:
            dest[away] = into
    for parent, half in moved.items():  # never into a slot emptied by the same event
        dest[parent] = DROPPED if half in emptied else half
    return dest


def affected(dest: np.ndarray) -> bool:
    """Whether any slot's holdings move or are dropped."""
    return bool((dest != np.arange(dest.size)).any())
