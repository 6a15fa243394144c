"""The article queue: a Redis stream read through a consumer group, bounded and de-duplicated.

Scrapers add articles with one atomic Lua script per batch: an article is queued only if its id
was never queued and fewer than the high-water mark are unread (stream length minus the group's
pending count); at the mark :meth:`ArticleQueue.add` waits instead of dropping. The script also
counts what it queued and moves a file source's position. Workers read through the group,
reclaim a crashed consumer's entries, and acknowledge (and delete) entries a checkpoint holds.
Keys: :mod:`service.keys`; the protocol: docs/service.md, "The stream's keys and its script".
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from service import keys
from service.ingest.sources import Article, Position
from service.store.pipeline_figures import read_queue, read_scraper_counters
from service.store.redis_values import text

log = logging.getLogger(__name__)

# KEYS: stream, seen-set, this batch's record, the source's position, the scrapers' counters.
# ARGV: high-water mark, fetched_at, group, record TTL (s; 0: no record), position in the batch
# of the first article, whether to keep the source's position ("1") and its identity, then
# id/title/text/source and offset/count/member_at/member_offset (offset -1: none) per article.
# Returns a status per article handled (QUEUED, QUEUED_BEFORE, REREAD, DUPLICATE, or FULL where
# it stops); what it counts and how it moves the position: docs/service.md.
_ADD_SCRIPT = """
local high_water = tonumber(ARGV[1])
local pending = 0
local summary = redis.pcall('XPENDING', KEYS[1], ARGV[3])
if type(summary) == 'table' and summary.err == nil then
  pending = tonumber(summary[1])
end
local unread = redis.call('XLEN', KEYS[1]) - pending
local ttl = tonumber(ARGV[4])
local position = tonumber(ARGV[5])
local track = ARGV[6] == '1'
local reached = -1
if track then
  reached = tonumber(redis.call('HGET', KEYS[4], 'offset') or '-1')
end
local furthest = nil
local statuses = {}
local recorded = false
local counted = {queued = 0, duplicates = 0, rereads = 0}
local handled = -1
if ttl > 0 then
  handled = tonumber(redis.call('HGET', KEYS[3], '') or '-1')
end
local last = handled
local function finish()
  if last > handled then
    redis.call('HSET', KEYS[3], '', tostring(last))
    recorded = true
  end
  for _, name in ipairs({'queued', 'duplicates', 'rereads'}) do
    if counted[name] > 0 then
      redis.call('HINCRBY', KEYS[5], name, counted[name])
    end
  end
  if recorded then
    redis.call('EXPIRE', KEYS[3], ARGV[4])
  end
  if furthest then
    redis.call('HSET', KEYS[4], 'offset', ARGV[furthest + 4], 'count', ARGV[furthest + 5],
               'member_at', ARGV[furthest + 6], 'member_offset', ARGV[furthest + 7],
               'source', ARGV[7], 'updated_at', ARGV[2])
  end
  return statuses
end
for base = 8, #ARGV, 8 do
  local id = ARGV[base]
  local offset = tonumber(ARGV[base + 4])
  if redis.call('SISMEMBER', KEYS[2], id) == 1 then
    if ttl > 0 and redis.call('HGET', KEYS[3], id) == tostring(position) then
      statuses[#statuses + 1] = 2
    elseif track and offset >= 0 and offset <= reached then
      statuses[#statuses + 1] = 3
      if position > handled then
        counted.rereads = counted.rereads + 1
      end
    else
      statuses[#statuses + 1] = 0
      if position > handled then
        counted.duplicates = counted.duplicates + 1
      end
    end
  elseif unread >= high_water then
    statuses[#statuses + 1] = -1
    return finish()
  else
    redis.call('XADD', KEYS[1], '*', 'id', id, 'title', ARGV[base + 1], 'text', ARGV[base + 2],
               'source', ARGV[base + 3], 'fetched_at', ARGV[2])
    redis.call('SADD', KEYS[2], id)
    if ttl > 0 then
      redis.call('HSET', KEYS[3], id, tostring(position))
      recorded = true
    end
    unread = unread + 1
    statuses[#statuses + 1] = 1
    counted.queued = counted.queued + 1
  end
  if track and offset > reached then
    reached = offset
    furthest = base
  end
  if ttl > 0 and position > last then
    last = position
  end
  position = position + 1
end
return finish()
"""

QUEUED, DUPLICATE, FULL = 1, 0, -1
QUEUED_BEFORE = 2  # queued by an earlier attempt of the same batch whose reply was lost
REREAD = 3  # read again from a file its scrapers had already handled up to there
# The counters the add script keeps itself: a scraper's publication leaves them out.
ADD_COUNTERS = frozenset({"queued", "duplicates", "rereads"})

# How long a batch record outlives an add that never returned (its retry must come sooner).
BATCH_RECORD_TTL_S = 24 * 3600


def entry_time(entry_id: str) -> float:
    """The unix time Redis added a stream entry: the milliseconds its id starts with."""
    return int(entry_id.split("-", 1)[0]) / 1000


def new_batch_token() -> str:
    """A token naming one batch across the attempts to add it (random: unique among scrapers)."""
    return uuid.uuid4().hex


@dataclass
class AddResult:
    """What one :meth:`ArticleQueue.add` did."""

    queued: int = 0
    duplicates: int = 0
    rereads: int = 0  # seen ids read again from where the source's position says it was read
    backpressure_waits: int = 0  # times the stream was found full
    waited_s: float = 0.0  # seconds spent waiting on the full stream
    unqueued: list[Article] = field(default_factory=list)  # left when stopped while waiting


@dataclass(frozen=True)
class QueueConfig:
    """The stream's keys and bounds (the settings of the same names)."""

    stream: str
    group: str
    dedupe_key: str
    counters_key: str
    stream_high_water: int
    backpressure_poll: float
    claim_after_ms: int


class ArticleQueue:
    """Producer and consumer side of the article stream (see docs/service.md)."""

    def __init__(self, client: redis.Redis, config: QueueConfig) -> None:
        self.client = client
        self.config = config
        self.stream = config.stream
        self.group = config.group
        self._add_script = client.register_script(_ADD_SCRIPT)
        self._in_flight: dict[str, set[str]] = {}  # consumer -> entry ids delivered, not acked
        self._history: dict[str, str] = {}  # consumer -> cursor in its pending history
        self._recovered: set[str] = set()  # consumers whose earlier pending entries were read
        self._renewed_at: dict[str, float] = {}

    # --- setup -----------------------------------------------------------------------------
    def ensure_group(self) -> None:
        """Create the stream and its consumer group (from id 0) unless they exist."""
        try:
            self.client.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    # --- producer side ---------------------------------------------------------------------
    def try_add(
        self,
        articles: Sequence[Article],
        fetched_at: float | None = None,
        *,
        batch: str | None = None,
        position: int = 0,
        source: str | None = None,
    ) -> list[int]:
        """One atomic attempt: a status per article handled (QUEUED, QUEUED_BEFORE, REREAD,
        DUPLICATE, or FULL last). ``articles`` start at ``position`` in the batch whose token is
        ``batch``; with no token nothing is recorded, so a retry cannot tell its own entries from
        duplicates. With ``source`` (a file source's identity) the source's position moves to
        the furthest article handled, in the same script."""
        if not articles:
            return []
        args: list[str | float | int] = [
            self.config.stream_high_water,
            repr(time.time() if fetched_at is None else fetched_at),
            self.group,
            BATCH_RECORD_TTL_S if batch else 0,
            position,
            "1" if source else "0",
            source or "",
        ]
        for article in articles:
            after = article.after
            args += [article.id, article.title, article.text, article.source]
            if after is None:
                args += [-1, 0, 0, 0]
            else:
                args += [after.offset, after.count, after.member_at, after.member_offset]
        keys = [
            self.stream,
            self.config.dedupe_key,
            self._batch_key(batch or ""),
            self.position_key(source or ""),
            self.config.counters_key,
        ]
        statuses = self._add_script(keys=keys, args=args)
        return [int(status) for status in statuses]

    def add(
        self,
        articles: Sequence[Article],
        *,
        fetched_at: float | None = None,
        stop: threading.Event | None = None,
        batch: str | None = None,
        source: str | None = None,
    ) -> AddResult:
        """Queue new articles, skipping known ids; wait while the unread entries are at the
        high-water mark. With ``source`` (a file source's identity), record how far its
        articles were handled and count the seen ids before that as re-reads.

        Returns early only when ``stop`` is set while waiting; the articles not queued then are
        in ``unqueued``. Redis errors propagate: call again with the same ``batch`` token (see
        :func:`new_batch_token`) and the articles an attempt queued before its reply was lost
        count as queued, not as duplicates (without a token they count as duplicates). No
        article is ever queued twice.
        """
        result = AddResult()
        remaining = list(articles)
        while remaining:
            position = len(articles) - len(remaining)
            statuses = self.try_add(
                remaining, fetched_at, batch=batch, position=position, source=source
            )
            before = statuses.count(QUEUED_BEFORE)
            if before:
                log.info("%d articles were queued by an attempt whose reply was lost", before)
            result.queued += statuses.count(QUEUED) + before
            result.duplicates += statuses.count(DUPLICATE)
            result.rereads += statuses.count(REREAD)
            if not statuses or statuses[-1] != FULL:
                break
            remaining = remaining[len(statuses) - 1 :]
            result.backpressure_waits += 1
            started = time.monotonic()
            stopped = self._wait_below_high_water(stop)
            result.waited_s += time.monotonic() - started
            if stopped:
                result.unqueued = remaining
                break
        if batch:
            self._forget_batch(batch)
        return result

    def position_key(self, source: str) -> str:
        """The key of a file source's position (``source``: its identity)."""
        return keys.source_position_key(self.config.dedupe_key, source)

    def position(self, source: str) -> Position | None:
        """How far the scrapers of a file source (its identity) have queued; None: not yet."""
        raw = self.client.hgetall(self.position_key(source))
        values = {text(key): text(value) for key, value in raw.items()}
        try:
            return Position(
                offset=int(values["offset"]),
                count=int(values["count"]),
                member_at=int(values["member_at"]),
                member_offset=int(values["member_offset"]),
            )
        except (KeyError, ValueError):
            if values:
                log.warning("ignoring a malformed source position %s", sorted(values.items()))
            return None

    def _batch_key(self, token: str) -> str:
        return f"{self.config.dedupe_key}:batch:{token}"

    def _forget_batch(self, token: str) -> None:
        """Delete a batch's record once its add returned; on failure its TTL removes it."""
        try:
            self.client.delete(self._batch_key(token))
        except (redis.RedisError, OSError) as exc:
            log.debug("batch record %s left to expire (%s)", token, exc)

    def _wait_below_high_water(self, stop: threading.Event | None) -> bool:
        """Poll until fewer than the mark are unread; True if ``stop`` was set first."""
        poll = self.config.backpressure_poll
        while self.unread() >= self.config.stream_high_water:
            if stop is not None:
                if stop.wait(poll):
                    return True
            else:
                time.sleep(poll)
        return False

    # --- consumer side ---------------------------------------------------------------------
    def read(self, consumer: str, n: int, block_ms: int | None = None) -> list[tuple[str, Article]]:
        """Up to ``n`` entries for ``consumer``: its own earlier unacknowledged ones first (after
        a restart), then entries idle longer than ``claim_after_ms`` in other consumers, then new
        ones (waiting up to ``block_ms`` for them). Acknowledge each with :meth:`ack`."""
        if n <= 0:
            return []
        try:
            return self._read(consumer, n, block_ms)
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            self.ensure_group()  # e.g. Redis restarted without persistence
            return self._read(consumer, n, block_ms)

    def _read(self, consumer: str, n: int, block_ms: int | None) -> list[tuple[str, Article]]:
        in_flight = self._in_flight.setdefault(consumer, set())
        self._renew(consumer, in_flight)
        raw: list[tuple[Any, Any]] = []
        if consumer not in self._recovered:
            raw += self._own_history(consumer, n)
        if len(raw) < n:
            raw += self._reclaim(consumer, n - len(raw), in_flight)
        if len(raw) < n:
            block = None if raw else self._block(block_ms)
            reply: Any = self.client.xreadgroup(
                self.group, consumer, {self.stream: ">"}, count=n - len(raw), block=block
            )
            for _, entries in reply or []:
                raw += entries
        delivered = []
        for entry_id, fields in raw:
            entry = text(entry_id)
            article = self._article(entry, fields)
            if article is None:
                self.ack([entry])
                continue
            in_flight.add(entry)
            delivered.append((entry, article))
        return delivered

    def _own_history(self, consumer: str, n: int) -> list[tuple[Any, Any]]:
        """This consumer's entries still pending from an earlier process of the same name."""
        cursor = self._history.get(consumer, "0")
        reply: Any = self.client.xreadgroup(self.group, consumer, {self.stream: cursor}, count=n)
        entries = [entry for _stream, batch in reply or [] for entry in batch]
        if len(entries) < n:
            self._recovered.add(consumer)  # history read to its end: new entries from now on
        if entries:
            self._history[consumer] = text(entries[-1][0])
        in_flight = self._in_flight.get(consumer, set())
        return [(i, fields) for i, fields in entries if fields and text(i) not in in_flight]

    def _reclaim(self, consumer: str, n: int, in_flight: set[str]) -> list[tuple[Any, Any]]:
        """Entries idle longer than claim_after_ms (a crashed consumer's), now ours."""
        reply: Any = self.client.xautoclaim(
            self.stream, self.group, consumer, self.config.claim_after_ms, "0-0", count=n
        )
        entries = reply[1] if len(reply) > 1 else []
        claimed = []
        for entry_id, fields in entries:
            if entry_id is None or fields is None:
                self._drop_deleted_pending()
                continue
            if text(entry_id) in in_flight:
                continue  # ours and still being worked on: the claim just renewed it
            claimed.append((entry_id, fields))
        if claimed:
            log.info(
                "%s reclaimed %d entries idle over %d ms",
                consumer,
                len(claimed),
                self.config.claim_after_ms,
            )
        return claimed

    def _drop_deleted_pending(self) -> None:
        """Acknowledge pending ids whose entries were deleted (Redis < 7 keeps them pending)."""
        pending: Any = self.client.xpending_range(self.stream, self.group, "-", "+", count=1000)
        gone = [
            item["message_id"]
            for item in pending
            if not self.client.xrange(self.stream, item["message_id"], item["message_id"])
        ]
        if gone:
            self.client.xack(self.stream, self.group, *gone)

    def _renew(self, consumer: str, in_flight: set[str]) -> None:
        """Reset the idle time of entries this consumer still owns (its lease on them), so no
        other consumer reclaims them while they are being worked on; forget stolen ones."""
        now = time.monotonic()
        if not in_flight or now - self._renewed_at.get(consumer, 0.0) < (
            self.config.claim_after_ms / 3000
        ):
            return
        owned: Any = self.client.xpending_range(
            self.stream, self.group, "-", "+", count=len(in_flight), consumername=consumer
        )
        mine = {text(item["message_id"]) for item in owned} & in_flight
        if mine:
            ids: list[Any] = sorted(mine)
            self.client.xclaim(self.stream, self.group, consumer, 0, ids, justid=True)
        in_flight.intersection_update(mine)
        self._renewed_at[consumer] = now

    def _block(self, block_ms: int | None) -> int | None:
        """``block_ms`` capped below the client's socket timeout (a wait is not a failure)."""
        if block_ms is None:
            return None
        timeout = self.client.connection_pool.connection_kwargs.get("socket_timeout")
        if timeout:
            block_ms = min(block_ms, max(1, int(timeout * 1000) - 500))
        return max(1, block_ms)

    def _article(self, entry_id: str, fields: Mapping[Any, Any]) -> Article | None:
        values = {text(key): text(value) for key, value in fields.items()}
        try:
            return Article(
                id=values["id"],
                title=values["title"],
                text=values["text"],
                source=values["source"],
            )
        except KeyError:
            log.warning("dropping malformed stream entry %s (fields %s)", entry_id, sorted(values))
            self.client.hincrby(self.config.counters_key, "malformed_entries", 1)
            return None

    def ack(self, entry_ids: Iterable[str]) -> int:
        """Acknowledge and delete entries (their effect is durable); returns how many."""
        ids = [text(entry_id) for entry_id in entry_ids]
        if not ids:
            return 0
        pipe = self.client.pipeline(transaction=True)
        pipe.xack(self.stream, self.group, *ids)
        pipe.xdel(self.stream, *ids)
        acked, _ = pipe.execute()
        for in_flight in self._in_flight.values():
            in_flight.difference_update(ids)
        return int(acked)

    # --- stats -----------------------------------------------------------------------------
    # The stream's figures and the counters are read as the API reads them (one reader).
    def length(self) -> int:
        """Entries in the stream: queued and not yet acknowledged."""
        return read_queue(self.client, self.stream, self.group).length

    def pending(self) -> int:
        """Entries delivered to a consumer and not yet acknowledged."""
        return read_queue(self.client, self.stream, self.group).pending

    def unread(self) -> int:
        """Entries queued and not yet delivered to a consumer: what the high-water mark bounds."""
        return read_queue(self.client, self.stream, self.group).unread

    def seen(self) -> int:
        """Page ids ever queued."""
        return int(self.client.scard(self.config.dedupe_key))

    def publish_counters(self, deltas: Mapping[str, float]) -> None:
        """Add ``deltas`` to the shared scraper counters and stamp ``updated_at``."""
        pipe = self.client.pipeline(transaction=True)
        for name, value in deltas.items():
            if not value:
                continue
            if isinstance(value, int):
                pipe.hincrby(self.config.counters_key, name, value)
            else:
                pipe.hincrbyfloat(self.config.counters_key, name, value)
        pipe.hset(self.config.counters_key, "updated_at", repr(time.time()))
        pipe.execute()

    def counters(self) -> dict[str, int | float]:
        """The shared scraper counters (numbers)."""
        return read_scraper_counters(self.client, self.config.counters_key)
