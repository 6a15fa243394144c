"""The search routes' bodies and answers, as the OpenAPI schema shows them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from service.api.schemas import TopicWeightOut

SHARE_BOUND = (
    "How sure the model is that the article is about the topic: the lower end of a one-sided "
    "95% interval of its share given its length (docs/topics.md, 'How sure a share is'); the "
    "order of a topic's articles"
)


class ArticleShareOut(BaseModel):
    id: int = Field(description="Topic id")
    share: float = Field(description="The topic's share of the article's tokens")


class FoundArticleOut(BaseModel):
    """A kept article in a search's answer."""

    title: str
    id: str = Field(description="The article's id in its source (Wikipedia's page id)")
    source: str
    url: str | None = Field(description="The article on Wikipedia; null for a file source")
    tokens: int = Field(description="The article's tokens in the vocabulary")
    docs_seen: int = Field(
        description="Documents the learner had seen when the article's shares were computed "
        "(when it was learned, or last revisited)"
    )
    topics: list[ArticleShareOut] = Field(description="Its largest topic shares, largest first")
    distance: float | None = Field(
        None,
        description="Hellinger distance between its topic proportions and the query's, 0 to 1 "
        "(smaller: more alike; docs/topics.md); in similarity answers",
    )
    share: float | None = Field(None, description="Its share of the topic; in a topic's list")
    share_bound: float | None = Field(None, description=SHARE_BOUND + "; in a topic's list")


class TopicArticlesOut(BaseModel):
    topic: int
    model_version: str
    docs_seen: int = Field(description="Documents the model had seen when published")
    total: int = Field(description="Kept articles with this topic among their largest shares")
    offset: int
    articles: list[FoundArticleOut] = Field(description="Surest first (share_bound)")


LIMIT = 10  # articles answered unless limit says


class SimilarIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, description="Plain text, folded in as POST /infer does")
    limit: int = Field(LIMIT, ge=1, description="Articles to answer")

    @field_validator("limit", mode="before")
    @classmethod
    def a_number(cls, value: object) -> object:
        """A JSON number only (14.0 is the integer 14, as JSON Schema has it; "14" and true
        are not numbers), as the query's limit is digits only."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("limit must be a whole number")
        return value


def similar_in(most: int) -> type[SimilarIn]:
    """SimilarIn with ``limit`` at most ``most`` (the setting search_limit_max), in the schema:
    built per app, as the setting is."""
    bounded = Field(min(LIMIT, most), ge=1, le=most, description="Articles to answer")
    return create_model("SimilarIn", __base__=SimilarIn, limit=(int, bounded))


class SimilarOut(BaseModel):
    model_version: str
    docs_seen: int = Field(description="Documents the model had seen when published")
    tokens: int = Field(description="Tokens of the text found in the vocabulary")
    ignored_tokens: int = Field(description="Tokens outside the vocabulary")
    topics: list[TopicWeightOut] = Field(description="The text's largest topic proportions")
    articles: list[FoundArticleOut] = Field(description="Nearest first")


class ArticleSimilarOut(BaseModel):
    model_version: str
    docs_seen: int = Field(description="Documents the model had seen when published")
    article: FoundArticleOut = Field(description="The article asked about")
    articles: list[FoundArticleOut] = Field(description="Nearest first, itself left out")
