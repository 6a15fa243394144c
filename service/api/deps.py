"""Dependencies shared by the routes: the admin token, the Redis client, the view, the model
cache, the inference batcher."""

from __future__ import annotations

from typing import Annotated

import redis
from fastapi import Depends, Request

from service.api.http.admin_gate import admin_token_of
from service.api.infer.batcher import Batcher
from service.api.infer.model_cache import ModelCache
from service.api.reads.refresher import State


def get_admin_token(request: Request) -> str | None:
    """The setting admin_token the app was created with, stripped as a presented token is
    (None: admin routes are off)."""
    return admin_token_of(request.app.state.admin_token)


def get_redis(request: Request) -> redis.Redis:
    """The app's Redis client (one connection pool per process)."""
    client: redis.Redis = request.app.state.redis
    return client


def get_model_cache(request: Request) -> ModelCache:
    """The process's cache of the published model."""
    cache: ModelCache = request.app.state.model_cache
    return cache


def get_state(request: Request) -> State:
    """What the view holds now (read from memory: no Redis, no thread)."""
    state: State = request.app.state.view.state
    return state


def get_batcher(request: Request) -> Batcher[bytes]:
    """The app's inference threads, batching the requests that wait for them."""
    batcher: Batcher[bytes] = request.app.state.batcher
    return batcher


AdminTokenDep = Annotated[str | None, Depends(get_admin_token)]
RedisDep = Annotated[redis.Redis, Depends(get_redis)]
ModelCacheDep = Annotated[ModelCache, Depends(get_model_cache)]
StateDep = Annotated[State, Depends(get_state)]
BatcherDep = Annotated[Batcher[bytes], Depends(get_batcher)]
