"""The names operators give topics: one hash, topic id -> JSON ``{"name", "at"}``.

The API's admin routes write them; the worker moves them when the drift matching finds that
topics' labels moved (:func:`move_topic_names`), so a name stays with the topic it was given
to. They live in Redis alone, so they outlast any process (and Redis itself, with AOF).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import redis

from service.keys import TOPIC_NAMES_KEY

# The field that says at which documents seen names were last moved (not a topic id).
MOVED_AT = "moved_at"
# Rewrites the whole hash from a permutation, atomically, once per evaluation: ARGV[1] is the
# evaluation's documents seen (a move at or before the last one is a retry or a re-scored
# evaluation, already applied), ARGV[i + 1] the previous id of the topic now numbered i - 1.
_MOVE = """
local last = tonumber(redis.call('HGET', KEYS[1], 'moved_at') or '-1')
if tonumber(ARGV[1]) <= last then return 0 end
local old = redis.call('HGETALL', KEYS[1])
local names = {}
for i = 1, #old, 2 do names[old[i]] = old[i + 1] end
redis.call('DEL', KEYS[1])
for i = 2, #ARGV do
  local name = names[ARGV[i]]
  if name then redis.call('HSET', KEYS[1], tostring(i - 2), name) end
end
redis.call('HSET', KEYS[1], 'moved_at', ARGV[1])
return 1
"""


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def set_topic_name(client: redis.Redis, k: int, name: str, at: float | None = None) -> None:
    """Name topic ``k`` (replacing any name it had)."""
    entry = {"name": name, "at": time.time() if at is None else at}
    client.hset(TOPIC_NAMES_KEY, str(k), json.dumps(entry, ensure_ascii=False))


def clear_topic_name(client: redis.Redis, k: int) -> bool:
    """Remove topic ``k``'s name; False if it had none."""
    return bool(client.hdel(TOPIC_NAMES_KEY, str(k)))


def read_topic_names(client: redis.Redis) -> dict[int, str]:
    """Every named topic's name, by topic id."""
    raw: Mapping[Any, Any] = client.hgetall(TOPIC_NAMES_KEY)
    names: dict[int, str] = {}
    for key, value in raw.items():
        try:
            names[int(_text(key))] = str(json.loads(_text(value))["name"])
        except (ValueError, KeyError, TypeError):
            continue  # not a name this module wrote
    return names


def move_topic_names(client: redis.Redis, matched: Sequence[int], docs_seen: int) -> bool:
    """Names follow their topics: topic ``k`` now is the topic ``matched[k]`` was (the drift
    matching's permutation at the evaluation of ``docs_seen``); applied once per evaluation,
    so a retried command or a re-scored evaluation does not move them twice. False when
    nothing was written."""
    if all(int(m) == k for k, m in enumerate(matched)):
        return False
    args = [str(int(docs_seen)), *[str(int(m)) for m in matched]]
    return bool(client.eval(_MOVE, 1, TOPIC_NAMES_KEY, *args))
