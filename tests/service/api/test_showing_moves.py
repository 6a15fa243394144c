"""The worker's showing part after topics moved: the model and a snapshot of the live topics,
under their numbers, published at once (not at the next throttled snapshot), with the numbers'
record beside them; a label move leaves names with their numbers. A real learner, the real
publisher and part, a real Redis."""

from __future__ import annotations

from typing import Any

import pytest
import redis
import torch

from lda.model import StreamingLDA
from lda.shaping import moves
from lda.vocab import Vocabulary
from service.learn.events import LabelsMoved, ModelDue, Part, Parts, TopicsReshaped
from service.learn.recent_rates import RecentRates
from service.learn.session import LearningSession
from service.learn.showing import Showing
from service.settings import Settings
from service.store.published_model import read_model
from service.store.snapshot import read_snapshot
from service.store.topic_moves import read_topic_moves
from service.store.topic_names import read_topic_names, set_topic_name
from tests.service.api import shaped

pytestmark = pytest.mark.slow


class Figures(Part):
    """The figures the worker's loop parts show in every snapshot (rates, reservoir)."""

    def shown(self, model: StreamingLDA) -> dict[str, Any]:
        k = model.topic_ids.n_slots
        status = shaped.status(k)
        return {
            name: getattr(status, name)
            for name in (
                "docs_per_s", "tokens_per_s", "fresh_docs_per_s", "revisit_docs_per_s",
                "fresh_wait_s", "fresh_wait_p95_s", "reservoir_articles", "reservoir_passes",
                "rank_docs_per_s", "idle_since", "checkpoint_at", "topic_size",
            )
        }  # fmt: skip


def showing(client: redis.Redis, model: StreamingLDA) -> Showing:
    session: LearningSession[Any] = LearningSession(Settings().model, torch.device("cpu"))
    session.model, session.vocabulary = model, Vocabulary(shaped.WORDS)
    publisher = shaped.publisher(client, every_s=3600.0)  # throttled: a snapshot an hour
    return Showing(publisher, session, RecentRates(), Parts([Figures()]))


def test_a_reshape_is_shown_at_once(redis_client: redis.Redis) -> None:
    model = shaped.unmoved_model()
    part = showing(redis_client, model)
    part.handle(ModelDue(snapshot=True))
    first = read_snapshot(redis_client)
    assert first is not None and first.topic_ids == [0, 1, 2, 3]
    assert read_topic_moves(redis_client) is not None
    moves.merge(model, 0, 1, torch.Generator().manual_seed(1))
    model.topic_ids.merged(0, 1, *shaped.AT[0])
    assert not part.publisher.snapshot_due()  # a throttled snapshot would wait an hour
    part.handle(TopicsReshaped(tuple(model.topic_ids.moves), freed=(1,), merged={1: 0}, born=()))
    shown = read_snapshot(redis_client)
    assert shown is not None and shown.topic_ids == [0, 2, 3] and len(shown.topics) == 3
    published = read_model(redis_client)
    assert published is not None and published.topic_ids == (0, 2, 3)
    assert published.beta.shape == (3, len(shaped.WORDS))
    read = read_topic_moves(redis_client)
    assert read is not None and read[1].status(1).into == 0


def test_names_stay_with_their_numbers_when_labels_move(redis_client: redis.Redis) -> None:
    model = shaped.shaped_model()
    part = showing(redis_client, model)
    set_topic_name(redis_client, 5, "Strings")
    part.handle(LabelsMoved([1, 0, 2, 3, 4, 5], since=700))
    assert read_topic_names(redis_client) == {5: "Strings"}
