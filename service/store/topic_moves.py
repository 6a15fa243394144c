"""The learner's topic numbers as the API reads them: which numbers are live, what became of
every gone one and the moves kept (:class:`lda.topic_ids.TopicIds`), published while topics
move so every API process answers a gone number (410) and lists the moves.

One hash: ``version`` (a token replaced with the body) and ``body`` (JSON of
``TopicIds.state_dict()``). The worker writes it in the snapshot's MULTI, and only when the
numbers changed; a reader fetches the body only when the version it holds is not the current
one. Written never while K is fixed: its snapshots carry no numbers and nothing here is read.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import redis

from lda.topic_ids import TopicIds
from service.keys import TOPIC_MOVES_KEY
from service.store.redis_values import text


def moves_body(ids: TopicIds) -> str:
    """The JSON the hash's ``body`` holds for ``ids``."""
    return json.dumps(ids.state_dict(), separators=(",", ":"), allow_nan=False)


def set_topic_moves(pipe: Any, body: str) -> None:
    """Queue the write of ``body`` (from :func:`moves_body`) with a new version on ``pipe``
    (the snapshot's transaction)."""
    pipe.hset(TOPIC_MOVES_KEY, mapping={"version": uuid.uuid4().hex, "body": body})


def read_topic_moves_version(client: redis.Redis) -> str | None:
    """The published numbers' version (one small HGET), or None when there are none."""
    raw = client.hget(TOPIC_MOVES_KEY, "version")
    return None if raw is None else text(raw)


def read_topic_moves(client: redis.Redis) -> tuple[str, TopicIds] | None:
    """(version, numbers) read together, or None when none were published."""
    version, body = client.hmget(TOPIC_MOVES_KEY, ["version", "body"])
    if version is None or body is None:
        return None
    return text(version), TopicIds.from_state_dict(json.loads(text(body)))
