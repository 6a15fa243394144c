"""The one way to reach Redis: :func:`connect`, and which errors are worth retrying.

Every part (queue, snapshot readers and writers, worker, scraper, API) gets its client here, so
they share one policy: bounded socket timeouts, raw bytes (``decode_responses=False``, which
:func:`service.store.published_model.read_model` needs), one immediate reconnect inside redis-py
and no retry storms there — waiting out an outage is
:class:`service.store.redis_retry.RedisRetry`'s job.
A malformed URL is a :class:`RedisURLError` whose message never shows the password.
"""

from __future__ import annotations

from typing import Protocol

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from service.redact import redact

# Seconds a command may take when neither the caller nor the settings say.
DEFAULT_TIMEOUT_S = 10.0
# Errors after which the same command can succeed once Redis is back.
REDIS_DOWN_ERRORS: tuple[type[Exception], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    OSError,
)
# Error replies meaning "not now" (loading the dataset, out of memory, failing disk).
TRANSIENT_REPLIES = ("LOADING", "OOM", "MISCONF", "BUSY", "TRYAGAIN")


class RedisTarget(Protocol):
    """Where Redis is and how long a command may take (the settings of these names)."""

    @property
    def redis_url(self) -> str | None: ...

    @property
    def queue_timeout(self) -> float: ...


class RedisURLError(ValueError):
    """The Redis URL cannot be used; the message is redacted."""


def connect(
    where: RedisTarget | str | None, url: str | None = None, *, timeout: float | None = None
) -> redis.Redis:
    """A client for ``url`` (else the URL ``where`` is, or ``where.redis_url``).

    ``timeout`` bounds connecting and every command; it defaults to the settings'
    ``queue_timeout``, or DEFAULT_TIMEOUT_S when ``where`` is a bare URL.
    """
    settings = None if where is None or isinstance(where, str) else where
    target = url or (settings.redis_url if settings is not None else where)
    if not isinstance(target, str) or not target:
        raise RedisURLError("no Redis URL: set --redis or STREAMLDA_REDIS_URL")
    if timeout is None:
        timeout = settings.queue_timeout if settings is not None else DEFAULT_TIMEOUT_S
    try:
        return redis.Redis.from_url(
            target,
            decode_responses=False,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 1),
        )
    except (ValueError, TypeError) as exc:
        # ``from None``: the chained traceback would repeat redis-py's own message.
        raise RedisURLError(f"bad Redis URL {redact(target)}: {redact(str(exc))}") from None


def check_url(url: str) -> None:
    """Raise :class:`RedisURLError` unless ``url`` is a usable Redis URL (nothing connects)."""
    connect(url).close()


# Replies that say the URL's credentials are wrong: waiting or restarting cannot fix them.
REFUSED_ERRORS: tuple[type[Exception], ...] = (
    redis.AuthenticationError,
    redis.exceptions.NoPermissionError,
)


def refused_message(exc: BaseException) -> str:
    """One line for credentials Redis refused, naming the setting to change (no password)."""
    return (
        f"Redis refused the connection's credentials ({redact(str(exc))}): set the right user "
        "and password in STREAMLDA_REDIS_URL (or --redis)"
    )


def unreachable_message(url: str, exc: BaseException) -> str:
    """One line for a Redis that cannot be reached at all, naming the setting to change."""
    return (
        f"cannot reach Redis at {redact(url)} ({redact(str(exc))}): start it, or point "
        "STREAMLDA_REDIS_URL (or --redis) at a running one"
    )


def is_transient(exc: BaseException) -> bool:
    """True for errors after which the same command can succeed later (Redis down or busy);
    a refused password is not one of them."""
    if isinstance(exc, redis.AuthenticationError):
        return False
    if isinstance(exc, REDIS_DOWN_ERRORS):
        return True
    return isinstance(exc, redis.ResponseError) and str(exc).startswith(TRANSIENT_REPLIES)
