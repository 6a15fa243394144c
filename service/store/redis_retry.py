"""Retrying Redis calls with exponential backoff for as long as Redis is unavailable.

The worker holds progress that is not yet durable (trained, unacknowledged entries) and the
scraper holds fetched articles, so neither may crash because Redis went away: they wait, retry,
and give up only when told to stop. Which errors are retried: :func:`redis_client.is_transient`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import redis

from service.store.redis_client import is_transient

log = logging.getLogger(__name__)

T = TypeVar("T")


class RedisGaveUp(Exception):
    """Redis stayed unavailable until the caller asked to stop."""


@dataclass(frozen=True)
class RetryConfig:
    """The backoff: the first wait and the longest, in seconds (settings of the same names)."""

    redis_retry_first: float
    redis_retry_max: float


class RedisRetry:
    """Call ``action()`` until it succeeds, backing off between attempts; counts the retries."""

    def __init__(
        self,
        config: RetryConfig,
        stop: threading.Event,
        *,
        on_retry: Callable[[], None] | None = None,
    ) -> None:
        self.first = config.redis_retry_first
        self.longest = config.redis_retry_max
        self.stop = stop
        self.retries = 0
        self._on_retry = on_retry  # called on each retry (the scraper counts them live)

    def __call__(self, what: str, action: Callable[[], T], *, deadline_s: float | None = None) -> T:
        """``action()``'s result; RedisGaveUp once ``stop`` is set (or ``deadline_s`` passed)
        while Redis is down."""
        delay = self.first
        waited = 0.0
        while True:
            try:
                return action()
            except (redis.RedisError, OSError) as exc:
                if not is_transient(exc):
                    raise
                self.retries += 1
                if self._on_retry is not None:
                    self._on_retry()
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
