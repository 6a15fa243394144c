"""The settings groups of learning: the model and its learner, the worker, and what it
publishes (each a field of :class:`service.settings.Settings`, which reads them from the
environment and the flags)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lda.config import DEFAULTS, SEED_STRENGTH, LearnerConfig, SamplerName
from lda.config import Backend as GibbsBackend
from lda.config import Method as GibbsMethod

DeviceName = Literal["auto", "cpu", "cuda"]


def _learner_default(name: str) -> Any:
    """A LearnerConfig field's default: the learner is the one home of its own defaults."""
    return next(f.default for f in fields(LearnerConfig) if f.name == name)


class Group(BaseModel):
    """One part's settings; its docstring's first line heads its section in docs/settings.md."""

    model_config = ConfigDict(extra="forbid", validate_default=True)


class ModelSettings(Group):
    """The model and its learner, for the worker and `train`."""

    sampler: SamplerName = Field(
        default="scir",
        description="SG-MCMC sampler: sgld, sghmc, sgrld, sgrhmc, scir (SGRLD's diffusion "
        "integrated exactly; on the CPU a step touches only the minibatch's words)",
    )
    topics: int = Field(default=50, ge=1, description="Number of topics K")
    vocab: Path | None = Field(default=None, description="Vocabulary file, one word per line")
    seeds: Path | None = Field(
        default=None,
        description="Seeds file, set at every start: a JSON object from topic number to a list "
        'of words, e.g. {"3": ["film", "actor"]} (docs/topics.md, "Seeded topics")',
    )
    seed_strength: float = Field(
        default=SEED_STRENGTH,
        gt=0,
        description="Strength of a topic's seed words when none is given: the percent of an "
        "average topic's tokens each seed word's pseudo-counts stand for (why 2: "
        "docs/defaults.md)",
    )
    vocab_size: int = Field(
        default=50_000,
        ge=10,
        description="W when the vocabulary is built from the stream (why 50,000: docs/defaults.md)",
    )
    vocab_docs: int = Field(default=2000, ge=10, description="Documents read to build a vocabulary")
    vocab_refresh: int = Field(
        default=10_000,
        ge=0,
        description="Documents learned between vocabulary refreshes: the top vocab_size words "
        "counted in the stream become the vocabulary (0: never; a --vocab file never changes)",
    )
    vocab_counted: int | None = Field(
        default=None,
        ge=1,
        description="Words whose document counts are kept for refreshes (default: 4 x "
        "vocab_size; a count is low by at most the pairs counted over this plus one)",
    )
    alpha: float | None = Field(
        default=None, gt=0, description="Dirichlet prior on topics (default: sampler's)"
    )
    gamma: float | None = Field(
        default=None, gt=0, description="Dirichlet prior on documents (default: sampler's)"
    )
    step_size: float | None = Field(
        default=None, gt=0, description="Step size: the schedule's a (default: sampler's)"
    )
    step_b: float | None = Field(
        default=None,
        gt=0,
        description="Schedule a(1+t/b)^-c: b (default: sampler's; none: constant)",
    )
    step_c: float | None = Field(
        default=None, ge=0, description="Schedule a(1+t/b)^-c: c (default: sampler's; 0: constant)"
    )
    friction: float = Field(
        default=1.0,
        gt=0,
        description="friction C: SGHMC D = C I, SGRHMC D = C diag(theta) (paper: 1)",
    )
    corpus_size: float | None = Field(
        default=None,
        gt=0,
        description="Corpus size N in the gradient's N/n: the articles of the corpus the stream "
        "samples (default: wikipedia_articles, for every source of Wikipedia articles: live, "
        "dump or replayed file)",
    )
    wikipedia_articles: int = Field(
        default=6_900_000,
        gt=0,
        description="Articles of English Wikipedia (6.9 million in 2026), the default N: a "
        "replayed sample of Wikipedia describes the same population",
    )
    corpus_growth: bool = Field(
        default=False, description="N grows with the documents seen (N = max(corpus_size, seen))"
    )
    batch_size: int = Field(
        default=100,
        ge=1,
        description="Documents per minibatch n, per rank; above 100, SGRLD's, SGRHMC's and "
        "SCIR's unset step size, schedule b and mean decay follow n (why: docs/defaults.md)",
    )
    sweeps: int | None = Field(
        default=None,
        ge=1,
        description="Gibbs sweeps per minibatch (default: the sampler's: 6, SGRHMC 50)",
    )
    burn_in: int | None = Field(default=None, ge=0, description="Sweeps discarded (default: half)")
    gibbs: GibbsMethod | None = Field(
        default=None,
        description="Gibbs expectation: exact (collapsed), rao-blackwell, or uncollapsed "
        "(pi drawn, all tokens at once: for GPUs); default: the sampler's (rao-blackwell, "
        "SGRHMC exact)",
    )
    gibbs_backend: GibbsBackend = Field(
        default=_learner_default("gibbs_backend"),
        description="Where training Gibbs sweeps run: auto (the CUDA kernel on a CUDA device, "
        "else the CPU kernel), cpu, cuda, or torch (slow reference)",
    )
    dtype: Literal["float32", "float64"] = Field(
        default=_learner_default("dtype"),
        description="The chain's floating-point type: float32 halves the memory of theta and "
        "its mean, for a large K x W (docs/defaults.md)",
    )
    mean_decay: float | None = Field(
        default=None,
        ge=0,
        lt=1,
        description="Decay per step of beta_mean, the exponential mean of the samples that is "
        "served and exported (it weighs ~1/(1 - decay) recent steps; 0: the last sample); "
        "default: the sampler's (SCIR 0.995, the others 0.97), for SGRLD, SGRHMC and SCIR "
        "decay^(n/100) with minibatches of n > 100",
    )
    heldout: int = Field(
        default=1000, ge=0, description="First H documents kept as the held-out set"
    )
    eval_every: int = Field(
        default=1000, ge=1, description="Evaluate perplexity every M trained documents"
    )
    eval_sweeps: int = Field(
        default=_learner_default("eval_sweeps"),
        ge=2,
        description="Gibbs sweeps when scoring held-out documents (a fifth are burn-in)",
    )
    eval_gibbs: GibbsMethod = Field(
        default=_learner_default("eval_gibbs"),
        description="Gibbs expectation when scoring held-out documents (each chain starts with "
        "every token's topic drawn from its word's column of beta)",
    )
    device: DeviceName = Field(default="auto", description="auto picks CUDA when present")
    threads: int | None = Field(
        default=None,
        ge=1,
        description="CPU threads of the Gibbs kernel (unset: all cores; under `up`, all but one "
        "for the worker, which shares the machine)",
    )
    seed: int = Field(default=0, description="Seed of every random draw")

    @model_validator(mode="after")
    def _check(self) -> ModelSettings:
        sweeps = self.learner_sweeps
        if self.burn_in is not None and self.burn_in >= sweeps:
            raise ValueError(f"burn_in ({self.burn_in}) must be below sweeps ({sweeps})")
        if self.vocab_counted is not None and self.vocab_counted < self.vocab_size:
            raise ValueError(
                f"vocab_counted ({self.vocab_counted}) must be at least vocab_size "
                f"({self.vocab_size}): the vocabulary is chosen from the words counted"
            )
        return self

    @property
    def learner_sweeps(self) -> int:
        """Gibbs sweeps per minibatch: the setting, else the sampler's default."""
        return DEFAULTS[self.sampler].sweeps if self.sweeps is None else self.sweeps


class WorkerSettings(Group):
    """The worker's loop: reading, checkpoints, revisits and background evaluation."""

    consumer_name: str = Field(
        default="worker",
        description="Worker's consumer name in the group (keep it across restarts; rank r of "
        "a group reads as <name>-<r>)",
    )
    checkpoint_every_s: float = Field(default=60.0, gt=0, description="Seconds between checkpoints")
    checkpoint_max_unacked: int = Field(
        default=2000,
        ge=1,
        description="Trained entries held unacknowledged that trigger a checkpoint (bounds the "
        "stream beyond the high-water mark)",
    )
    checkpoint_idle_s: float = Field(
        default=2.0,
        ge=0,
        description="Checkpoint (acknowledging a drained source's tail) once the stream has "
        "stayed empty this long",
    )
    stop_ack_wait_s: float = Field(
        default=10.0,
        ge=0,
        description="Seconds a stopping worker keeps retrying its final acknowledgement",
    )
    read_block_ms: int = Field(
        default=1000,
        ge=1,
        description="Longest wait (ms) of one read of the stream while it is empty",
    )
    worker_nice: int = Field(
        default=10,
        ge=0,
        le=19,
        description="Niceness the worker adds to itself: on a shared host the learner yields the "
        "CPU to the API and scrapers, whose answers people wait for",
    )
    worker_silent_after_s: float = Field(
        default=10.0,
        gt=0,
        description="A worker whose heartbeat is older than this shows as not responding, with "
        "docs/s 0, in /stats, /metrics and the page (it beats after every step and every read)",
    )
    revisit: bool = Field(
        default=True,
        description="Learn while the stream is quiet: revisit a uniform sample of the articles "
        "learned whenever nothing fresh is unread (docs/samplers.md, revisiting a reservoir)",
    )
    reservoir_size: int = Field(
        default=50_000,
        ge=1,
        description="Articles the reservoir of revisits holds (per worker rank)",
    )
    revisit_ratio: float = Field(
        default=6.0,
        ge=0,
        description="At most this many revisited documents learned per fresh one; past it an "
        "empty stream leaves the worker idle",
    )
    eval_backlog: int = Field(
        default=4,
        ge=1,
        description="Worker: betas waiting for held-out scoring; beyond it a point is skipped "
        "and counted (evals_skipped)",
    )
    eval_stop_wait_s: float = Field(
        default=30.0,
        ge=0,
        description="Seconds a stopping worker waits for scoring in progress (the rest is scored "
        "after a restart)",
    )


class PublishSettings(Group):
    """What the worker keeps and publishes about the topics, which the API serves."""

    publish_every_s: float = Field(
        default=1.0,
        ge=0,
        description="Seconds between the topics snapshots the worker publishes while it trains "
        "(0: every minibatch); the latest is published as soon as the stream runs dry",
    )
    topic_words: int = Field(
        default=100,
        ge=1,
        description="Top words per topic kept in each snapshot (the largest ?top=)",
    )
    uncertainty_samples: int = Field(
        default=20,
        ge=0,
        description="Recent samples of beta whose spread gives each top word's 5-95% interval "
        "(0: none; the worker keeps each at the published top words only)",
    )
    perplexity_history: int = Field(
        default=10_000, ge=1, description="Perplexity points kept in Redis (oldest dropped)"
    )
    topic_history: int = Field(
        default=200,
        ge=1,
        description="Points of each topic's history kept in Redis (oldest dropped)",
    )
    topic_record: bool = Field(
        default=True,
        description="Keep each topic's size and the articles behind it, the stream's word counts "
        "and a document sample for export (off: the worker's step skips the documents' topic "
        "sums, and those are not served)",
    )
    topic_articles: int = Field(
        default=10,
        ge=0,
        description="Articles the worker keeps behind each topic, those most about it "
        "(0: none; docs/topics.md)",
    )
    topic_half_life: int = Field(
        default=20_000,
        ge=1,
        description="Documents seen over which a kept article's share of its topic counts half "
        "as much, so a topic that moved on shows what it means now (docs/topics.md)",
    )
    search: bool = Field(
        default=True,
        description="Keep the topic shares of the articles held for revisits (and those listed "
        "behind the topics) and publish them with the model, for /topics/{id}/articles and "
        "/similar (without revisit, the listed ones only; docs/topics.md)",
    )
    search_refresh_share: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="At most this share of one core refolds the kept articles' shares under the "
        "latest published model, stalest first, so that search stays current (0: never; the "
        "shares are then the learner's own from when each article was learned or revisited)",
    )
    export_docs: int = Field(
        default=2_000,
        ge=0,
        description="Learned documents whose length and topic shares the worker keeps (a "
        "uniform sample) for the exported model's document view",
    )
