"""``streamlda api``: serve the HTTP API with uvicorn."""

from __future__ import annotations

import argparse
import gc

import redis

from service.errors import CommandError
from service.settings import Settings
from service.store.redis_client import REFUSED_ERRORS, RedisURLError, connect, refused_message


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    # Imported here: FastAPI and uvicorn cost ~0.3 s that every other command would pay at start.
    import uvicorn

    from service.api.app import create_app

    if not settings.redis_url:
        raise CommandError("no Redis to read: pass --redis URL or set STREAMLDA_REDIS_URL")
    try:
        app = create_app(settings)
    except RedisURLError as exc:
        raise CommandError(str(exc)) from None
    _check_credentials(settings)
    # Everything loaded so far (torch, FastAPI, the app) lives as long as the process: moved out
    # of the collector's sight, a full collection scans only what requests and refreshes made,
    # not hundreds of thousands of module objects (it paused requests for 150+ ms).
    gc.freeze()
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level="info",
        access_log=settings.access_log,
    )
    return 0


def _check_credentials(settings: Settings) -> None:
    """Refuse to start with credentials Redis refuses (a restart cannot fix them); an
    unreachable Redis is served as 503s until it is back."""
    client = connect(settings, timeout=settings.redis_timeout)
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
    parser.add_argument("--redis", dest="redis_url", metavar="URL", help="Redis URL")
    parser.add_argument("--host", help="bind address (default from STREAMLDA_HOST)")
    parser.add_argument("--port", type=int, help="port (default from STREAMLDA_PORT)")
    parser.set_defaults(func=run)
