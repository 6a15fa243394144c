"""Settings and small helpers shared by the ingestion tests (time-scaled: tests stay fast)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import redis

from service.settings import Settings

# Every wait a test can meet is bounded by this.
TEST_DEADLINE_S = 60.0


def fast_settings(**overrides: Any) -> Settings:
    """Settings scaled down in time: fast rate limit, short timeouts and backoffs."""
    values: dict[str, Any] = {
        "rate": 100.0,
        "request_timeout": 0.5,
        "retry_backoff": 0.02,
        "retry_backoff_max": 0.2,
        "max_retries": 6,
        "redis_retry_first": 0.05,
        "redis_retry_max": 0.3,
        "backpressure_poll": 0.05,
        "queue_timeout": 2.0,
        "claim_after_ms": 300,
        "contact": "tests@example.org",
    }
    values.update(overrides)
    return Settings.model_validate(values)


def stream_ids(client: redis.Redis, stream: str) -> list[str]:
    """The page ids of every entry in the stream, in order."""
    entries: Any = client.xrange(stream)
    return [fields[b"id"].decode() for _entry, fields in entries]


def wait_until(
    condition: Callable[[], bool], timeout: float = TEST_DEADLINE_S, poll: float = 0.02
) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` passes; return whether it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll)
    return condition()


class Background(threading.Thread):
    """Run a function in a thread, keeping its result or exception for the test to check."""

    def __init__(self, target: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self._target_fn = target
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self._target_fn()
        except BaseException as exc:  # reported by finish()
            self.error = exc

    def finish(self, timeout: float = TEST_DEADLINE_S) -> Any:
        """Join within ``timeout``; re-raise the thread's exception; return its result."""
        self.join(timeout)
        assert not self.is_alive(), f"background task still running after {timeout} s"
        if self.error is not None:
            raise self.error
        return self.result
