"""Topics addressed by number: a live number's place in the snapshot, a gone one's 410 (what
became of it), a never-used one's 404; and the moves, newest first (``GET /topics/events``).

While K is fixed the snapshot carries no numbers (topic k is number k) and nothing is read
but it: a number outside 0..K-1 is the 404 it always was. While topics move, the snapshot
lists the live numbers and the worker's published record of them
(:mod:`service.store.topic_moves`) answers for the rest (docs/api.md, "Topic numbers").
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from fastapi import HTTPException, status

from lda.topic_ids import Gone, TopicIds, TopicMove
from service.api.http.compact_json import dumps
from service.api.http.errors import GoneTopic
from service.api.http.etags import Rendered
from service.api.http.prometheus import Metric
from service.api.reads.bodies import iso
from service.store.snapshot import Snapshot

KINDS = ("birth", "merge", "retire")  # every kind of move, as /topics/events and /metrics name it
# GET /topics/events: moves a page holds by default and at most.
EVENTS_LIMIT = 20
EVENTS_LIMIT_MAX = 200


def _when(gone: Gone) -> dict[str, Any]:
    return {"docs_seen": gone.docs, "at": iso(gone.time)}


def not_live(snapshot: Snapshot, numbers: TopicIds | None, number: int) -> HTTPException:
    """What a request for topic ``number``, which no listed topic has, is answered: a 410 that
    says what became of it, or the 404 of a number never used (of one outside 0..K-1, K fixed)."""
    k = snapshot.n_topics
    if snapshot.fixed:
        return HTTPException(
            status.HTTP_404_NOT_FOUND, f"no topic {number}: topic ids are 0 to {k - 1}"
        )
    found = None if numbers is None else numbers.status(number)
    if found is None or found.gone is None:
        return HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"no topic {number}: no topic was ever numbered so (GET /topics lists the live ones)",
        )
    gone = found.gone
    if found.state == "retired":
        detail = f"topic {number} was retired at {gone.docs} documents seen"
        fields = {"id": number, "merged_into": None, "merged_at": None, "retired_at": _when(gone)}
        return GoneTopic(detail, fields)
    end = found.into
    still = numbers is not None and end is not None and numbers.slot_of(end) is not None
    detail = f"topic {number} was merged into topic {end} at {gone.docs} documents seen" + (
        "" if still else f" (topic {end} is gone since)"
    )
    fields = {"id": number, "merged_into": end, "merged_at": _when(gone), "retired_at": None}
    return GoneTopic(detail, fields)


def place(snapshot: Snapshot, numbers: TopicIds | None, number: int) -> int:
    """Where live topic ``number`` is listed in ``snapshot``; else its 410 or 404 raised."""
    k = snapshot.position(number)
    if k is None:
        raise not_live(snapshot, numbers, number)
    return k


def _move(move: TopicMove) -> dict[str, Any]:
    return {
        "kind": move.kind,
        "docs_seen": move.docs,
        "at": iso(move.time),
        "topics": list(move.topics),
        "before": [list(words) for words in move.before],
        "after": [list(words) for words in move.after],
    }


def events_body(numbers: TopicIds | None, limit: int, offset: int) -> bytes:
    """``TopicEventsOut``: the moves kept, newest first, from the ``offset``-th, at most
    ``limit`` (none while K is fixed)."""
    kept = [] if numbers is None else numbers.moves
    newest = kept[::-1][offset : offset + limit]
    totals = {} if numbers is None else numbers.totals
    return dumps(
        {
            "total": 0 if numbers is None else numbers.moves_total,
            "kept": len(kept),
            "offset": offset,
            "limit": limit,
            "totals": {kind: int(totals.get(kind, 0)) for kind in KINDS},
            "live": None if numbers is None else len(numbers.live_ids()),
            "events": [_move(m) for m in newest],
        }
    )


Events = Callable[[int, int], Rendered]  # (limit, offset) -> the page's body


def events(numbers: TopicIds | None, cache_size: int) -> Events:
    """Each page of the moves, rendered on its first request."""

    @lru_cache(maxsize=cache_size)
    def page(limit: int, offset: int) -> Rendered:
        return Rendered.of(events_body(numbers, limit, offset))

    return page


def move_metrics(numbers: TopicIds | None) -> list[Metric]:
    """``/metrics``' families of the moves: live topics, and moves made by kind (totals that
    outlive the bounded list of moves). None while K is fixed: nothing moves."""
    if numbers is None:
        return []
    moves = Metric(
        "streamlda_topic_moves_total", "Topic moves kept since the model began", "counter"
    )
    for kind in KINDS:
        moves.add(numbers.totals.get(kind, 0), kind=kind)
    live = Metric("streamlda_topics_live", "Live topics (the others' slots are free)")
    return [live.add(len(numbers.live_ids())), moves]
