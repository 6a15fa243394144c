"""One Settings object for every command: environment variables prefixed STREAMLDA_, flags override.

Every tunable of the service lives here with its default and meaning, in one group per part of
the service (``settings.model.topics``, ``settings.queue.stream``...). The variables and flags
stay flat (STREAMLDA_TOPICS, --topics): a setting's name is unique across the groups.
docs/settings.md's tables, a section per group, are generated from these descriptions
(``python -m service.settings``; a test keeps the doc in step).
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from lda.config import DEFAULTS, LearnerConfig, SamplerName
from lda.config import Backend as GibbsBackend
from lda.config import Method as GibbsMethod
from service import keys

Part = TypeVar("Part")
DeviceName = Literal["auto", "cpu", "cuda"]
PREFIX = "STREAMLDA_"
SECRET_FIELDS = {"admin_token", "redis_url"}  # never written to checkpoints
# The longest article a source accepts, bytes of raw text (why: docs/defaults.md); the sources
# use it where no setting is given.
MAX_ARTICLE_BYTES = 4 * 1024 * 1024


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
        default=10_000.0,
        gt=0,
        description="Strength of a topic's seed words when none is given: raw pseudo-counts "
        "added to alpha at each seed word of the topic",
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


class StoreSettings(Group):
    """Where state is kept: Redis and the data directory."""

    data_dir: Path = Field(
        default=Path("data"), description="Checkpoints and the embedded Redis's files"
    )
    redis_url: str | None = Field(
        default=None, description="Redis URL; unset with `up`: embedded Redis"
    )
    queue_timeout: float = Field(
        default=10.0,
        gt=0,
        description="Seconds before a Redis command of the scraper or queue fails",
    )
    redis_retry_first: float = Field(
        default=0.5, gt=0, description="First wait (s) before reconnecting to an unavailable Redis"
    )
    redis_retry_max: float = Field(
        default=2.0,
        gt=0,
        description="Longest wait (s) between reconnection attempts to Redis: learning and "
        "scraping resume within this of Redis answering again",
    )


class QueueSettings(Group):
    """The stream of articles in Redis, shared by the scrapers and the workers."""

    stream: str = Field(default=keys.DEFAULT_STREAM, description="Redis stream of articles")
    group: str = Field(default=keys.DEFAULT_GROUP, description="Consumer group of the workers")
    stream_high_water: int = Field(
        default=5000,
        ge=1,
        description="Unread stream entries (not yet read by a worker): scrapers wait",
    )
    claim_after_ms: int = Field(
        default=60_000, ge=100, description="Reclaim entries pending this long"
    )
    dedupe_key: str = Field(
        default=keys.DEFAULT_DEDUPE_KEY, description="Redis set of page ids ever queued"
    )
    counters_key: str = Field(
        default=keys.DEFAULT_COUNTERS_KEY, description="Redis hash of the scrapers' counters"
    )
    backpressure_poll: float = Field(
        default=1.0, gt=0, description="Seconds between checks of a full stream (scraper waiting)"
    )
    heldout_key: str = Field(
        default=keys.DEFAULT_HELDOUT_KEY,
        description="Redis list of the held-out articles (survives restarts)",
    )


class ScraperSettings(Group):
    """The scrapers: where articles come from, and how fast."""

    source: str = Field(default="wikipedia", description="wikipedia, dump:PATH or jsonl:PATH")
    wikipedia_api_url: str = Field(
        default="https://en.wikipedia.org/w/api.php", description="MediaWiki Action API endpoint"
    )
    contact: str = Field(
        default="streamlda-operator@example.org", description="Contact put in the User-Agent"
    )
    rate: float = Field(default=1.0, gt=0, description="Maximum API requests per second")
    replay_rate: float | None = Field(
        default=None,
        gt=0,
        description="Articles per second a jsonl: or dump: source yields, to replay a live "
        "stream's pace (unset: as fast as the queue takes them)",
    )
    max_article_bytes: int = Field(
        default=MAX_ARTICLE_BYTES,
        ge=1024,
        description="Longest article a source accepts, in bytes of raw text: a longer line or "
        "page is skipped as too_large, never held whole (why 4 MiB: docs/defaults.md)",
    )
    request_timeout: float = Field(
        default=30.0, gt=0, description="Seconds before an API request fails"
    )
    max_retries: int = Field(default=8, ge=0, description="Retries of a failing API request")
    articles_per_request: int = Field(
        default=50, ge=1, le=500, description="Random articles per request"
    )
    maxlag: int = Field(
        default=5, ge=0, description="MediaWiki maxlag: back off when replicas lag more"
    )
    retry_backoff: float = Field(
        default=2.0,
        gt=0,
        description="First wait (s) of the exponential backoff between API retries",
    )
    retry_backoff_max: float = Field(
        default=120.0,
        gt=0,
        description="Longest wait (s) between API retries, Retry-After excepted",
    )
    source_down_after_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds a source may fail without answering before the scraper reports it "
        "unreachable (an ERROR, and a status on /stats and the page)",
    )


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
    export_docs: int = Field(
        default=2_000,
        ge=0,
        description="Learned documents whose length and topic shares the worker keeps (a "
        "uniform sample) for the exported model's document view",
    )


class UpSettings(Group):
    """`up`, the supervisor of every process on one machine."""

    workers: int = Field(
        default=1, ge=1, description="up: worker ranks learning one model together (torchrun)"
    )
    stop_timeout_s: float = Field(
        default=60.0, gt=0, description="`up`: seconds each child gets to exit before it is killed"
    )
    redis_start_timeout_s: float = Field(
        default=10.0, gt=0, description="`up`: seconds the embedded Redis gets to answer PING"
    )
    restart_delay_first_s: float = Field(
        default=1.0,
        gt=0,
        description="`up`: wait (s) before restarting a crashed child; doubles per crash",
    )
    restart_delay_max_s: float = Field(
        default=60.0, gt=0, description="`up`: longest wait (s) before a restart"
    )
    restart_stable_s: float = Field(
        default=10.0,
        gt=0,
        description="`up`: a child that ran at least this long before it died starts again "
        "after the first wait; only one dying sooner (a crash loop) waits longer each time",
    )


class ApiSettings(Group):
    """The HTTP API and its page."""

    host: str = Field(default="127.0.0.1", description="API bind address")
    port: int = Field(default=8000, ge=1, le=65535, description="API port")
    api_workers: int = Field(
        default=1,
        ge=1,
        description="API processes serving one port (uvicorn workers; the API keeps no state "
        "beyond its cache of Redis)",
    )
    cors_origins: list[str] = Field(default_factory=list, description="Origins allowed by CORS")
    admin_token: str | None = Field(
        default=None, description="Bearer token of admin endpoints (off if unset)"
    )
    max_infer_bytes: int = Field(default=1_000_000, ge=1, description="Largest /infer body")
    max_infer_texts: int = Field(
        default=1_000,
        ge=1,
        description="Most texts in one /infer/batch (more: 422), which bounds its answer: one "
        "/infer answer each",
    )
    infer_concurrency: int = Field(
        default=1,
        ge=1,
        description="/infer inference threads per API process (each splitting its batch over "
        "infer_threads threads); the requests waiting for one are inferred together as one batch",
    )
    infer_threads: int | None = Field(
        default=None,
        ge=1,
        description="threads each batch's fixed points are split over (unset: the cores this "
        "process may use over infer_concurrency; their product should fit the cores: more only "
        "make them compete)",
    )
    infer_queue: int = Field(
        default=64,
        ge=1,
        description="/infer requests taken at once (sending their body, waiting or running; "
        "each holds at most max_infer_bytes); more get 503 with Retry-After at once",
    )
    infer_retry_after_s: int = Field(
        default=1,
        ge=0,
        description="Retry-After (s) of a /infer refused because infer_queue are taken",
    )
    body_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Seconds a client gets to send a request body; a slower one gets 408 and "
        "frees its place",
    )
    api_refresh_s: float = Field(
        default=0.25,
        gt=0,
        description="Seconds between the API's checks of Redis: how stale topics, perplexity, "
        "stats and metrics may be",
    )
    render_cache: int = Field(
        default=256,
        ge=1,
        description="Responses kept rendered per snapshot (distinct ?top=, ?estimate= and topic "
        "ids)",
    )
    infer_iterations: int = Field(default=100, ge=1, description="Fixed-point iterations of /infer")
    infer_tolerance: float = Field(
        default=1e-6, gt=0, description="/infer stops once no topic proportion moves more than this"
    )
    redis_timeout: float = Field(
        default=2.0, gt=0, description="Seconds before an API call to Redis fails (then 503)"
    )
    page_refresh_s: float = Field(
        default=5.0, gt=0, description="Seconds between refreshes of the page /"
    )
    topic_name_max: int = Field(
        default=100, ge=1, description="Longest topic name an operator may set, in characters"
    )
    seed_words_max: int = Field(
        default=20, ge=1, description="Most seed words an operator may give one topic"
    )
    seed_strength_max: float = Field(
        default=1e9, gt=0, description="Largest seed strength an operator may set (pseudo-counts)"
    )
    access_log: bool = Field(
        default=False,
        description="Log every HTTP request (a line each: costly under hundreds of pollers)",
    )

    @property
    def inference_threads(self) -> int:
        """Threads each /infer batch is split over: the setting, else this process's cores
        shared by the infer_concurrency inference threads (a single text is never split)."""
        if self.infer_threads is not None:
            return self.infer_threads
        usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        cores = len(usable) if usable else (os.cpu_count() or 1)
        return max(1, cores // self.infer_concurrency)


class _FlatEnvironment(PydanticBaseSettingsSource):
    """Each group's fields from STREAMLDA_<FIELD>: the groups nest, their variables stay flat."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: each group is read whole in __call__

    def __call__(self) -> dict[str, Any]:
        return {
            name: EnvSettingsSource(cast(type[BaseSettings], group), env_prefix=PREFIX)()
            for name, group in GROUPS.items()
        }


class Settings(BaseSettings):
    """All settings of streamlda, validated once at start-up; each part is handed its group or
    the few values it reads (:meth:`part`)."""

    model_config = SettingsConfigDict(extra="ignore")

    model: ModelSettings = Field(default_factory=ModelSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    queue: QueueSettings = Field(default_factory=QueueSettings)
    scraper: ScraperSettings = Field(default_factory=ScraperSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    publish: PublishSettings = Field(default_factory=PublishSettings)
    up: UpSettings = Field(default_factory=UpSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)

    if TYPE_CHECKING:  # settings are given by their flat names (topics=5) or by group

        def __init__(self, **values: Any) -> None: ...

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The values given (flags, code) over the environment's flat variables."""
        return init_settings, _FlatEnvironment(settings_cls)

    @model_validator(mode="before")
    @classmethod
    def _group(cls, data: Any) -> Any:
        """Settings given by their flat names (``topics=5``) moved into their groups, over the
        environment's values there."""
        if not isinstance(data, dict):
            return data
        grouped = {key: value for key, value in data.items() if key not in GROUP_OF}
        for name, value in data.items():
            if name in GROUP_OF:
                group = GROUP_OF[name]
                grouped[group] = {**dict(grouped.get(group) or {}), name: value}
        return grouped

    def value(self, name: str) -> Any:
        """The setting ``name`` (its flat name, as in STREAMLDA_<NAME>), from its group."""
        return getattr(getattr(self, GROUP_OF[name]), name)

    def flat(self) -> dict[str, Any]:
        """Every setting by its flat name, as JSON values."""
        return {
            name: value
            for group in GROUPS
            for name, value in getattr(self, group).model_dump(mode="json").items()
        }

    def given(self) -> set[str]:
        """The flat names of the settings that were set (by the environment, a flag or code)
        rather than left to their defaults."""
        return {name for group in GROUPS for name in getattr(self, group).model_fields_set}

    def updated(self, **values: Any) -> Settings:
        """A copy with the settings named (flat names) replaced, unvalidated as by model_copy,
        and counted as given."""
        unknown = values.keys() - GROUP_OF.keys()
        if unknown:
            raise TypeError(f"no setting {sorted(unknown)}")
        changes: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            changes.setdefault(GROUP_OF[name], {})[name] = value
        return self.model_copy(
            update={
                group: getattr(self, group).model_copy(update=change)
                for group, change in changes.items()
            }
        )

    def recorded(self) -> dict[str, Any]:
        """The settings as stored with a model: everything but secrets (tokens, Redis URLs
        that may carry a password), since checkpoints get copied around."""
        return {name: value for name, value in self.flat().items() if name not in SECRET_FIELDS}

    def part(self, kind: type[Part], **given: Any) -> Part:
        """The frozen config dataclass ``kind`` of one part, from the settings of the same
        names (and ``given``, the fields that are not settings as they are, e.g. a rank's
        consumer name): the commands hand each part only what it reads, never the whole."""
        names = {f.name for f in fields(kind)}  # type: ignore[arg-type]
        if not given.keys() <= names:
            raise TypeError(f"{kind.__name__} has no field {sorted(given.keys() - names)}")
        values = {name: given[name] if name in given else self.value(name) for name in names}
        return kind(**values)


# Each group of Settings by its field name, and each setting's group by the setting's name.
GROUPS: dict[str, type[Group]] = {
    name: cast(type[Group], info.annotation) for name, info in Settings.model_fields.items()
}
GROUP_OF: dict[str, str] = {
    name: group for group, kind in GROUPS.items() for name in kind.model_fields
}


HEADER = "| environment variable | default | meaning |"


def settings_table() -> str:
    """docs/settings.md's tables, a section per group: variable, default and meaning of every
    setting."""
    sections = []
    for group, kind in GROUPS.items():
        title = (kind.__doc__ or "").strip().splitlines()[0]
        lines = [f"### {title.rstrip('.')} (`settings.{group}`)", "", HEADER, "|---|---|---|"]
        for name, info in kind.model_fields.items():
            lines.append(f"| `{PREFIX}{name.upper()}` | {_shown(info)} | {info.description} |")
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


def _shown(info: FieldInfo) -> str:
    """A setting's default as the docs show it."""
    default = info.get_default(call_default_factory=True)
    if default is None:
        return "unset"
    if isinstance(default, float) and default.is_integer() and default >= 1000:
        return f"`{int(default)}`"
    return f"`{default}`"


if __name__ == "__main__":
    print(settings_table())
