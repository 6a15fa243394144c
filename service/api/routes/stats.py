"""``GET /stats``: progress of the worker, the queue and the scrapers in one object."""

from __future__ import annotations

import time

from fastapi import APIRouter

from service.api.deps import RedisDep, SettingsDep
from service.api.schemas import QueueOut, StatsOut, timestamp
from service.snapshot import (
    read_control,
    read_heartbeat,
    read_queue,
    read_scraper_counters,
    read_snapshot,
)

router = APIRouter(tags=["stats"])


@router.get("/stats", response_model=StatsOut)
def stats(client: RedisDep, settings: SettingsDep) -> StatsOut:
    """Answers before the first update too (worker fields are then null)."""
    snapshot = read_snapshot(client)
    heartbeat = read_heartbeat(client)
    control = read_control(client)
    queue = read_queue(client, settings.stream, settings.group)
    return StatsOut(
        docs_seen=0 if snapshot is None else snapshot.docs_seen,
        docs_per_s=None if snapshot is None else snapshot.docs_per_s,
        tokens_per_s=None if snapshot is None else snapshot.tokens_per_s,
        sampler=None if snapshot is None else snapshot.sampler,
        step_size=None if snapshot is None else snapshot.step_size,
        device=None if snapshot is None else snapshot.device,
        topics=None if snapshot is None else snapshot.num_topics,
        vocab_size=None if snapshot is None else snapshot.vocab_size,
        updated_at=None if snapshot is None else timestamp(snapshot.updated_at),
        heartbeat_at=timestamp(heartbeat),
        heartbeat_age_s=None if heartbeat is None else max(0.0, time.time() - heartbeat),
        paused=control.paused,
        checkpoint_seq=control.checkpoint_seq,
        worker={} if snapshot is None else snapshot.counters,
        queue=QueueOut(
            stream=settings.stream, group=settings.group, length=queue.length, pending=queue.pending
        ),
        scraper=read_scraper_counters(client, settings.counters_key),
    )
