"""Every Redis key streamlda uses, in one place: what it holds, who writes it, who reads it.

Fixed keys are constants here. The queue's keys are settings (several services can share one
Redis under other names); their defaults are the ``DEFAULT_*`` constants, which
:mod:`service.settings` uses.

| key | type | written by | read by | holds |
|---|---|---|---|---|
| ``streamlda:docs`` (setting ``stream``) | stream | scrapers | worker, API | one entry per article; see :mod:`service.ingest.queue` |
| ``workers`` (setting ``group``) | consumer group of the stream | worker | API (pending) | read but unacknowledged entries |
| ``streamlda:seen`` (setting ``dedupe_key``) | set | scrapers | scrapers | every page id ever queued |
| ``streamlda:seen:batch:<token>`` | hash | scrapers | scrapers | page id -> position of the ids one batch queued, so a retried add counts them as queued, and the empty field -> the furthest position handled, so it counts that part's duplicates once; deleted after the add, expires after a day; see :mod:`service.ingest.queue` |
| ``streamlda:seen:position:<digest>`` | hash | scrapers | scrapers | how far the scrapers of one file source (``digest``: of its kind, resolved path, size and modification time) have queued: ``offset``, ``count``, ``member_at``, ``member_offset``, ``source``, ``updated_at``; written by the script that queues the batch; see :mod:`service.ingest.queue` |
| ``streamlda:scraper:counters`` (setting ``counters_key``) | hash | scrapers | API | the scrapers' running totals (``queued``, ``duplicates``, ``rereads`` counted by the script that queues each batch) |
| ``streamlda:scraper:status`` | hash | scrapers | API | source -> JSON of a source reported unreachable (host, since, cause); see :mod:`service.store.source_status` |
| ``streamlda:heldout`` (setting ``heldout_key``) | list | worker | worker | the held-out articles; see :mod:`service.learn.heldout_store` |
| ``streamlda:reservoir:<rank>`` | hash | worker | worker | slot -> a zlib-compressed article text, the rank's uniform sample of what it learned; see :mod:`service.learn.reservoir` |
| ``streamlda:snapshot`` | string | worker | API | JSON of :class:`service.store.snapshot.Snapshot` |
| ``streamlda:snapshot:version`` | string | worker | API | a token replaced with the snapshot, so a reader sees change from one small GET |
| ``streamlda:heartbeat`` | string | worker | API | Unix time the worker was last alive; see :mod:`service.store.heartbeat` |
| ``streamlda:perplexity`` | sorted set | worker | API | JSON perplexity points scored by docs_seen; see :mod:`service.store.perplexity` |
| ``streamlda:model`` | hash | worker | API (``/infer``, search) | beta, its vocabulary and their version, and the kept articles' topic shares (``index:*``); see :mod:`service.store.published_model` and :mod:`service.store.search` |
| ``streamlda:control`` | hash | API (admin); worker (seeds) | worker | ``paused``, ``checkpoint_seq`` and ``seeds_seq``; see :mod:`service.store.control` |
| ``streamlda:topic:history`` | sorted set | worker | API | JSON points of every topic's size, coherence, drift and top words, scored by docs_seen; see :mod:`service.store.topic_history` |
| ``streamlda:topic:names`` | hash | API (admin); worker (moves them with their topics) | API | topic id -> JSON of the name an operator gave it; see :mod:`service.store.topic_names` |
| ``streamlda:topic:moves`` | hash | worker (only while topics move) | API | ``version`` (a token replaced with it) and ``body``: JSON of the learner's topic numbers (:class:`lda.topic_ids.TopicIds`: live slots, gone numbers, the moves kept, totals by kind); see :mod:`service.store.topic_moves` |
| ``streamlda:topic:seeds`` | hash | API (admin); worker (a seeds file, moves) | worker | topic id -> JSON of the seed words an operator gave it and their strength; see :mod:`service.store.topic_seeds` |
"""  # noqa: E501

from __future__ import annotations

import hashlib

PREFIX = "streamlda:"

# Fixed keys between the worker and the API (service.store: snapshot, heartbeat, perplexity,
# published_model, control, topic_history, topic_names, topic_seeds, topic_moves).
SNAPSHOT_KEY = PREFIX + "snapshot"
SNAPSHOT_VERSION_KEY = PREFIX + "snapshot:version"
HEARTBEAT_KEY = PREFIX + "heartbeat"
PERPLEXITY_KEY = PREFIX + "perplexity"
MODEL_KEY = PREFIX + "model"
CONTROL_KEY = PREFIX + "control"
TOPIC_HISTORY_KEY = PREFIX + "topic:history"
TOPIC_NAMES_KEY = PREFIX + "topic:names"
TOPIC_SEEDS_KEY = PREFIX + "topic:seeds"
TOPIC_MOVES_KEY = PREFIX + "topic:moves"
# Written and read by the worker alone, one per rank (service.learn.reservoir).
RESERVOIR_KEY = PREFIX + "reservoir"


def reservoir_key(rank: int) -> str:
    """The reservoir of one rank of the worker (0 for a lone worker)."""
    return f"{RESERVOIR_KEY}:{rank}"


def source_position_key(dedupe_key: str, identity: str) -> str:
    """The position of one file source (``identity``: what makes the file that file), beside
    the seen set whose ids it vouches for: positions and ids persist and vanish together."""
    digest = hashlib.sha1(identity.encode("utf-8"), usedforsecurity=False).hexdigest()[:20]
    return f"{dedupe_key}:position:{digest}"


# Written by the scrapers, read by the API (service.store.source_status).
SOURCE_STATUS_KEY = PREFIX + "scraper:status"

# Defaults of the keys that are settings (service.settings).
DEFAULT_STREAM = PREFIX + "docs"
DEFAULT_GROUP = "workers"
DEFAULT_DEDUPE_KEY = PREFIX + "seen"
DEFAULT_COUNTERS_KEY = PREFIX + "scraper:counters"
DEFAULT_HELDOUT_KEY = PREFIX + "heldout"
