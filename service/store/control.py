"""The control hash, from the API's admin routes to the worker: ``paused`` ("1"/"0"),
``checkpoint_seq``, a counter the worker answers by checkpointing when it grows, and
``seeds_seq``, a counter the worker answers by reading the topics' seeds again
(:mod:`service.store.topic_seeds`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import redis

from service.keys import CONTROL_KEY
from service.store.redis_values import text


@dataclass(frozen=True)
class Control:
    """What the operator asked for: pause state, how many checkpoints were requested and how
    many times the seeds changed."""

    paused: bool = False
    checkpoint_seq: int = 0
    seeds_seq: int = 0


def set_paused(client: redis.Redis, paused: bool) -> None:
    """Ask the worker to stop (or resume) taking minibatches; it stays so across restarts."""
    client.hset(CONTROL_KEY, "paused", "1" if paused else "0")


def request_checkpoint(client: redis.Redis) -> int:
    """Ask for a checkpoint now; the worker checkpoints when checkpoint_seq grows."""
    return int(client.hincrby(CONTROL_KEY, "checkpoint_seq", 1))


def read_control(client: redis.Redis) -> Control:
    """The operator's current requests (defaults when none were made)."""
    raw: Mapping[bytes | str, bytes | str] = client.hgetall(CONTROL_KEY)
    fields = {text(k): text(v) for k, v in raw.items()}
    return Control(
        paused=fields.get("paused") == "1",
        checkpoint_seq=int(fields.get("checkpoint_seq", 0)),
        seeds_seq=int(fields.get("seeds_seq", 0)),
    )
