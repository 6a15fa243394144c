"""What a learning session reads of the settings (:class:`SessionConfig`), and the learner's
configuration it makes of them (:func:`learner_config`), where each unset value takes the
sampler's default."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lda.config import Backend, Method, SamplerName, scaled_defaults
from lda.model import LearnerConfig
from lda.sgmcmc.schedules import StepSchedule


@dataclass(frozen=True)
class SessionConfig:
    """What a session reads of the settings (same names; the commands pick them,
    ``Settings.part``): the protocol's sizes and the learner's configuration."""

    vocab: Path | None
    vocab_docs: int
    vocab_size: int
    vocab_refresh: int
    vocab_counted: int | None
    heldout: int
    batch_size: int
    eval_every: int
    seed: int
    sampler: SamplerName
    topics: int
    alpha: float | None
    gamma: float | None
    step_size: float | None
    step_b: float | None
    step_c: float | None
    friction: float
    corpus_size: float | None
    wikipedia_articles: int
    corpus_growth: bool
    sweeps: int | None
    burn_in: int | None
    gibbs: Method | None
    gibbs_backend: Backend
    eval_sweeps: int
    eval_gibbs: Method
    mean_decay: float | None
    dtype: str


def learner_config(
    settings: SessionConfig, n_words: int, ranks: int = 1, **overrides: Any
) -> LearnerConfig:
    """The learner's configuration from the settings (unset values take the sampler's, which
    follow a minibatch of ``batch_size`` x ``ranks`` documents per step where the sampler has
    a rule for it), then ``overrides`` (LearnerConfig fields: a benchmark's run spec)."""
    default, mean_decay = scaled_defaults(settings.sampler, settings.batch_size * ranks)
    if settings.mean_decay is not None:  # the user's own value stands
        mean_decay = settings.mean_decay
    schedule = StepSchedule(
        default.a if settings.step_size is None else settings.step_size,
        default.b if settings.step_b is None else settings.step_b,
        default.c if settings.step_c is None else settings.step_c,
    )
    fields: dict[str, Any] = {
        "n_topics": settings.topics,
        "n_words": n_words,
        "sampler": settings.sampler,
        "alpha": settings.alpha,
        "gamma": settings.gamma,
        "schedule": schedule,
        "friction": settings.friction,
        "corpus_size": settings.corpus_size or settings.wikipedia_articles,
        "corpus_growth": settings.corpus_growth,
        "sweeps": settings.sweeps,
        "burn_in": settings.burn_in,
        "gibbs": settings.gibbs,
        "gibbs_backend": settings.gibbs_backend,
        "eval_sweeps": settings.eval_sweeps,
        "eval_gibbs": settings.eval_gibbs,
        "mean_decay": mean_decay,
        "dtype": settings.dtype,
    }
    return LearnerConfig(**{**fields, **overrides})
