"""Settings become the learner's configuration: unset schedule parts keep the sampler's."""

from __future__ import annotations

import argparse

import pytest

from lda.schedules import StepSchedule
from service.cli import settings_from_args
from service.model_store import learner_config
from service.settings import Settings


@pytest.mark.parametrize(
    ("sampler", "overrides", "schedule"),
    [
        ("sgrld", {}, StepSchedule(0.03, 1000.0, 0.55)),
        # A new step size keeps SGRLD's decay instead of silently making it constant.
        ("sgrld", {"step_size": 0.02}, StepSchedule(0.02, 1000.0, 0.55)),
        ("sgrld", {"step_c": 0.0}, StepSchedule(0.03, 1000.0, 0.0)),
        ("sgrhmc", {}, StepSchedule(0.2)),
        # b alone (no step size) is no longer ignored: the sampler's a decays.
        ("sgrhmc", {"step_b": 500.0}, StepSchedule(0.2, 500.0, 0.55)),
        (
            "sgld",
            {"step_size": 0.005, "step_b": 100.0, "step_c": 1.0},
            StepSchedule(0.005, 100.0, 1.0),
        ),
    ],
)
def test_schedule_from_settings(sampler, overrides, schedule):
    config = learner_config(Settings(sampler=sampler, **overrides), n_words=10)
    assert config.schedule == schedule
    if overrides.get("step_c") == 0.0:
        assert {config.schedule(t) for t in (0, 10, 10_000)} == {schedule.a}


def test_vocab_size_flag_beats_a_vocabulary_file_from_the_environment(monkeypatch):
    monkeypatch.setenv("STREAMLDA_VOCAB", "/from/env/vocab.txt")
    assert str(settings_from_args(argparse.Namespace()).vocab) == "/from/env/vocab.txt"
    settings = settings_from_args(argparse.Namespace(vocab_size=300))
    assert settings.vocab is None and settings.vocab_size == 300
