"""Credentials out of anything printed: the one redaction of URLs used by every command.

A Redis URL may carry a password (``redis://user:secret@host/0``, ``?password=secret``); every
log line, error message and traceback that may hold one goes through :func:`redact` first.
"""

from __future__ import annotations

import logging
import re

# scheme://user:password@ (the password runs to the netloc's last "@", as urlsplit reads it).
_USERINFO = re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://[^:@/\s]*):(?P<password>[^/\s]*)@", re.I)
# ?password=... or &password=... in a query string.
_QUERY = re.compile(r"(?P<head>[?&]password=)[^&#\s'\"]*", re.I)
HIDDEN = "***"


def redact(text: str | None) -> str:
    """``text`` (a URL, or any message or traceback) with every URL password replaced by ***."""
    if text is None:
        return "(unset)"
    text = _USERINFO.sub(lambda m: f"{m['head']}:{HIDDEN}@", text)
    return _QUERY.sub(lambda m: f"{m['head']}{HIDDEN}", text)


class RedactingFormatter(logging.Formatter):
    """A log formatter whose lines (tracebacks included) never show a URL password."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def configure_logging(level: str | int = logging.INFO) -> None:
    """Log to stderr through :class:`RedactingFormatter`; ``service.*`` loggers at ``level``."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    logging.getLogger("service").setLevel(level)
