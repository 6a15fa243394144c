"""Topic moves on a real worker and Redis: a retire, a merge and a split, each left unmade when
its decision refuses it and recorded under numbers never used before when kept; the record,
search and the topic numbers follow, and all of it comes back after a restart. What is proposed
and kept is forced (a test cannot wait for the data to ask for each move); the scores, the
moves, the events and the parts are the worker's own."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import torch

from lda.model import StreamingLDA
from lda.shaping import Kind, ShapingConfig, TopicShaper
from lda.shaping.proposals import Window
from lda.topic_ids import FREE
from service.learn.command import build_worker
from service.learn.search.part import Search
from service.learn.topic_record import Record
from service.learn.worker import Worker
from service.store.redis_client import connect
from tests.service.learn.helpers import queue_articles, worker_settings
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow  # a real Redis, a worker stepped in this process

DECIDING = ShapingConfig(every=1, start_after=2, window=2, births=1)


def _force(shaper: TopicShaper, keep: bool, proposals: dict[str, list[Any]]) -> None:
    """The shaper's next decisions propose ``proposals`` (each kind once) and keep all or
    none of them."""
    shaper.config = DECIDING

    def propose(kind: Kind, model: StreamingLDA, shaper: Window) -> list[Any]:
        return list(proposals.pop(kind, []))

    shaper.propose = propose
    shaper.accept = lambda kind, gain: keep


def _step_until(worker: Worker, done: Any, most: int = 300) -> None:
    for _ in range(most):
        worker.step()
        if done():
            return
    raise AssertionError("the worker never got there")


def test_moves_are_kept_or_refused_and_survive_a_restart(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    settings = worker_settings(
        redis_server.url,
        tmp_path / "data",
        max_topics=8,
        fixed_topics=False,
        search_refresh_share=0.0,
    )
    client = connect(settings.store)
    queue_articles(client, 0, 600)
    worker = build_worker(settings, client, threading.Event())
    shaper = worker.session.shaper
    assert shaper is not None
    worker._start()
    _step_until(worker, lambda: worker.model is not None and worker.model.docs_seen >= 40)
    model = worker.model
    assert model is not None and model.topic_ids.live_slots() == [0, 1, 2, 3, 4]

    # Refused: the learner's topics as they were, nothing recorded.
    half = torch.full((model.config.n_words,), 0.5, dtype=torch.float64)
    _force(shaper, False, {"retire": [1], "merge": [(0, 2)], "split": [(3, half)]})
    _step_until(worker, lambda: sum(shaper.decisions.values()) >= 3)
    assert not any(k.endswith("kept") for k in shaper.decisions)
    assert model.topic_ids.slots == [0, 1, 2, 3, 4, FREE, FREE, FREE]
    assert model.topic_ids.moves == []

    # Kept: a retire and a merge in one decision.
    record, search = worker.parts.of(Record), worker.parts.of(Search)
    assert record is not None and search is not None
    _force(shaper, True, {"retire": [1], "merge": [(0, 2)]})
    _step_until(worker, lambda: len(model.topic_ids.moves) >= 2)
    ids = model.topic_ids
    made = {m.kind: m for m in ids.moves}  # (merges are made first: the order is the shaper's)
    assert sorted(made) == ["merge", "retire"] and len(ids.moves) == 2
    assert ids.status(1).state == "retired"
    assert ids.status(2).state == "merged" and ids.status(2).into == 0
    assert made["merge"].before and made["merge"].after  # words before and after, as text
    assert worker.counters["updates"] > 0
    assert record.now is not None
    sizes = record.sizes()
    assert sizes is not None and sizes[2] == 0.0  # the merged-away slot holds nothing

    # Kept: a split of topic 3 into a free slot, under a number never used before; the topic's
    # number stays with the half that kept more of its words, and the record's articles go
    # with the number.
    held = {a[1] for a in record.now.article_rows(model.docs_seen)[3]}
    queue_articles(client, 600, 300)
    _force(shaper, True, {"split": [(3, None)]})
    _step_until(worker, lambda: len(model.topic_ids.moves) >= 3)
    split = ids.moves[-1]
    assert split.kind == "birth" and split.topics == (5, 3)  # 5: never used before
    slot_3, slot_5 = ids.slot_of(3), ids.slot_of(5)
    assert slot_3 is not None and slot_5 is not None and {slot_3, slot_5} & {3}
    assert slot_5 not in (0, 4)
    words = set(split.before[0])
    assert len(words & set(split.after[1])) >= len(words & set(split.after[0]))  # 3 kept its
    kept = {a[1] for a in record.now.article_rows(model.docs_seen)[slot_3]}
    assert held and held & kept  # (articles learned since may have joined)

    # A restart brings the numbers, the shaper and the parts back.
    worker._checkpoint("requested")
    saved_ids = ids.state_dict()
    saved_decisions = dict(shaper.decisions)
    saved_sizes = record.sizes()
    worker.scoring.close()
    again = build_worker(settings, client, threading.Event())
    again._start()
    assert again.model is not None
    assert again.model.topic_ids.state_dict() == saved_ids
    assert (
        again.session.shaper is not None and dict(again.session.shaper.decisions) == saved_decisions
    )
    record_again = again.parts.of(Record)
    assert record_again is not None and record_again.sizes() == saved_sizes
    again.scoring.close()
