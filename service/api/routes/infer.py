"""``POST /infer`` and ``POST /infer/batch``: topic proportions of new texts under the
published beta.

A batch is inferred together (one batched fixed point, :mod:`service.api.infer.proportions`),
and each of its answers is the one ``/infer`` gives that text alone. The body is read (within
the settings max_infer_bytes and body_timeout_s, :mod:`service.api.http.body_limits`) before the
work waits for one of the app's ``infer_concurrency`` threads, which takes every request waiting
then as one batch (:mod:`service.api.infer.batcher`); :mod:`service.api.infer.admission` refuses
requests beyond ``infer_queue`` (503, Retry-After) before reading their bodies, so memory stays
bounded and nothing else (``/healthz`` included) waits for it. A batch holds at most the setting
max_infer_texts texts, so its answer is bounded too.

Built per app by :func:`router`, because that bound belongs in the OpenAPI schema. (No
``from __future__ import annotations`` here: the batch route's body is the model built for that
bound, which string annotations could not resolve.)
"""

import json
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import redis
from fastapi import APIRouter, HTTPException, Response, status

from lda.topic_ids import saved
from service.api.deps import BatcherDep
from service.api.http.etags import JSON
from service.api.infer.model_cache import LoadedModel, ModelCache
from service.api.infer.proportions import proportions
from service.api.schemas import (
    INVALID,
    ErrorOut,
    InferBatchOut,
    InferIn,
    InferOut,
    ValidationErrorOut,
    infer_batch_in,
)

NUMPY = orjson.OPT_SERIALIZE_NUMPY

ERRORS: dict[int | str, dict[str, object]] = {
    400: {
        "model": ErrorOut,
        "description": "Content-Length is not a number, or the body is not UTF-8",
    },
    408: {
        "model": ErrorOut,
        "description": "The body did not arrive within the setting body_timeout_s",
    },
    413: {"model": ErrorOut, "description": "Body larger than the setting max_infer_bytes"},
    **INVALID,
    503: {
        "model": ErrorOut,
        "description": "Redis is unreachable, no model yet, or too many /infer requests "
        "waiting (then with Retry-After)",
    },
}

BATCH_ERRORS: dict[int | str, dict[str, object]] = {
    **ERRORS,
    422: {
        "model": ValidationErrorOut,
        "description": "Invalid body, or more texts than the setting max_infer_texts",
    },
}


@dataclass(frozen=True)
class Folded:
    """Texts folded in under one model: their proportions (n, K) and each text's tokens used
    and ignored (outside the vocabulary)."""

    loaded: LoadedModel
    pi: np.ndarray
    tokens: list[tuple[int, int]]


def fold_in(
    texts: Sequence[str],
    client: redis.Redis,
    cache: ModelCache,
    *,
    iterations: int,
    tolerance: float,
    threads: int = 1,
    helpers: Executor | None = None,
) -> Folded:
    """The texts' topic proportions under the current model, all inferred together (one batch:
    at most ``iterations`` of the fixed point, to ``tolerance``), its documents split over
    ``threads`` threads (this one and ``helpers``); 503 before the first model."""
    loaded = cache.get(client)
    if loaded is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "no model yet: the worker has not published its first model",
        )
    ids, starts, tokens = loaded.words.encode(texts)
    pi = proportions(
        loaded.columns,
        ids,
        starts,
        loaded.model.gamma,
        iterations=iterations,
        tolerance=tolerance,
        helpers=helpers,
        parts=threads,
    )
    used = np.diff(starts)
    return Folded(loaded, pi, list(zip(used.tolist(), (tokens - used).tolist(), strict=True)))


def infer_texts(texts: Sequence[str], **fold: Any) -> list[bytes]:
    """Each text's answer under the current model (``InferOut`` as JSON); ``fold``:
    :func:`fold_in`'s arguments."""
    folded = fold_in(texts, **fold)
    model = folded.loaded.model
    # The model whose vocabulary encoded the texts names itself: its version and its words'.
    head = f'{{"model_version":{json.dumps(model.version)},'
    head += f'"vocab_version":{model.vocab_version},'
    head += f'"docs_seen":{model.docs_seen},'
    numbers = saved(model.topic_ids)
    if numbers is not None:  # topics move: proportions[k] is topic topic_ids[k]'s
        head += f'"topic_ids":{json.dumps(numbers)},'
    return answers(head, folded.tokens, folded.pi, model.topic_ids)


def answers(
    head: str,
    tokens: Sequence[tuple[int, int]],
    pi: np.ndarray,
    numbers: Sequence[int] | None = None,
) -> list[bytes]:
    """``InferOut`` JSON of each row of ``pi`` (its topics by weight, ties by id), written
    here, on the inference thread, without pydantic or a dict per topic: a batch's hundred
    answers of K topics cost more to validate and encode than to infer. Every float is
    orjson's shortest round-trip text, written once for the whole matrix (far cheaper than a
    ``repr`` each) and reused in the ranked list. ``head`` is the object's opening and model
    fields; ``tokens`` (used, ignored) per row; ``numbers``: each topic's number while topics
    move (None: topic k is number k)."""
    if not np.isfinite(pi).all():
        raise ValueError("non-finite topic proportions")  # as json.dumps(allow_nan=False)
    if pi.shape[0] == 0:
        return []
    k = pi.shape[1]
    ids = [b'{"id":%d,"weight":' % t for t in (range(k) if numbers is None else numbers)]
    ranked = np.argsort(-pi, axis=1, kind="stable").tolist()
    matrix = orjson.dumps(np.ascontiguousarray(pi, dtype=np.float64), option=NUMPY)
    rows = matrix[2:-2].split(b"],[")  # "[[a,b],[c,d]]": each row's "a,b"
    opening = head.encode()
    written = []
    for (used, ignored), row, order in zip(tokens, rows, ranked, strict=True):
        weights = row.split(b",")
        topics = b"},".join([ids[t] + weights[t] for t in order])
        written.append(
            b'%s"tokens":%d,"ignored_tokens":%d,"proportions":[%s],"topics":[%s}]}'
            % (opening, used, ignored, row, topics)
        )
    return written


def router(max_texts: int) -> APIRouter:
    """The inference routes, a batch bounded by ``max_texts`` texts (the setting
    max_infer_texts)."""
    routes = APIRouter(tags=["infer"])
    batch_in = infer_batch_in(max_texts)

    @routes.post("/infer", response_model=InferOut, responses=ERRORS)
    async def infer(body: InferIn, batcher: BatcherDep) -> Response:
        """Tokenised as the learner does; words outside the vocabulary are ignored (and
        counted)."""
        return Response((await batcher([body.text]))[0], media_type=JSON)

    @routes.post("/infer/batch", response_model=InferBatchOut, responses=BATCH_ERRORS)
    async def infer_many(body: batch_in, batcher: BatcherDep) -> Response:  # type: ignore[valid-type]
        """Many texts in one request, inferred together: one answer each, in order, each equal
        to ``/infer``'s for that text."""
        answers = await batcher(body.texts)  # type: ignore[attr-defined]
        return Response(b'{"results":[' + b",".join(answers) + b"]}", media_type=JSON)

    return routes
