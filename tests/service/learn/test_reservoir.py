"""The reservoir is a uniform sample of what it was offered, revisits cover it evenly, and it
goes on after a restart as if there had been none (service/learn/reservoir.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from service.learn.reservoir import Reservoir
from tests.support.redis_server import RedisServer


def test_every_article_offered_is_kept_with_the_same_probability() -> None:
    """Chi-square of how often each of 60 articles is held (capacity 10) over 6,000 seeds
    against capacity / 60: an off-by-one in the replacement draw fails it."""
    n, capacity, runs = 60, 10, 6000
    held: Counter[str] = Counter()
    for seed in range(runs):
        reservoir = Reservoir(None, "r", capacity, seed)
        for i in range(n):
            reservoir.offer(str(i))
        held.update(reservoir.draw(capacity))
    expected = runs * capacity / n
    chi2 = sum((held[str(i)] - expected) ** 2 / expected for i in range(n))
    assert sum(held.values()) == runs * capacity
    assert chi2 < 95  # 59 degrees of freedom: P(chi2 > 95) ~ 0.002 for a uniform sample


def test_revisits_visit_every_held_article_once_per_pass() -> None:
    reservoir = Reservoir(None, "r", 8, seed=1)
    for i in range(5):
        reservoir.offer(f"article {i}")
    first = reservoir.draw(3) + reservoir.draw(3)  # 5 held: the second draw ends the pass...
    assert sorted(first[:5]) == [f"article {i}" for i in range(5)]
    assert len(first) == 6  # ...and begins the next
    assert reservoir.passes == pytest.approx(6 / 5)
    assert Reservoir(None, "r", 8, seed=1).draw(4) == []  # nothing held, nothing drawn


@pytest.mark.slow  # a real Redis
def test_a_restart_from_the_checkpoint_state_goes_on_as_if_uninterrupted(
    redis_server: RedisServer,
) -> None:
    client = redis_server.client()
    texts = [f"text of article {i} " * 20 for i in range(50)]
    alone = Reservoir(None, "unused", 10, seed=7)
    for text in texts:
        alone.offer(text)

    first = Reservoir(client, "streamlda:reservoir:0", 10, seed=7)
    for text in texts[:30]:
        first.offer(text)
    first.flush()  # as before a checkpoint
    state = first.state_dict()
    del first  # the worker dies after the checkpoint

    second = Reservoir(client, "streamlda:reservoir:0", 10, seed=123)
    second.load_state_dict(state)
    assert second.size == 10 and not second.pending
    for text in texts[30:]:
        second.offer(text)
    assert sorted(second.draw(10)) == sorted(alone.draw(10))
    second.flush()
    stored = client.hgetall("streamlda:reservoir:0")
    assert len(stored) == 10 and all(len(v) < len(texts[0]) for v in stored.values())


@pytest.mark.slow  # a real Redis
def test_a_smaller_capacity_drops_the_slots_beyond_it(redis_server: RedisServer) -> None:
    client = redis_server.client()
    big = Reservoir(client, "r", 10, seed=3)
    for i in range(40):
        big.offer(str(i))
    big.flush()
    small = Reservoir(client, "r", 4, seed=0)
    small.load_state_dict(big.state_dict())
    assert client.hlen("r") == 4 and small.size == 4 and len(small.draw(10)) == 4
