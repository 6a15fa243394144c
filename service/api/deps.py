"""Dependencies shared by the routes: settings, the Redis client, the view, the model cache,
the inference batcher."""

from __future__ import annotations

from typing import Annotated

import redis
from fastapi import Depends, Request

from service.api.batcher import Batcher
from service.api.model_cache import ModelCache
from service.api.view import State
from service.settings import Settings


def get_settings(request: Request) -> Settings:
    """The Settings the app was created with."""
    settings: Settings = request.app.state.settings
    return settings


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


SettingsDep = Annotated[Settings, Depends(get_settings)]
RedisDep = Annotated[redis.Redis, Depends(get_redis)]
ModelCacheDep = Annotated[ModelCache, Depends(get_model_cache)]
StateDep = Annotated[State, Depends(get_state)]
BatcherDep = Annotated[Batcher[bytes], Depends(get_batcher)]
