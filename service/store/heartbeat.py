"""The worker's heartbeat: the unix time it was last alive, which the API reads to tell a
silent worker from a quiet one."""

from __future__ import annotations

import time

import redis

from service.keys import HEARTBEAT_KEY
from service.store.redis_values import text


def beat(client: redis.Redis, at: float | None = None) -> None:
    """Mark the worker alive (call while it waits for documents, too)."""
    client.set(HEARTBEAT_KEY, repr(time.time() if at is None else at))


def read_heartbeat(client: redis.Redis) -> float | None:
    """Unix time of the worker's last heartbeat, or None if it never beat."""
    raw = client.get(HEARTBEAT_KEY)
    return None if raw is None else float(text(raw))
