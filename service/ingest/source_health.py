"""Whether a source answers, told to the operator early and once.

Every failed attempt is logged by the source as it happens (host and cause); this tracker says
when a run of failures has lasted ``source_down_after_s`` without an answer: one ERROR, and a
status (:class:`service.store.source_status.SourceStatus`) handed to ``on_change`` for the API.
The first answer after that logs "reachable again" and withdraws the status.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

from service.store.source_status import SourceStatus

log = logging.getLogger(__name__)

# urllib3 prefixes its errors with the connection: "<...HTTPConnection object at 0x...>: " or
# "HTTPConnection(host='...', port=...): " (the host is said beside the cause already).
_OBJECT_REPR = re.compile(r"<[^<>]* at 0x[0-9a-f]+>: |\b\w+\(host='[^']*', port=\d+\): ")


def describe_error(exc: BaseException) -> str:
    """The innermost cause of a requests/urllib3 error, in its own words (no object reprs):
    ``Failed to establish a new connection: [Errno 111] Connection refused``."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "reason", None)
        if not isinstance(inner, BaseException):
            inner = next((a for a in exc.args if isinstance(a, BaseException)), None)
        if inner is None:
            break
        exc = inner
    text = _OBJECT_REPR.sub("", str(exc)).strip()
    return text or type(exc).__name__


class SourceHealth:
    """Tracks one source's run of failures; reports it once it lasts ``down_after_s``."""

    def __init__(
        self,
        source: str,
        host: str,
        down_after_s: float,
        hint: str = "",
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``hint``: what the operator can do, appended to the ERROR."""
        self.source = source
        self.hint = hint
        self.host = host
        self.down_after_s = down_after_s
        self._clock = clock
        self.failing_since: float | None = None  # unix time of the run's first failure
        self.cause = ""
        self.reported: SourceStatus | None = None
        # Told of each report and withdrawal (the scraper writes it to Redis).
        self.on_change: Callable[[SourceStatus | None], None] = lambda _status: None

    def adopt(self, status: SourceStatus) -> None:
        """Continue an outage an earlier scraper reported (its start and its report)."""
        self.failing_since, self.cause, self.reported = status.since, status.cause, status

    def failed(self, cause: str) -> None:
        """One attempt failed because of ``cause``."""
        if self.failing_since is None:
            self.failing_since = self._clock()
        self.cause = cause
        self.check()

    def succeeded(self) -> None:
        """The source answered: the run of failures (and its report) is over."""
        if self.reported is not None:
            assert self.failing_since is not None
            log.info(
                "source %s at %s reachable again after %.0f s",
                self.source,
                self.host,
                self._clock() - self.failing_since,
            )
            self.reported = None
            self.on_change(None)
        self.failing_since = None

    def due_in(self) -> float | None:
        """Seconds until the run of failures is to be reported (None: nothing to report)."""
        if self.failing_since is None or self.reported is not None:
            return None
        return max(0.0, self.failing_since + self.down_after_s - self._clock())

    def check(self) -> None:
        """Report the run of failures once it has lasted ``down_after_s`` (a changed cause is
        reported again)."""
        if self.failing_since is None:
            return
        if self.reported is None and self._clock() - self.failing_since < self.down_after_s:
            return
        status = SourceStatus(self.source, self.host, self.failing_since, self.cause)
        if status == self.reported:
            return
        if self.reported is None:
            log.error(
                "%s; %.0f s without an answer%s",
                status.message,
                self._clock() - self.failing_since,
                f" ({self.hint})" if self.hint else "",
            )
        self.reported = status
        self.on_change(status)
