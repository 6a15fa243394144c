"""The settings groups of learning: the model and its learner, the worker, and what it
publishes (each a field of :class:`service.settings.Settings`, which reads them from the
environment and the flags).

Each setting is declared once, here or in :mod:`service.settings_pipeline`: its type, default,
bounds and meaning (a pydantic Field; its variable is STREAMLDA_<NAME>) and, where a command takes
one, its flag and the flag's help (a :class:`Flag` in its type's metadata), from which every
command's flags (:func:`service.settings.add_flags`) and docs/settings.md are generated. The
learner's configuration is made from the model's settings (:meth:`ModelSettings.learner_config`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lda.config import SEED_STRENGTH, LearnerConfig, SamplerName, scaled_defaults
from lda.config import Backend as GibbsBackend
from lda.config import Method as GibbsMethod
from lda.sgmcmc.schedules import StepSchedule

DeviceName = Literal["auto", "cpu", "cuda"]


def _learner_default(name: str) -> Any:
    """A LearnerConfig field's default: the learner is the one home of its own defaults."""
    return next(f.default for f in fields(LearnerConfig) if f.name == name)


# The commands that learn: they take the learner's flags.
LEARNING = ("train", "worker")


@dataclass(frozen=True)
class Flag:
    """A setting's command-line flag in ``commands``, which sets it over its environment
    variable; a setting worded differently in some commands carries one Flag per wording."""

    name: str  # --topics
    help: str | None = None
    commands: tuple[str, ...] = LEARNING
    metavar: str | None = None
    required: bool = False  # the command cannot run without it (train's --source)
    # Flags of one exclusive set: at most one is given, and the one given unsets the others
    # that may be unset, whatever the environment says (--vocab-size beats STREAMLDA_VOCAB).
    exclusive: str | None = None


class Group(BaseModel):
    """One part's settings; its docstring's first line heads its section in docs/settings.md."""

    model_config = ConfigDict(extra="forbid", validate_default=True)


class ModelSettings(Group):
    """The model and its learner, for the worker and `train`."""

    sampler: Annotated[SamplerName, Flag("--sampler")] = Field(
        default="scir",
        description="SG-MCMC sampler: sgld, sghmc, sgrld, sgrhmc, scir (SGRLD's diffusion "
        "integrated exactly; on the CPU a step touches only the minibatch's words)",
    )
    topics: Annotated[int, Flag("--topics", "number of topics K (where they start)")] = Field(
        default=200,
        ge=1,
        description="Number of topics K: where the stream starts while topics move, K itself "
        "with fixed_topics (why 200: docs/defaults.md)",
    )
    max_topics: Annotated[
        int | None,
        Flag(
            "--max-topics",
            "the most topics the stream may hold (default: --topics)",
            (*LEARNING, "up"),
        ),
    ] = Field(
        default=None,
        ge=1,
        description="The most topics there may be while they are born, merged and retired "
        "(the learner's slots, its memory: max_topics x W); unset: topics",
    )
    fixed_topics: Annotated[
        bool,
        Flag("--fixed-topics", "keep K = --topics fixed: no topic moves", (*LEARNING, "up")),
    ] = Field(
        default=False,
        description="Keep K = topics fixed: no topic is born, merged or retired. Unset, topics "
        'are split, merged and retired while the stream runs (docs/topics.md, "Topics that '
        'shape themselves"; why that is the default: docs/defaults.md)',
    )
    vocab: Annotated[
        Path | None, Flag("--vocab", "vocabulary file, one word per line", exclusive="vocabulary")
    ] = Field(default=None, description="Vocabulary file, one word per line")
    seeds: Annotated[
        Path | None,
        Flag(
            "--seeds",
            'seeds file: JSON from topic number to words, e.g. {"3": ["film", "actor"]}',
            (*LEARNING, "up"),
            metavar="FILE",
        ),
    ] = Field(
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
    vocab_size: Annotated[
        int, Flag("--vocab-size", "build a vocabulary of W words", exclusive="vocabulary")
    ] = Field(
        default=50_000,
        ge=10,
        description="W when the vocabulary is built from the stream (why 50,000: docs/defaults.md)",
    )
    vocab_docs: Annotated[
        int, Flag("--vocab-docs", "documents read to build the vocabulary", ("worker",))
    ] = Field(default=2000, ge=10, description="Documents read to build a vocabulary")
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
    alpha: Annotated[float | None, Flag("--alpha", "topic-word Dirichlet prior")] = Field(
        default=None, gt=0, description="Dirichlet prior on topics (default: sampler's)"
    )
    gamma: Annotated[float | None, Flag("--gamma", "document-topic Dirichlet prior")] = Field(
        default=None, gt=0, description="Dirichlet prior on documents (default: sampler's)"
    )
    fixed_gamma: Annotated[
        bool, Flag("--fixed-gamma", "keep the symmetric document-topic prior")
    ] = Field(
        default=True,
        description="Keep the symmetric document-topic prior gamma (false: learn gamma_k per "
        'topic from the stream; docs/model.md, "The learned document-topic prior"; why fixed '
        "is the default: docs/defaults.md)",
    )
    step_size: Annotated[float | None, Flag("--step-size", "step size: the schedule's a")] = Field(
        default=None, gt=0, description="Step size: the schedule's a (default: sampler's)"
    )
    step_b: Annotated[float | None, Flag("--step-b", "schedule a(1+t/b)^-c: b")] = Field(
        default=None,
        gt=0,
        description="Schedule a(1+t/b)^-c: b (default: sampler's; none: constant)",
    )
    step_c: Annotated[float | None, Flag("--step-c", "schedule a(1+t/b)^-c: c (0: constant)")] = (
        Field(
            default=None,
            ge=0,
            description="Schedule a(1+t/b)^-c: c (default: sampler's; 0: constant)",
        )
    )
    friction: float = Field(
        default=1.0,
        gt=0,
        description="friction C: SGHMC D = C I, SGRHMC D = C diag(theta) (paper: 1)",
    )
    corpus_size: Annotated[float | None, Flag("--corpus-size", "corpus size N")] = Field(
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
    corpus_growth: Annotated[bool, Flag("--corpus-growth", "N grows with the documents seen")] = (
        Field(
            default=False,
            description="N grows with the documents seen (N = max(corpus_size, seen))",
        )
    )
    batch_size: Annotated[int, Flag("--batch-size", "documents per minibatch")] = Field(
        default=100,
        ge=1,
        description="Documents per minibatch n, per rank; above 100, SGRLD's, SGRHMC's and "
        "SCIR's unset step size, schedule b and mean decay follow n (why: docs/defaults.md)",
    )
    sweeps: Annotated[int | None, Flag("--sweeps", "Gibbs sweeps per minibatch")] = Field(
        default=None,
        ge=1,
        description="Gibbs sweeps per minibatch (default: the sampler's: 6, SGRHMC 50)",
    )
    burn_in: Annotated[int | None, Flag("--burn-in", "sweeps discarded (default: half)")] = Field(
        default=None, ge=0, description="Sweeps discarded (default: half)"
    )
    gibbs: Annotated[GibbsMethod | None, Flag("--gibbs")] = Field(
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
    mean_decay: Annotated[
        float | None,
        Flag("--mean-decay", "beta_mean's decay per step, in [0, 1) (0: the last sample)"),
    ] = Field(
        default=None,
        ge=0,
        lt=1,
        description="Decay per step of beta_mean, the exponential mean of the samples that is "
        "served and exported (it weighs ~1/(1 - decay) recent steps; 0: the last sample); "
        "default: the sampler's (SCIR 0.995, the others 0.97), for SGRLD, SGRHMC and SCIR "
        "decay^(n/100) with minibatches of n > 100",
    )
    heldout: Annotated[int, Flag("--heldout", "first H documents held out")] = Field(
        default=1000, ge=0, description="First H documents kept as the held-out set"
    )
    eval_every: Annotated[int, Flag("--eval-every", "evaluate every M trained documents")] = Field(
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
    device: Annotated[DeviceName, Flag("--device")] = Field(
        default="auto", description="auto picks CUDA when present"
    )
    threads: Annotated[int | None, Flag("--threads", "CPU threads")] = Field(
        default=None,
        ge=1,
        description="CPU threads of the Gibbs kernel (unset: all cores; under `up`, all but one "
        "for the worker, which shares the machine)",
    )
    seed: Annotated[int, Flag("--seed")] = Field(default=0, description="Seed of every random draw")

    @model_validator(mode="after")
    def _check(self) -> ModelSettings:
        """The learner's own checks (burn_in below the sweeps, the sampler's when unset) at the
        edge, where a bad value is one line naming it; and the words counted cover the
        vocabulary. Topics that move start at max_topics when it is below the default start
        and topics was not given."""
        if self.topics_move and self.max_topics is not None and self.max_topics < self.topics:
            if "topics" in self.model_fields_set:
                raise ValueError(
                    f"max_topics ({self.max_topics}) must be at least topics ({self.topics}): "
                    "topics is where the stream starts"
                )
            self.topics = self.max_topics
        self.learner_config(n_words=1)
        if self.vocab_counted is not None and self.vocab_counted < self.vocab_size:
            raise ValueError(
                f"vocab_counted ({self.vocab_counted}) must be at least vocab_size "
                f"({self.vocab_size}): the vocabulary is chosen from the words counted"
            )
        return self

    @property
    def topics_move(self) -> bool:
        """Topics are born, merged and retired unless fixed_topics."""
        return not self.fixed_topics

    @property
    def slots(self) -> int:
        """The learner's K: max_topics (else topics) when topics move, else topics."""
        return (self.max_topics or self.topics) if self.topics_move else self.topics

    def learner_config(self, n_words: int, ranks: int = 1, **overrides: Any) -> LearnerConfig:
        """The learner's configuration over ``n_words`` words: every setting named as a
        LearnerConfig field, the topics, and for what is unset the sampler's defaults, whose step
        schedule and mean decay follow a minibatch of batch_size x ``ranks`` documents where
        the sampler has a rule for it (the one place a setting's default is resolved); then
        ``overrides`` (LearnerConfig fields: a benchmark's run spec)."""
        default, mean_decay = scaled_defaults(self.sampler, self.batch_size * ranks)
        named = type(self).model_fields
        same = {f.name: getattr(self, f.name) for f in fields(LearnerConfig) if f.name in named}
        schedule = StepSchedule(
            default.a if self.step_size is None else self.step_size,
            default.b if self.step_b is None else self.step_b,
            default.c if self.step_c is None else self.step_c,
        )
        resolved = {
            "n_topics": self.slots,
            "live_topics": None if self.slots == self.topics else self.topics,
            "n_words": n_words,
            "schedule": schedule,
            "corpus_size": self.corpus_size or self.wikipedia_articles,
            "mean_decay": mean_decay if self.mean_decay is None else self.mean_decay,
            "learn_gamma": not self.fixed_gamma,
        }
        return LearnerConfig(**{**same, **resolved, **overrides})


class WorkerSettings(Group):
    """The worker's loop: reading, checkpoints, revisits and background evaluation."""

    consumer_name: Annotated[str, Flag("--consumer", "consumer name in the group", ("worker",))] = (
        Field(
            default="worker",
            description="Worker's consumer name in the group (keep it across restarts; rank r of "
            "a group reads as <name>-<r>)",
        )
    )
    checkpoint_every_s: Annotated[
        float, Flag("--checkpoint-every", "seconds between checkpoints", ("worker",))
    ] = Field(default=60.0, gt=0, description="Seconds between checkpoints")
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
