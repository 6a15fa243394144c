"""The settings group of topic moves: when the shaper decides and what makes a topic dead,
junk, a duplicate or worth splitting (lda.shaping; docs/topics.md, "Topics that shape
themselves"). Each is a field of :class:`lda.shaping.ShapingConfig`, the one home of its
default, read here as STREAMLDA_SHAPING_<FIELD>; :meth:`ShapingSettings.config` gives the
shaper its configuration. Unused while K is fixed."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from pydantic import Field, field_validator, model_validator

from lda.shaping.config import Kind, ShapingConfig
from service.settings_learning import Group

PREFIX = "shaping_"


def _default(name: str) -> Any:
    """A ShapingConfig field's default: the shaper is the one home of its own defaults."""
    return next(f.default for f in fields(ShapingConfig) if f.name == name)


class ShapingSettings(Group):
    """Topic moves: when they are decided, what is proposed and what a decision may cost."""

    shaping_every: int = Field(
        default=_default("every"), ge=1, description="Minibatches between two decisions"
    )
    shaping_start_after: int = Field(
        default=_default("start_after"),
        ge=0,
        description="Minibatches learned before the first decision; a newborn topic's grace "
        "before it may be retired or merged",
    )
    shaping_window: int = Field(
        default=_default("window"),
        ge=1,
        description="Recent minibatches whose documents a decision is scored on",
    )
    shaping_min_topics: int = Field(
        default=_default("min_topics"),
        ge=1,
        description="Live topics never retired or merged below",
    )
    shaping_dead_share: float = Field(
        default=_default("dead_share"),
        ge=0,
        lt=1,
        description="Dead: a topic whose running share of the tokens is under this fraction of "
        "an average live topic's (proposed for retiring)",
    )
    shaping_junk_npmi: float | None = Field(
        default=_default("junk_npmi"),
        description="Junk: a topic whose top words' NPMI in the window is below this (proposed "
        "for retiring); `none`: junk is left alone",
    )
    shaping_share_decay: float = Field(
        default=_default("share_decay"),
        ge=0,
        lt=1,
        description="Per minibatch, the decay of the running mean of the topics' shares",
    )
    shaping_top: int = Field(
        default=_default("top"), ge=1, description="Top words two topics are compared by"
    )
    shaping_overlap: int = Field(
        default=_default("overlap"),
        ge=1,
        description="Top words in common that make two topics a duplicate pair (proposed for "
        "merging)",
    )
    shaping_most: int = Field(
        default=_default("most"),
        ge=0,
        description="Topics one decision retires or merges away, at most",
    )
    shaping_births: int = Field(
        default=_default("births"),
        ge=0,
        description="Topics one decision splits, at most (one per free slot)",
    )
    shaping_tolerance: float = Field(
        default=_default("tolerance"),
        ge=0,
        description="Nats per token of the window a retire or merge may cost (the noise of "
        "one draw; why: docs/defaults.md)",
    )
    shaping_kinds: tuple[Kind, ...] = Field(
        default=_default("kinds"),
        description='The moves proposed, a JSON list of "retire", "merge" and "split"',
    )

    @field_validator("shaping_junk_npmi", mode="before")
    @classmethod
    def _none(cls, value: Any) -> Any:
        """``none`` (or empty) in the environment: junk is left alone."""
        return None if isinstance(value, str) and value.strip().lower() in ("", "none") else value

    @model_validator(mode="after")
    def _check(self) -> ShapingSettings:
        """The shaper's own checks at the edge (overlap within top, ...)."""
        self.config()
        return self

    def config(self) -> ShapingConfig:
        """The shaper's configuration from these settings."""
        return ShapingConfig(
            **{name[len(PREFIX) :]: getattr(self, name) for name in type(self).model_fields}
        )
