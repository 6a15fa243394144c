"""The published model, loaded once per version and shared by every request of a process."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import redis

from lda.tokens import WordIndex
from service.api.infer.proportions import word_columns
from service.api.reads.relevance import Rankings
from service.api.reads.word_topics import Ranked
from service.api.search.index import SearchIndex
from service.store.published_model import PublishedModel, read_model, read_model_version
from service.store.search import index_rows

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedModel:
    """A published model with its vocabulary's lookup table ready for encoding and its beta
    laid out for batched inference."""

    model: PublishedModel
    words: WordIndex
    columns: np.ndarray  # word_columns(beta)
    relevance: Rankings  # the topics' words by relevance, per lam asked for
    search: LazyIndex  # the kept articles published with it, built on the first search
    word_ranks: dict[int, Ranked] = field(default_factory=dict)  # /words' answers, this model's


class LazyIndex:
    """The kept articles' index of one model version, parsed and built when a search first asks
    (``/infer`` never waits for it, nor fails with it)."""

    def __init__(
        self,
        fields: Mapping[str, Any] | None,
        n_topics: int,
        numbers: tuple[int, ...] | None = None,
    ) -> None:
        self.fields = fields
        self.n_topics = n_topics
        self.numbers = numbers  # each topic's number while topics move
        self._lock = threading.Lock()
        self._index: SearchIndex | None = None

    def get(self) -> SearchIndex | None:
        """The index (None: the model came without one, or with one that cannot be read)."""
        with self._lock:
            if self._index is None and self.fields is not None:
                try:
                    rows = index_rows(self.fields, self.n_topics)
                except (ValueError, TypeError, KeyError) as exc:  # JSON errors are ValueErrors
                    log.warning("the published index cannot be read: %s", exc)
                    rows = None
                self.fields = None  # read once
                self._index = None if rows is None else SearchIndex(rows, self.numbers)
            return self._index


class ModelCache:
    """Holds the latest model; each call costs one HGET unless the version changed.
    ``ranked_words``: words per topic its relevance rankings keep (the setting topic_words)."""

    def __init__(self, ranked_words: int = 100) -> None:
        self.ranked_words = ranked_words
        self._lock = threading.Lock()
        self._loaded: LoadedModel | None = None
        self.loads = 0

    def get(self, client: redis.Redis) -> LoadedModel | None:
        """The current model, reloading it only when the worker published a new version."""
        version = read_model_version(client)
        if version is None:
            return None
        with self._lock:
            if self._loaded is None or self._loaded.model.version != version:
                # Let the old model go before the new one arrives (requests that hold it
                # keep it until they finish): two K x W models never sit in the cache at once.
                self._loaded = None
                model = read_model(client)
                if model is None:
                    return None
                self._loaded = LoadedModel(
                    model,
                    WordIndex(model.vocab),
                    word_columns(model.beta),
                    Rankings(model, self.ranked_words),
                    LazyIndex(model.index_fields, model.n_topics, model.topic_ids),
                )
                self.loads += 1
            return self._loaded
