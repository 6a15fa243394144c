"""What one live run measured over its steady part: each article's wait from queued to the
first snapshot counting it, the fresh and revisited docs/s, the worker's CPU share, and the
worker's own wait figures (benchmarks/live.py's docstring says which part is steady)."""

from __future__ import annotations

import bisect
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.live_up import Live, Poll


@dataclass
class Waits:
    """The fresh articles' waits (s) over the steady part of a run, and where it begins."""

    seconds: list[float]
    since: float  # time.time(): the first snapshot at which the worker had caught up
    caught_up: bool  # False: it never did; the waits are then from its first step on


def arrival_times(polls: Sequence[Poll], started: float) -> list[float]:
    """When each article was queued (index j: the (j+1)-th), from the scraper's counters: a
    batch at the time the scraper published it; batches a poll missed spread evenly between
    the publications it saw."""
    seen = sorted({(p.scraper_at, p.queued, p.batches) for p in polls if p.scraper_at})
    times: list[float] = []
    before_at, before_queued, before_batches = started, 0, 0
    for at, queued, batches in seen:
        added, n_batches = queued - before_queued, batches - before_batches
        if added <= 0 or n_batches <= 0:
            continue
        per_batch = added / n_batches
        for j in range(added):
            batch = math.ceil((j + 1) / per_batch)  # 1 ... n_batches
            times.append(before_at + (at - before_at) * batch / n_batches)
        before_at, before_queued, before_batches = at, queued, batches
    return times


def snapshots(polls: Sequence[Poll]) -> list[Poll]:
    """The distinct worker snapshots the polls saw, in order."""
    out: dict[float, Poll] = {}
    for p in polls:
        if p.snapshot_at is not None and p.docs_seen > 0:
            out.setdefault(p.snapshot_at, p)
    return [out[at] for at in sorted(out)]


def waits(polls: Sequence[Poll], started: float, expected: int) -> Waits:
    """Each article's time from queued to the first snapshot counting it placed, for the
    articles queued once the worker first caught up with the stream (a snapshot counting every
    article queued by its time): before, it builds its vocabulary and catches up a backlog."""
    arrived = arrival_times(polls, started)
    shots = snapshots(polls)
    if not shots or len(arrived) < expected:
        return Waits([], math.nan, False)
    caught = next(
        (s for s in shots if s.placed >= bisect.bisect_right(arrived, s.snapshot_at or 0.0)),
        None,
    )
    since = (caught or shots[0]).snapshot_at or 0.0
    placed = [s.placed for s in shots]
    seconds = []
    for j, at in enumerate(arrived[:expected]):
        if at < since:
            continue
        shot = shots[min(bisect.bisect_left(placed, j + 1), len(shots) - 1)]
        seconds.append(max((shot.snapshot_at or at) - at, 0.0))
    return Waits(seconds, since, caught is not None)


@dataclass
class Row:
    """One line of the table: a system at one pace."""

    rate: float
    system: str
    perplexity: float
    npmi: float | None
    over_off: float | None = None  # perplexity / revisit off's at this pace
    fresh_per_s: float | None = None
    revisit_per_s: float | None = None
    passes: float | None = None
    wait_median_s: float | None = None
    wait_p95_s: float | None = None
    step_bound_s: float | None = None
    cpu_share: float | None = None
    wall_s: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)


def live_row(live: Live, expected: int, batch_size: int) -> Row:
    """The run's figures over its steady part (see the module docstring); perplexity later."""
    shots = snapshots(live.polls)
    measured = waits(live.polls, live.started, expected)
    first = next((s for s in shots if (s.snapshot_at or 0.0) >= measured.since), shots[0])
    last = shots[-1]
    span = max((last.snapshot_at or 0.0) - (first.snapshot_at or 0.0), 1e-9)
    cpu = [p for p in live.polls if p.cpu_s is not None and p.at >= measured.since]
    cpu_share = None
    if len(cpu) >= 2 and live.worker_starts == 1:
        assert cpu[-1].cpu_s is not None and cpu[0].cpu_s is not None
        cpu_share = (cpu[-1].cpu_s - cpu[0].cpu_s) / max(cpu[-1].at - cpu[0].at, 1e-9)
    speed = next((p.docs_per_s for p in reversed(live.polls) if p.docs_per_s > 0), 0.0)
    seconds = sorted(measured.seconds)
    # The worker's own measure, entry id to the step's end: the median of its last-minute
    # figures over the steady part (snapshot times resolve seconds, not a step's time).
    steady = [p for p in live.polls if p.at >= measured.since and p.wait_s is not None]
    return Row(
        rate=live.rate,
        system=live.name,
        perplexity=math.nan,
        npmi=None,
        fresh_per_s=(last.docs_seen - first.docs_seen) / span,
        revisit_per_s=(last.revisited - first.revisited) / span,
        passes=last.passes,
        wait_median_s=statistics.median(p.wait_s for p in steady) if steady else None,  # type: ignore[type-var]
        wait_p95_s=statistics.median(p.wait_p95_s for p in steady) if steady else None,  # type: ignore[type-var]
        step_bound_s=batch_size / speed if speed > 0 else None,
        cpu_share=cpu_share,
        wall_s=live.ended - live.started,
        detail={
            "snapshot_wait_median_s": statistics.median(seconds) if seconds else None,
            "snapshot_wait_p95_s": _quantile(seconds, 0.95) if seconds else None,
            "waits_measured": len(seconds),
            "caught_up": measured.caught_up,
            "steady_from_s": measured.since - live.started,
            "steady_s": span,
            "learner_docs_per_s": speed,
            "snapshot_gap_median_s": _gap(shots),
            "worker_starts": live.worker_starts,
            "counters": live.counters,
            "snapshots": [_series(s, live.started) for s in shots],
        },
    )


def _series(shot: Poll, started: float) -> list[float]:
    """A snapshot in the JSON: seconds since up started, docs_seen, revisited, placed, queued."""
    at = round((shot.snapshot_at or started) - started, 3)
    return [at, shot.docs_seen, shot.revisited, shot.placed, shot.queued]


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values (linear between order statistics)."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _gap(shots: Sequence[Poll]) -> float | None:
    times = [s.snapshot_at for s in shots if s.snapshot_at is not None]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    return statistics.median(gaps) if gaps else None
