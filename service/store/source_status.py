"""Whether each source answers, from the scrapers to the API: a hash (``keys.SOURCE_STATUS_KEY``)
of source -> JSON status, present only while that source is reported unreachable."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import redis

from service.keys import SOURCE_STATUS_KEY


@dataclass(frozen=True)
class SourceStatus:
    """A source that has failed for too long: where, since when (unix time) and why."""

    source: str
    host: str
    since: float
    cause: str

    @property
    def message(self) -> str:
        """The operator's line: ``source unreachable since <UTC time>: <cause> (<where>)``."""
        when = datetime.fromtimestamp(self.since, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"source unreachable since {when}: {self.cause} ({self.source} at {self.host})"


def publish_source_status(client: redis.Redis, source: str, status: SourceStatus | None) -> None:
    """Report ``source`` unreachable (``status``), or answering again (None: the entry goes)."""
    if status is None:
        client.hdel(SOURCE_STATUS_KEY, source)
    else:
        client.hset(SOURCE_STATUS_KEY, source, json.dumps(asdict(status)))


def read_source_status(client: redis.Redis) -> list[SourceStatus]:
    """Every source reported unreachable, by name (an unreadable entry is left out)."""
    raw: Mapping[bytes | str, bytes | str] = client.hgetall(SOURCE_STATUS_KEY)
    found = []
    for _, value in sorted(raw.items()):
        try:
            data = json.loads(value)
            found.append(
                SourceStatus(
                    str(data["source"]),
                    str(data["host"]),
                    float(data["since"]),
                    str(data["cause"]),
                )
            )
        except (ValueError, KeyError, TypeError):
            continue
    return found
