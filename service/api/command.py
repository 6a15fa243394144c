"""``streamlda api``: serve the HTTP API with uvicorn, in one process or several on one port."""

from __future__ import annotations

import argparse
import gc
import json
import os

import redis
from fastapi import FastAPI

from service.errors import CommandError
from service.process import die_with_parent
from service.settings import Settings, add_flags
from service.store.redis_client import (
    REFUSED_ERRORS,
    RedisURLError,
    check_url,
    connect,
    refused_message,
)


def _process_app(settings: Settings) -> FastAPI:
    """The app for this process, and the process set up to serve it."""
    from service.api.app import create_app

    # /infer's kernels are numba's, on the threads the app gives them; the API imports no torch
    # (its model is a numpy array), which keeps each API process's memory small
    # (BENCHMARKS.md, "`up` at size").
    app = create_app(settings)
    # Everything loaded so far (FastAPI, numba, the app) lives as long as the process: moved out
    # of the collector's sight, a full collection scans only what requests and refreshes made,
    # not hundreds of thousands of module objects (such a collection paused every request).
    gc.freeze()
    return app


def app_from_environment() -> FastAPI:
    """uvicorn's factory in each worker process: the settings ``run`` exported. A worker goes
    with its parent (killed, it would keep serving the port that its restart needs)."""
    preexec = die_with_parent()
    if preexec is not None:
        preexec()
    return _process_app(Settings())  # every field from the environment


def _export(settings: Settings) -> None:
    """Every setting that was set, into this process's environment, for the worker processes
    (defaults stay unset: each process resolves them as one started alone would)."""
    given = settings.given()
    for name, value in settings.flat().items():
        if name in given and value is not None:
            plain = isinstance(value, list | dict)
            os.environ["STREAMLDA_" + name.upper()] = json.dumps(value) if plain else str(value)


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    # Imported here: FastAPI and uvicorn take a noticeable time to import, which every other
    # command would pay at start.
    import uvicorn

    from service.api.http.protocol import HTTP

    if not settings.store.redis_url:
        raise CommandError("no Redis to read: pass --redis URL or set STREAMLDA_REDIS_URL")
    try:
        app = _process_app(settings) if settings.api.api_workers == 1 else None
    except RedisURLError as exc:
        raise CommandError(str(exc)) from None
    _check_credentials(settings)
    common = {
        "host": settings.api.host,
        "port": settings.api.port,
        "http": HTTP,
        "log_level": "info",
        "access_log": settings.api.access_log,
    }
    if app is not None:
        uvicorn.run(app, **common)  # type: ignore[arg-type]
        return 0
    try:  # checked here, once, rather than in every worker
        check_url(settings.store.redis_url)
    except RedisURLError as exc:
        raise CommandError(str(exc)) from None
    _export(settings)
    uvicorn.run(
        f"{__name__}:app_from_environment",
        factory=True,
        workers=settings.api.api_workers,
        **common,  # type: ignore[arg-type]
    )
    return 0


def _check_credentials(settings: Settings) -> None:
    """Refuse to start with credentials Redis refuses (a restart cannot fix them); an
    unreachable Redis is served as 503s until it is back."""
    client = connect(settings.store, timeout=settings.api.redis_timeout)
    try:
        client.ping()
    except REFUSED_ERRORS as exc:
        raise CommandError(refused_message(exc)) from None
    except (redis.RedisError, OSError):
        pass
    finally:
        client.close()


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``api`` subcommand."""
    parser = subparsers.add_parser(
        "api", help="serve topics, perplexity and stats over HTTP (reads Redis only)"
    )
    add_flags(parser, "api")
    parser.set_defaults(func=run)
