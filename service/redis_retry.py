"""Retrying Redis calls with exponential backoff for as long as Redis is unavailable.

The worker holds progress that is not yet durable (trained, unacknowledged entries), so it must
never crash because Redis went away: it waits, retries, and gives up only when told to stop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

import redis

from service.queue import REDIS_DOWN_ERRORS
from service.settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")

# Error replies meaning "not now" (loading the dataset, out of memory, failing disk): retry.
TRANSIENT_REPLIES = ("LOADING", "OOM", "MISCONF", "BUSY", "TRYAGAIN")


class RedisGaveUp(Exception):
    """Redis stayed unavailable until the caller asked to stop."""


def is_transient(exc: Exception) -> bool:
    """True for errors after which the same command can succeed later."""
    if isinstance(exc, REDIS_DOWN_ERRORS):
        return True
    return isinstance(exc, redis.ResponseError) and str(exc).startswith(TRANSIENT_REPLIES)


class RedisRetry:
    """Call ``action()`` until it succeeds, backing off between attempts; counts the retries."""

    def __init__(self, settings: Settings, stop: threading.Event) -> None:
        self.first = settings.redis_retry_first
        self.longest = settings.redis_retry_max
        self.stop = stop
        self.retries = 0

    def __call__(self, what: str, action: Callable[[], T], *, deadline_s: float | None = None) -> T:
        """``action()``'s result; RedisGaveUp once ``stop`` is set (or ``deadline_s`` passed)
        while Redis is down."""
        delay = self.first
        waited = 0.0
        while True:
            try:
                return action()
            except (redis.RedisError, OSError) as exc:
                if not is_transient(exc) and not isinstance(exc, OSError):
                    raise
                self.retries += 1
                log.warning("Redis unavailable while %s (%s); retrying in %.1f s", what, exc, delay)
            if deadline_s is not None:
                if waited >= deadline_s:
                    raise RedisGaveUp(f"Redis unavailable while {what}")
                delay = min(delay, deadline_s - waited)
                waited += delay
                threading.Event().wait(delay)
            elif self.stop.wait(delay):
                raise RedisGaveUp(f"stopped while Redis was unavailable ({what})")
            delay = min(delay * 2, self.longest)
