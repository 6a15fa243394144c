"""Settings become the learner's configuration: unset schedule parts keep the sampler's, and
mean_decay is the learner's default unless set (a bad one stops the command with exit 2)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from lda.config import DEFAULTS
from lda.model import LearnerConfig
from lda.sgmcmc.schedules import StepSchedule
from service.cli import settings_from_args
from service.settings import Settings


def learner_config(settings: Settings, n_words: int, ranks: int = 1) -> LearnerConfig:
    """The learner's configuration from ``settings`` as the commands' sessions make it: from
    the model's settings."""
    return settings.model.learner_config(n_words, ranks)


@pytest.mark.parametrize(
    ("sampler", "overrides", "schedule"),
    [
        ("sgrld", {}, StepSchedule(0.03, 1000.0, 0.55)),
        # A new step size keeps SGRLD's decay instead of silently making it constant.
        ("sgrld", {"step_size": 0.02}, StepSchedule(0.02, 1000.0, 0.55)),
        ("sgrld", {"step_c": 0.0}, StepSchedule(0.03, 1000.0, 0.0)),
        ("sgrhmc", {}, StepSchedule(0.05)),
        # b alone (no step size) is no longer ignored: the sampler's a decays.
        ("sgrhmc", {"step_b": 500.0}, StepSchedule(0.05, 500.0, 0.55)),
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


def SGRLD(**values: object) -> Settings:
    """Settings with SGRLD, whatever the default sampler."""
    return Settings(sampler="sgrld", **values)  # type: ignore[arg-type]


def test_sgrld_defaults_follow_a_larger_minibatch(monkeypatch):
    """SGRLD's default a grows like sqrt(n / 100), its b (in steps) and beta_mean's window
    shrink like 100 / n, so a step schedule and an averaging window stay the same in documents;
    values the user set stand, smaller minibatches and samplers with no measured rule keep the
    defaults, and a group's step counts every rank's documents. SGRHMC's constant step grows
    the same way, and SCIR's h like n (an exact step has no stability limit)."""
    config = learner_config(SGRLD(batch_size=1000), n_words=10)
    assert config.schedule is not None
    assert config.schedule.a == pytest.approx(0.03 * 10**0.5)
    assert (config.schedule.b, config.schedule.c) == (pytest.approx(100.0), 0.55)
    assert config.mean_decay == pytest.approx(0.97**10)
    # the schedule in documents is the reference's: step t at n = 1,000 is step 10 t at n = 100
    reference = learner_config(SGRLD(batch_size=100), n_words=10).schedule
    assert reference == StepSchedule(0.03, 1000.0, 0.55)
    assert config.schedule(50) / reference(500) == pytest.approx(10**0.5)
    for n in (50, 100):
        small = learner_config(SGRLD(batch_size=n), n_words=10)
        assert small.schedule == reference and small.mean_decay == 0.97
    assert learner_config(SGRLD(batch_size=500), n_words=10, ranks=2) == config
    own = learner_config(SGRLD(batch_size=1000, step_size=0.05, mean_decay=0.9), n_words=10)
    assert own.schedule == StepSchedule(0.05, pytest.approx(100.0), 0.55)
    assert own.mean_decay == 0.9
    sgrhmc = learner_config(Settings(sampler="sgrhmc", batch_size=1000), n_words=10)
    assert sgrhmc.schedule == StepSchedule(pytest.approx(0.05 * 10**0.5))
    assert sgrhmc.mean_decay == pytest.approx(0.97**10)
    sgld = learner_config(Settings(sampler="sgld", batch_size=1000), n_words=10)
    assert sgld.schedule == StepSchedule(0.01) and sgld.mean_decay == 0.97
    scir = learner_config(Settings(sampler="scir", batch_size=1000), n_words=10)
    reference_scir = DEFAULTS["scir"].schedule
    assert scir.schedule == StepSchedule(
        pytest.approx(10 * reference_scir.a), pytest.approx(reference_scir.b / 10), reference_scir.c
    )
    assert scir.mean_decay == pytest.approx(DEFAULTS["scir"].mean_decay ** 10)
    monkeypatch.setenv("STREAMLDA_MEAN_DECAY", "0.97")  # set, even to the default: it stands
    assert learner_config(SGRLD(batch_size=1000), n_words=10).mean_decay == 0.97


def test_up_children_learn_with_the_config_a_worker_started_alone_has(monkeypatch):
    """`up` hands its settings to the worker processes through the environment: an unset mean
    decay must stay unset there, or the children would not scale it with the minibatch."""
    from service.up import child_environment

    for key in [k for k in os.environ if k.startswith("STREAMLDA_")]:
        monkeypatch.delenv(key)
    parent = Settings(batch_size=500)
    env = child_environment(parent)
    assert env["STREAMLDA_BATCH_SIZE"] == "500"
    assert "STREAMLDA_TOPICS" not in env and "STREAMLDA_WIKIPEDIA_ARTICLES" not in env
    for key, value in env.items():
        if key.startswith("STREAMLDA_"):
            monkeypatch.setenv(key, value)
    child = learner_config(Settings(), n_words=10, ranks=2)
    assert child == learner_config(parent, n_words=10, ranks=2)
    assert child.mean_decay == pytest.approx(DEFAULTS[parent.model.sampler].mean_decay ** 10)


def test_vocab_size_flag_beats_a_vocabulary_file_from_the_environment(monkeypatch):
    monkeypatch.setenv("STREAMLDA_VOCAB", "/from/env/vocab.txt")
    assert str(settings_from_args(argparse.Namespace()).model.vocab) == "/from/env/vocab.txt"
    settings = settings_from_args(argparse.Namespace(vocab_size=300))
    assert settings.model.vocab is None and settings.model.vocab_size == 300


def test_corpus_size_is_wikipedias_unless_set(monkeypatch):
    """N describes the stream, English Wikipedia, whatever the source; a set N stands."""
    for name in ("STREAMLDA_CORPUS_SIZE", "STREAMLDA_WIKIPEDIA_ARTICLES"):
        monkeypatch.delenv(name, raising=False)
    assert Settings().model.corpus_size is None
    assert learner_config(Settings(), n_words=10).corpus_size == 6_900_000
    monkeypatch.setenv("STREAMLDA_WIKIPEDIA_ARTICLES", "7000000")
    assert learner_config(Settings(), n_words=10).corpus_size == 7_000_000
    monkeypatch.setenv("STREAMLDA_CORPUS_SIZE", "30000")
    assert learner_config(Settings(), n_words=10).corpus_size == 30_000
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus-size", type=float)
    args = parser.parse_args(["--corpus-size", "1e6"])
    assert learner_config(settings_from_args(args), n_words=10).corpus_size == 1_000_000


def test_topics_move_by_default_from_200_and_max_topics_caps_an_unset_start(monkeypatch):
    """No topic setting: 200 slots, all live, moving. A lower max_topics alone caps the start;
    a start given above it is refused; --fixed-topics keeps K = topics whatever max_topics."""
    for name in ("STREAMLDA_TOPICS", "STREAMLDA_MAX_TOPICS", "STREAMLDA_FIXED_TOPICS"):
        monkeypatch.delenv(name, raising=False)
    model = Settings().model
    assert model.topics_move and (model.topics, model.slots) == (200, 200)
    config = learner_config(Settings(), n_words=10)
    assert (config.n_topics, config.live_topics) == (200, None)
    monkeypatch.setenv("STREAMLDA_MAX_TOPICS", "100")
    assert (Settings().model.topics, Settings().model.slots) == (100, 100)
    monkeypatch.setenv("STREAMLDA_TOPICS", "20")
    config = learner_config(Settings(), n_words=10)
    assert (config.n_topics, config.live_topics) == (100, 20)
    monkeypatch.setenv("STREAMLDA_TOPICS", "150")
    with pytest.raises(ValueError, match="max_topics"):
        Settings()
    fixed = settings_from_args(argparse.Namespace(fixed_topics=True)).model
    assert not fixed.topics_move and fixed.slots == 150


def test_mean_decay_defaults_to_the_learners_and_reaches_it():
    assert Settings().model.mean_decay is None  # unset: the learner's, its one home
    sampler = Settings().model.sampler
    default = LearnerConfig(2, 5, sampler=sampler).mean_decay
    assert (
        learner_config(Settings(), n_words=10).mean_decay == default == DEFAULTS[sampler].mean_decay
    )
    assert learner_config(Settings(mean_decay=0.5), n_words=10).mean_decay == 0.5
    assert learner_config(Settings(mean_decay=0.0), n_words=10).mean_decay == 0.0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env", "flags"),
    [({"STREAMLDA_MEAN_DECAY": "1"}, []), ({}, ["--mean-decay", "-0.1"])],
)
def test_a_mean_decay_outside_0_1_is_refused_in_one_line_with_exit_2(tmp_path, env, flags):
    """Refused at start-up, before any source is read or any output written."""
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "service.cli", "train", "--source", "jsonl:/unread.jsonl",
         "--docs", "5", "--out", str(out), *flags],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("streamlda train: invalid settings: mean_decay: Input should")
    assert len(result.stderr.strip().splitlines()) == 1 and not out.exists()
