"""``POST /infer``: topic proportions of a new text under the published beta."""

from __future__ import annotations

import torch
from fastapi import APIRouter, HTTPException, status

from lda.vocab import tokenize
from service.api.deps import ModelCacheDep, RedisDep, SettingsDep
from service.api.inference import infer_topics
from service.api.schemas import ErrorOut, InferIn, InferOut, TopicWeightOut

router = APIRouter(tags=["infer"])


@router.post(
    "/infer",
    response_model=InferOut,
    responses={413: {"model": ErrorOut}, 503: {"model": ErrorOut}},
)
def infer(body: InferIn, client: RedisDep, cache: ModelCacheDep, settings: SettingsDep) -> InferOut:
    """Tokenised as the learner does; words outside the vocabulary are ignored (and counted)."""
    loaded = cache.get(client)
    if loaded is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "no model yet: the worker has not published its first model",
        )
    tokens = tokenize(body.text)
    index = loaded.vocabulary.index
    ids = [index[t] for t in tokens if t in index]
    proportions = infer_topics(
        loaded.model.beta,
        torch.tensor(ids, dtype=torch.long),
        loaded.model.gamma,
        iterations=settings.infer_iterations,
        tolerance=settings.infer_tolerance,
    )
    ranked = sorted(range(len(proportions)), key=lambda k: -proportions[k])
    return InferOut(
        model_version=loaded.model.version,
        docs_seen=loaded.model.docs_seen,
        tokens=len(ids),
        ignored_tokens=len(tokens) - len(ids),
        proportions=proportions,
        topics=[TopicWeightOut(id=k, weight=proportions[k]) for k in ranked],
    )
