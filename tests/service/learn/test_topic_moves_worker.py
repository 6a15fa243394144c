"""Topic moves on a real worker and Redis: a retire, a merge and a birth, each undone when its
trial is rejected and recorded under numbers never used before when kept; the record, search
and the topic numbers follow, and all of it comes back after a restart. The trials' decisions
and proposals are forced (a test cannot wait for the data to ask for each move); the moves,
their undo, the events and the parts are the worker's own."""

from __future__ import annotations

import threading
import types
from pathlib import Path
from typing import Any

import pytest
import torch

from lda.shaping import KINDS, Kind, ShapingConfig, TopicShaper
from lda.topic_ids import FREE
from service.learn.command import build_worker
from service.learn.search.part import Search
from service.learn.topic_record import Record
from service.learn.worker import Worker
from service.store.redis_client import connect
from tests.service.learn.helpers import queue_articles, worker_settings
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow  # a real Redis, a worker stepped in this process

TRIAL = ShapingConfig(every=1, start_after=2, burn_in=1, eval_sweeps=4, kinds=KINDS, births=1)


def _force(shaper: TopicShaper, keep: bool, proposals: dict[str, list[Any]]) -> None:
    """The shaper's next trials propose ``proposals`` (each kind once) and decide ``keep``."""
    shaper.config = TRIAL

    def propose(self: TopicShaper, kind: Kind, model: Any) -> list[Any]:
        return list(proposals.pop(kind, []))

    shaper._propose = types.MethodType(propose, shaper)  # type: ignore[method-assign]
    shaper._accept = types.MethodType(lambda self, *_: keep, shaper)  # type: ignore[method-assign]


def _step_until(worker: Worker, done: Any, most: int = 300) -> None:
    for _ in range(most):
        worker.step()
        if done():
            return
    raise AssertionError("the worker never got there")


def test_moves_are_kept_or_undone_and_survive_a_restart(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    settings = worker_settings(
        redis_server.url, tmp_path / "data", max_topics=8, search_refresh_share=0.0
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

    # Rejected: the learner's topics as they were, nothing recorded.
    _force(shaper, False, {"retire": [1], "merge": [(0, 2)], "birth": [torch.ones(500) * 20]})
    _step_until(worker, lambda: sum(shaper.trials.values()) >= 3)
    assert not any(k.endswith("kept") for k in shaper.trials)
    assert model.topic_ids.slots == [0, 1, 2, 3, 4, FREE, FREE, FREE]
    assert model.topic_ids.moves == []

    # Kept: a retire, a merge, a birth.
    record, search = worker.parts.of(Record), worker.parts.of(Search)
    assert record is not None and search is not None
    born = torch.zeros(500, dtype=torch.float64)
    born[:10] = 200.0
    _force(shaper, True, {"retire": [1], "merge": [(0, 2)], "birth": [born]})
    _step_until(worker, lambda: len(model.topic_ids.moves) >= 3)
    ids = model.topic_ids
    made = {m.kind: m for m in ids.moves}  # (duplicates merge first: the order is the shaper's)
    assert sorted(made) == ["birth", "merge", "retire"] and len(ids.moves) == 3
    assert ids.status(1).state == "retired"
    assert ids.status(2).state == "merged" and ids.status(2).into == 0
    number = made["birth"].topics[0]
    assert number == 5  # never used before
    slot = ids.slot_of(number)
    assert slot is not None and slot not in (0, 3, 4)
    assert made["merge"].before and made["merge"].after  # words before and after, as text
    assert worker.counters["updates"] > 0
    assert record.now is not None
    sizes = record.sizes()
    assert sizes is not None and sizes[2] == 0.0  # the merged-away slot holds nothing

    # Kept: a split whose new half took topic 3's top words: the halves trade numbers (3 goes
    # with its words), and the record's articles go with the number.
    top = model.top_words(10)[0][3]
    fraction = torch.ones(model.config.n_words, dtype=torch.float64)
    fraction[top] = 0.0
    held = {a[1] for a in record.now.article_rows(model.docs_seen)[3]}
    queue_articles(client, 600, 300)
    _force(shaper, True, {"split": [(3, fraction)]})
    _step_until(worker, lambda: len(model.topic_ids.moves) >= 4)
    ids = model.topic_ids  # (a trial loads the learner's saved state: a new object)
    split = ids.moves[-1]
    assert split.kind == "birth" and split.topics[1] == 3
    moved_to = ids.slot_of(3)
    assert moved_to is not None and moved_to != 3 and ids.slot_of(split.topics[0]) == 3
    assert len(set(split.before[0]) & set(split.after[1])) >= 5  # 3 kept its words
    kept = {a[1] for a in record.now.article_rows(model.docs_seen)[moved_to]}
    assert held and held & kept  # (articles learned since may have joined)

    # A restart brings the numbers, the shaper and the parts back.
    worker._checkpoint("requested")
    saved_ids = ids.state_dict()
    saved_trials = dict(shaper.trials)
    saved_sizes = record.sizes()
    worker.scoring.close()
    again = build_worker(settings, client, threading.Event())
    again._start()
    assert again.model is not None
    assert again.model.topic_ids.state_dict() == saved_ids
    assert again.session.shaper is not None and dict(again.session.shaper.trials) == saved_trials
    record_again = again.parts.of(Record)
    assert record_again is not None and record_again.sizes() == saved_sizes
    again.scoring.close()
