"""Request and response bodies of the API (they are also its OpenAPI schema)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictStr, create_model

from lda.config import Estimate

ESTIMATE = (
    "Which estimate of the topics: mean (beta_mean, the exponential mean of the chain's recent "
    "samples, setting mean_decay: the topics served) or sample (the chain's current sample)"
)


def timestamp(unix: float | None) -> datetime | None:
    """A unix time from Redis as an aware UTC datetime (ISO 8601 in JSON)."""
    return None if unix is None else datetime.fromtimestamp(unix, tz=UTC)


class ErrorOut(BaseModel):
    detail: str = Field(description="What went wrong, for a person")


class ValidationItemOut(BaseModel):
    loc: list[str | int] = Field(description='Where: e.g. ["query", "top"]')
    msg: str
    type: str


class ValidationErrorOut(BaseModel):
    """The body of every 422 (service/api/http/errors.py)."""

    detail: str = Field(description="Every problem in one sentence, for a person")
    errors: list[ValidationItemOut]


UNCERTAINTY = (
    "Add each word's low and high: the 5% and 95% quantiles of its weight over the chain's "
    "recent samples (setting uncertainty_samples); wide means the data has not pinned it down"
)
VOCAB_VERSION = (
    "The vocabulary's version: 0 the first, one more at each refresh of the worker's word list"
)
SORT = "Order of the topics: id, coherence or size (highest first, topics without one last)"
RELEVANCE = (
    "Rank each topic's words by relevance with this lambda, 0 to 1 (rounded to 2 decimals): "
    "lambda * log p(w|k) + (1 - lambda) * log(p(w|k) / p(w)), p(w) the word's share of the "
    "stream; 1 is probability order, lower favours words peculiar to the topic. Absent: by "
    "probability. Ranks the published model's beta_mean, so not with estimate=sample"
)


class WordOut(BaseModel):
    word: str
    weight: float = Field(description="beta[k, w], the word's probability in the topic")
    low: float | None = Field(
        None, description="5% quantile of the weight over recent samples (?uncertainty=true)"
    )
    high: float | None = Field(
        None, description="95% quantile of the weight over recent samples (?uncertainty=true)"
    )


class TopicOut(BaseModel):
    id: int
    words: list[WordOut]
    coherence: float | None = Field(
        None,
        description="NPMI coherence of the top 10 words of beta_mean in the held-out documents, "
        "in [-1, 1], at the latest evaluation (null before one)",
    )
    drift: float | None = Field(
        None,
        description="Jensen-Shannon divergence (bits, 0 to 1) of the topic since the evaluation "
        "before, topics matched across the two (null for the first)",
    )
    size: float | None = Field(
        None,
        description="The topic's share of the stream's tokens (the topics' sum to 1; null from "
        "a worker that does not measure it)",
    )
    name: str | None = Field(None, description="The name an operator gave the topic, or null")
    suggested_name: str = Field(
        description="The topic's first three words by relevance (lambda 0.6) in the published "
        "model, joined by ' · ' (by probability before a model)"
    )
    seeds: list[str] = Field(
        default_factory=list,
        description="The seed words an operator gave the topic, in effect (empty: none)",
    )
    seeds_in_top: list[str] = Field(
        default_factory=list,
        description="Those of its seeds among its top words in the snapshot (the setting "
        "topic_words of beta_mean)",
    )


_RELEVANCE_OUT = "The lambda the words are ranked by relevance with; null: by probability"


class TopicsOut(BaseModel):
    docs_seen: int
    updated_at: datetime
    sampler: str
    estimate: Estimate = Field(description=ESTIMATE)
    relevance: float | None = Field(None, description=_RELEVANCE_OUT)
    quality_docs: int | None = Field(
        None, description="Documents seen at the evaluation that coherence and drift come from"
    )
    topics: list[TopicOut]


class ArticleOut(BaseModel):
    """An article behind a topic."""

    title: str
    id: str = Field(description="The article's id in its source (Wikipedia's page id)")
    source: str = Field(description="Where it came from: wikipedia, or a file source")
    share: float = Field(description="The topic's share of the article's tokens when learned")
    share_bound: float | None = Field(
        None,
        description="How sure the model is that the article is about the topic: the lower end "
        "of a one-sided 95% interval of its share given its length, which (aged) orders the list "
        "(docs/topics.md); null from an older worker",
    )
    tokens: int | None = Field(None, description="The article's tokens in the vocabulary")
    docs_seen: int = Field(description="Documents seen when the article was learned")
    url: str | None = Field(description="The article on Wikipedia; null for a file source")


class OneTopicOut(TopicOut):
    docs_seen: int
    updated_at: datetime
    sampler: str
    estimate: Estimate = Field(description=ESTIMATE)
    relevance: float | None = Field(None, description=_RELEVANCE_OUT)
    quality_docs: int | None = Field(
        None, description="Documents seen at the evaluation that coherence and drift come from"
    )
    changed_at_docs: int | None = Field(
        None,
        description="Documents seen at the last evaluation where the topic moved more than "
        "0.05 bits (or was first evaluated)",
    )
    articles: list[ArticleOut] = Field(
        default_factory=list,
        description="The articles most about the topic, most first (docs/topics.md)",
    )


class TopicHistoryPointOut(BaseModel):
    """One topic at one evaluation."""

    docs_seen: int
    at: datetime
    size: float | None = Field(
        description="The topic's share of the stream's tokens (null: the worker keeps no sizes)"
    )
    coherence: float | None = Field(description="NPMI coherence (null without held-out data)")
    drift: float | None = Field(description="Bits moved since the evaluation before")
    changed: bool = Field(description="Whether it moved more than 0.05 bits since then")
    words: list[str] = Field(description="Its top words, most probable first")


class TopicHistoryOut(BaseModel):
    """A topic over the evaluations kept (the setting topic_history)."""

    id: int
    points: list[TopicHistoryPointOut] = Field(description="One per evaluation, oldest first")


class MovedAtOut(BaseModel):
    docs_seen: int = Field(description="Documents seen when it happened")
    at: datetime


class TopicGoneOut(BaseModel):
    """The 410 of a topic number that is gone: merged into another topic, or retired."""

    detail: str
    id: int
    merged_into: int | None = Field(
        description="The topic it was merged into, followed through later merges (null: it "
        "was retired)"
    )
    merged_at: MovedAtOut | None = Field(description="When it was merged (null: retired)")
    retired_at: MovedAtOut | None = Field(description="When it was retired (null: merged)")


class TopicEventOut(BaseModel):
    """One move of the topics."""

    kind: Literal["birth", "merge", "retire"]
    docs_seen: int = Field(description="Documents seen when it was made")
    at: datetime
    topics: list[int] = Field(
        description="birth: the new number; merge: the kept one, then the one merged away; "
        "retire: the retired one"
    )
    before: list[list[str]] = Field(description="Their top words before (none for a birth)")
    after: list[list[str]] = Field(description="The kept or born topic's top words after")


class TopicEventsOut(BaseModel):
    """The topics' moves, newest first (``GET /topics/events``)."""

    total: int = Field(description="Moves made since the model began")
    kept: int = Field(description="Moves still listed (the oldest are dropped beyond a bound)")
    offset: int
    limit: int
    totals: dict[str, int] = Field(description="Moves made, by kind: birth, merge, retire")
    live: int | None = Field(description="Live topics now (null: K is fixed, nothing moves)")
    events: list[TopicEventOut]


class TopicNameOut(BaseModel):
    id: int
    name: str | None = Field(description="The topic's name now (null: none)")


class SeedsIn(BaseModel):
    """A topic's seeds as an operator gives them: unknown fields refused, the strength a JSON
    number (not text, not a boolean) and finite; the bounds come from the settings
    (:func:`seeds_in`)."""

    model_config = ConfigDict(extra="forbid")

    words: list[StrictStr]
    strength: StrictFloat | None = None


def seeds_in(most: int, word_chars: int, weakest: float, strongest: float) -> type[SeedsIn]:
    """SeedsIn with 1 to ``most`` words of at most ``word_chars`` characters each and a strength
    of ``weakest`` to ``strongest``, in the schema: built per app, as the settings are."""
    word = Annotated[StrictStr, Field(max_length=word_chars)]
    words = Field(
        min_length=1,
        max_length=most,
        description=f"1 to {most} words (the setting seed_words_max) of at most {word_chars} "
        "characters, before and after they are tokenised as the learner's words are",
    )
    strength = Field(
        None,
        ge=weakest,
        le=strongest,
        allow_inf_nan=False,
        description=f"The percent of an average topic's tokens each seed word's pseudo-counts "
        f"stand for, a finite number from {weakest:g} to {strongest:g} (the setting "
        "seed_strength_max); default: the setting seed_strength",
    )
    return create_model(
        "SeedsIn",
        __base__=SeedsIn,
        words=(list[word], words),
        strength=(StrictFloat | None, strength),
    )


class TopicSeedsOut(BaseModel):
    id: int
    words: list[str] = Field(
        description="The topic's seed words now, as the learner tokenises them (empty: none); "
        "the worker puts them in effect at its next step"
    )
    strength: float | None = Field(
        description="Their strength: the percent of an average topic's tokens each seed word's "
        "pseudo-counts stand for (null: none)"
    )


class PerplexityPointOut(BaseModel):
    docs_seen: int
    perplexity: float = Field(description="Held-out perplexity of the topics served (beta_mean)")
    perplexity_avg: float = Field(description="Perplexity of the posterior-averaged predictive")
    coherence: float | None = Field(
        None,
        description="Mean NPMI coherence of the topics' top 10 words in the held-out documents "
        "(-1 to 1; null from workers before it existed)",
    )
    diversity: float | None = Field(
        None, description="Share of distinct words among all topics' top 25 (0 to 1)"
    )
    vocab_version: int | None = Field(
        None,
        description="The version of the vocabulary the topics scored had (null from workers "
        "before versions existed): perplexities under different vocabularies do not compare",
    )
    at: datetime


class PerplexityOut(BaseModel):
    latest: PerplexityPointOut | None = Field(description="Point with the most documents seen")
    history: list[PerplexityPointOut] = Field(description="Points after ?since=, oldest first")


class QueueOut(BaseModel):
    stream: str
    group: str
    length: int = Field(description="Entries in the stream")
    pending: int = Field(description="Entries delivered to a worker and not yet acknowledged")


class SourceOut(BaseModel):
    source: str = Field(description="Which source (wikipedia)")
    host: str = Field(description="Where it is fetched from")
    state: str = Field(description="unreachable (a source that answers is not listed)")
    since: datetime = Field(description="First failure of the run")
    cause: str = Field(description="The last failure, in words")
    message: str = Field(description="The operator's line: source unreachable since ...: cause")


class StatsOut(BaseModel):
    docs_seen: int
    docs_per_s: float | None = Field(description="Training throughput; 0 while the worker idles")
    worker_state: str | None = Field(
        None,
        description="learning, paused, or 'idle, queue empty since <time>' (null before the "
        "first snapshot)",
    )
    world_size: int = Field(description="Worker ranks learning one model (torchrun)")
    rank_docs_per_s: list[float] = Field(
        description="Each rank's own documents per second, in rank order (one entry per rank)"
    )
    tokens_per_s: float | None
    fresh_docs_per_s: float | None = Field(
        None, description="Fresh articles learned a second over the last minute (wall time)"
    )
    revisit_docs_per_s: float | None = Field(
        None,
        description="Articles learned again a second over the last minute: revisits while "
        "nothing fresh is unread",
    )
    fresh_wait_s: float | None = Field(
        None,
        description="Seconds from a fresh article's arrival in the queue to the end of the step "
        "that learned it: the median over the last minute (null when none was learned in it)",
    )
    fresh_wait_p95_s: float | None = Field(
        None, description="The same wait's 95th percentile over the last minute"
    )
    reservoir_articles: int | None = Field(
        None, description="Articles held for revisits, a uniform sample of those learned"
    )
    reservoir_passes: float | None = Field(
        None, description="Revisits per held article so far, on average"
    )
    sampler: str | None
    step_size: float | None
    device: str | None
    topics: int | None = Field(description="K")
    vocab_size: int | None = Field(description="W")
    vocab_version: int | None = Field(
        None, description=f"{VOCAB_VERSION} (null before the first snapshot)"
    )
    updated_at: datetime | None = Field(description="Time of the last update")
    heartbeat_at: datetime | None = Field(description="Last sign of life of the worker")
    heartbeat_age_s: float | None
    checkpoint_at: datetime | None = Field(None, description="When the last checkpoint was written")
    paused: bool
    checkpoint_seq: int = Field(description="Checkpoints requested through /admin/checkpoint")
    worker: dict[str, int] = Field(description="The worker's own counters")
    queue: QueueOut
    scraper: dict[str, int | float] = Field(
        description="The scrapers' counters, summed over every scraper (see service.ingest.queue)"
    )
    sources: list[SourceOut] = Field(
        default_factory=list, description="Sources the scrapers report unreachable"
    )


class InferIn(BaseModel):
    text: str = Field(min_length=1, description="Plain text of a document")


TEXTS = (
    "Plain texts of documents (at most the setting max_infer_texts, the whole body within "
    "max_infer_bytes); inferred together, each as POST /infer would alone"
)
Text = Annotated[str, Field(min_length=1)]


class InferBatchIn(BaseModel):
    texts: list[Text] = Field(min_length=1, description=TEXTS)


def infer_batch_in(most: int) -> type[InferBatchIn]:
    """InferBatchIn of at most ``most`` texts (the setting max_infer_texts), the bound in the
    schema as ``maxItems``: built per app, as the setting is."""
    bounded = Field(min_length=1, max_length=most, description=TEXTS)
    return create_model("InferBatchIn", __base__=InferBatchIn, texts=(list[Text], bounded))


class TopicWeightOut(BaseModel):
    id: int
    weight: float


class InferOut(BaseModel):
    model_version: str
    vocab_version: int = Field(
        description=f"{VOCAB_VERSION}; the one of the model whose words encoded the text"
    )
    docs_seen: int = Field(description="Documents the model had seen when published")
    topic_ids: list[int] | None = Field(
        None,
        description="While topics move: the number of each entry of proportions (absent while "
        "K is fixed, when entry k is topic k)",
    )
    tokens: int = Field(description="Tokens of the text found in the vocabulary")
    ignored_tokens: int = Field(description="Tokens outside the vocabulary")
    proportions: list[float] = Field(description="pi[k], indexed by topic id (see topic_ids)")
    topics: list[TopicWeightOut] = Field(description="The same, heaviest topic first")


class InferBatchOut(BaseModel):
    results: list[InferOut] = Field(description="One answer per text, in the order given")


class HealthOut(BaseModel):
    status: str


class ReadyOut(BaseModel):
    status: str
    model_version: str | None = Field(description="Model /infer uses; null before the first")
    docs_seen: int = Field(description="Documents seen by the snapshot being served")


class AdminOut(BaseModel):
    paused: bool
    checkpoint_seq: int


# Documented error responses, shared by the routes (every one of them can really happen).
class WordTopicOut(BaseModel):
    topic: int = Field(description="Topic id, 0 to K-1")
    rank: int = Field(description="The word's place in the topic, 1 for its most probable word")
    probability: float = Field(description="p(word | topic) in the published beta")
    top_words: list[str] = Field(description="The topic's most probable words, for context")


class WordTopicsOut(BaseModel):
    """The topics a word ranks highest in (``GET /words/{word}/topics``)."""

    word: str = Field(description="The word as the vocabulary holds it")
    word_id: int
    model_version: str
    docs_seen: int = Field(description="Documents the published model had learned")
    topics: list[WordTopicOut] = Field(description="Best rank first, ties by probability")


INVALID: dict[int | str, dict[str, object]] = {
    422: {"model": ValidationErrorOut, "description": "Invalid parameters or body"}
}
UNAVAILABLE: dict[int | str, dict[str, object]] = {
    503: {"model": ErrorOut, "description": "Redis is unreachable, or nothing published yet"}
}
GONE: dict[int | str, dict[str, object]] = {
    410: {"model": TopicGoneOut, "description": "A topic number that was merged or retired"}
}
# A body's own errors (service/api/http/body_limits.py), on the routes other than /infer's.
BODY_ERRORS: dict[int | str, dict[str, object]] = {
    400: {"model": ErrorOut, "description": "Content-Length is not a number, or not UTF-8"},
    408: {"model": ErrorOut, "description": "The body did not arrive within body_timeout_s"},
    413: {"model": ErrorOut, "description": "Body larger than the longest name needs"},
}
