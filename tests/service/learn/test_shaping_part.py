"""The shaper's part of the worker: a checkpoint learned with K fixed and resumed while topics
move says so in the log, once, where an operator looks."""

from __future__ import annotations

import logging

import pytest

from lda.config import LearnerConfig
from lda.model import StreamingLDA
from lda.shaping import FixedTopics, TopicShaper
from lda.vocab import Vocabulary
from service.learn.events import LearnerBegun
from service.learn.shaping_part import Shaping


def _begun(docs_seen: int, extra: dict[str, object]) -> LearnerBegun:
    model = StreamingLDA(LearnerConfig(4, 6, sweeps=2), seed=0)
    model.docs_seen = docs_seen
    return LearnerBegun(model, Vocabulary([f"w{i}" for i in range(6)]), extra)


def _warned(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_fixed_k_checkpoint_resumed_while_topics_move_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "service.learn.shaping_part")
    Shaping(TopicShaper()).handle(_begun(500, {"shaping": None}))
    (line,) = _warned(caplog)
    assert "learned with K fixed" in line and "4 topics now split" in line


def test_nothing_is_said_for_a_new_learner_a_moving_checkpoint_or_a_fixed_k(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "service.learn.shaping_part")
    Shaping(TopicShaper()).handle(_begun(0, {}))  # a new learner
    moving = TopicShaper()
    Shaping(TopicShaper()).handle(_begun(500, {"shaping": moving.state_dict()}))
    Shaping(FixedTopics()).handle(_begun(500, {}))  # K fixed, as the checkpoint was
    assert _warned(caplog) == []
