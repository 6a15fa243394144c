"""Names move with their topics once per evaluation, whatever retries or re-scoring repeat."""

from __future__ import annotations

import pytest
import redis

from service.store.topic_names import move_topic_names, read_topic_names, set_topic_name

pytestmark = pytest.mark.slow  # a real Redis


def test_names_move_with_labels_once_per_evaluation(redis_client: redis.Redis) -> None:
    set_topic_name(redis_client, 0, "Rivers")
    set_topic_name(redis_client, 2, "Opera")
    assert not move_topic_names(redis_client, [0, 1, 2], 1000)  # no label moved
    assert move_topic_names(redis_client, [2, 1, 0], 1000)
    assert read_topic_names(redis_client) == {0: "Opera", 2: "Rivers"}
    # The same evaluation again (a retried command, or scored again after a restart).
    assert not move_topic_names(redis_client, [2, 1, 0], 1000)
    assert read_topic_names(redis_client) == {0: "Opera", 2: "Rivers"}
    assert move_topic_names(redis_client, [1, 0, 2], 2000)
    assert read_topic_names(redis_client) == {1: "Opera", 2: "Rivers"}
