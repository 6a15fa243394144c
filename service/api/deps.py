"""Dependencies shared by the routes: settings, the Redis client, the snapshot, ``top``."""

from __future__ import annotations

from typing import Annotated

import redis
from fastapi import Depends, HTTPException, Request, status

from service.api.model_cache import ModelCache
from service.settings import Settings
from service.snapshot import Snapshot, read_snapshot


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


SettingsDep = Annotated[Settings, Depends(get_settings)]
RedisDep = Annotated[redis.Redis, Depends(get_redis)]
ModelCacheDep = Annotated[ModelCache, Depends(get_model_cache)]


def require_snapshot(client: RedisDep) -> Snapshot:
    """The latest snapshot, or 503 while the worker has not published one."""
    snapshot = read_snapshot(client)
    if snapshot is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "no topics yet: the worker has not published its first snapshot",
        )
    return snapshot


SnapshotDep = Annotated[Snapshot, Depends(require_snapshot)]


def check_top(top: int, settings: Settings) -> int:
    """``top`` itself when 1 <= top <= settings.topic_words, else 422 saying the range."""
    if not 1 <= top <= settings.topic_words:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"top must be between 1 and {settings.topic_words}, got {top}",
        )
    return top
