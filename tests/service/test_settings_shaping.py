"""The topic moves' settings: one per field of the shaper's configuration, its default the
shaper's own, read from STREAMLDA_SHAPING_<FIELD> and handed to the shaper the worker and
`train` learn through; a bad combination stops at the edge with the shaper's reason."""

from __future__ import annotations

from dataclasses import fields

import pytest
import torch
from pydantic import ValidationError

from lda.shaping import ShapingConfig, TopicShaper
from service.learn.session import LearningSession
from service.settings import Settings
from service.settings_shaping import ShapingSettings


def test_every_field_of_the_shaper_is_a_setting_with_the_shapers_default() -> None:
    named = {name.removeprefix("shaping_") for name in ShapingSettings.model_fields}
    assert named == {f.name for f in fields(ShapingConfig)}
    assert Settings().shaping.config() == ShapingConfig()


def test_the_environment_reaches_the_shaper_the_session_learns_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STREAMLDA_SHAPING_EVERY", "5")
    monkeypatch.setenv("STREAMLDA_SHAPING_TOLERANCE", "0")
    monkeypatch.setenv("STREAMLDA_SHAPING_JUNK_NPMI", "none")
    monkeypatch.setenv("STREAMLDA_SHAPING_KINDS", '["merge", "split"]')
    settings = Settings()
    session: LearningSession[None] = LearningSession(
        settings.model, torch.device("cpu"), shaping=settings.shaping.config()
    )
    assert isinstance(session.shaper, TopicShaper)
    config = session.shaper.config
    assert (config.every, config.tolerance, config.junk_npmi) == (5, 0.0, None)
    assert config.kinds == ("merge", "split")


def test_a_bad_combination_is_refused_with_the_shapers_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STREAMLDA_SHAPING_OVERLAP", "11")  # more than the 10 top words
    with pytest.raises(ValidationError, match="overlap must be in"):
        Settings()
    monkeypatch.setenv("STREAMLDA_SHAPING_OVERLAP", "5")
    monkeypatch.setenv("STREAMLDA_SHAPING_KINDS", '["grow"]')
    with pytest.raises(ValidationError, match="shaping_kinds"):
        Settings()
