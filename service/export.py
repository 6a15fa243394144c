"""``streamlda export``: write the model the API serves, from Redis, to a folder.

The files (pyLDAvis's arguments, the matrices as .npy, the vocabulary, a topic-word CSV and a
manifest) are :mod:`service.store.export`'s, the same as ``GET /admin/export`` streams;
docs/export.md describes them. Reads Redis only: it runs beside a live worker and API.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import redis

from service.errors import CommandError
from service.settings import Settings, add_flags
from service.store.export import Export, ExportError, write_directory
from service.store.published_model import read_model
from service.store.redis_client import (
    REFUSED_ERRORS,
    RedisURLError,
    connect,
    unreachable_message,
)
from service.store.topic_seeds import read_topic_seeds


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``export`` subcommand."""
    p = subparsers.add_parser(
        "export", help="write the served model (for pyLDAvis, numpy and spreadsheets) to a folder"
    )
    add_flags(p, "export")
    p.add_argument("--out", type=Path, required=True, help="folder to create (absent or empty)")
    p.set_defaults(func=run)


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Read the published model once and write its files to ``--out``."""
    if not settings.store.redis_url:
        raise CommandError("no Redis: pass --redis URL or set STREAMLDA_REDIS_URL")
    try:
        client = connect(settings.store)
    except RedisURLError as exc:
        raise CommandError(str(exc)) from None
    try:
        model = read_model(client)
        _, seeds = read_topic_seeds(client)
    except REFUSED_ERRORS:
        raise  # the command line names the setting to change (service.cli)
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        raise CommandError(unreachable_message(settings.store.redis_url, exc)) from None
    finally:
        client.close()
    if model is None:
        raise CommandError("no model yet: the worker has not published its first model")
    try:
        export = Export.of(model, seeds)
        write_directory(export, args.out)
    except ExportError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot write {args.out}: {exc}") from None
    print(
        f"exported model {model.version} ({model.docs_seen} documents seen, "
        f"K={model.n_topics}, W={len(model.vocab)}) to {args.out}"
    )
    return 0
