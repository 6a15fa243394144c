"""``POST /infer``: topic proportions of a new text under the published beta.

Runs in the app's own pool of ``infer_concurrency`` threads; ConcurrencyLimitMiddleware refuses
more requests than that (503, Retry-After) before reading their bodies, so memory stays bounded
and nothing else (``/healthz`` included) waits for it.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import redis
import torch
from fastapi import APIRouter, HTTPException, Request, status

from lda.inference import infer_topics
from service.api.deps import ModelCacheDep, RedisDep, SettingsDep
from service.api.model_cache import ModelCache
from service.api.schemas import INVALID, ErrorOut, InferIn, InferOut, TopicWeightOut
from service.settings import Settings

router = APIRouter(tags=["infer"])


def _infer(text: str, client: redis.Redis, cache: ModelCache, settings: Settings) -> InferOut:
    loaded = cache.get(client)
    if loaded is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "no model yet: the worker has not published its first model",
        )
    ids, n_tokens = loaded.vocabulary.encode_counted(text)
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
        ignored_tokens=n_tokens - len(ids),
        proportions=proportions,
        topics=[TopicWeightOut(id=k, weight=proportions[k]) for k in ranked],
    )


@router.post(
    "/infer",
    response_model=InferOut,
    responses={
        400: {"model": ErrorOut, "description": "Content-Length is not a number"},
        413: {"model": ErrorOut, "description": "Body larger than the setting max_infer_bytes"},
        **INVALID,
        503: {
            "model": ErrorOut,
            "description": "Redis is unreachable, no model yet, or too many /infer requests "
            "in progress (then with Retry-After)",
        },
    },
)
async def infer(
    body: InferIn,
    request: Request,
    client: RedisDep,
    cache: ModelCacheDep,
    settings: SettingsDep,
) -> InferOut:
    """Tokenised as the learner does; words outside the vocabulary are ignored (and counted)."""
    pool: ThreadPoolExecutor = request.app.state.infer_pool
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(pool, _infer, body.text, client, cache, settings)
