"""The ``streamlda`` command: one subcommand per module that owns it.

Each command module exposes ``register(subparsers)``, which adds its parser and sets
``func(settings, args) -> int``. The flags that set a setting are generated from the
setting's declaration (:func:`service.settings.add_flags`) and override the environment;
errors in arguments or settings print one line and exit 2, never a traceback.
Whatever is printed goes through :func:`service.redact.redact`: no URL password is shown.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence

from pydantic import ValidationError

from service.errors import CommandError
from service.redact import redact
from service.settings import GROUP_OF, GROUPS, Settings, flag_values
from service.store.redis_client import REFUSED_ERRORS, refused_message

# The module that adds each subcommand. Only the one asked for is imported (with ``--help`` or
# none, all): ``streamlda scrape`` loads no torch, numba or FastAPI.
COMMANDS = {
    "train": "service.train",
    "scrape": "service.ingest.command",
    "api": "service.api.command",
    "worker": "service.learn.command",
    "up": "service.up",
    "export": "service.export",
}


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Settings from the environment, overridden by every flag given on the command line."""
    return Settings(**flag_values(vars(args)))


def _format_validation(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        loc = error["loc"]
        if loc and loc[0] in GROUPS:
            loc = loc[1:]  # named as the operator sets it: topics, not model.topics
        where = ".".join(str(p) for p in loc) or "settings"
        # The variable (or its flag) the operator sets, named beside the field.
        hint = f" (STREAMLDA_{where.upper()})" if where in GROUP_OF else ""
        parts.append(f"{where}: {error['msg']}{hint}")
    return "invalid settings: " + "; ".join(parts)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand, or with the subcommand ``only`` alone."""
    parser = argparse.ArgumentParser(
        prog="streamlda", description="Streaming LDA topics learned with SG-MCMC."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command, name in COMMANDS.items():
        if only is None or command == only:
            importlib.import_module(name).register(subparsers)
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` asks for, if it names one first."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command(argv))
    args = parser.parse_args(argv)
    try:
        settings = settings_from_args(args)
    except ValidationError as exc:
        print(f"streamlda {args.command}: {_format_validation(exc)}", file=sys.stderr)
        return 2
    try:
        return int(args.func(settings, args) or 0)
    except CommandError as exc:
        print(f"streamlda {args.command}: error: {redact(str(exc))}", file=sys.stderr)
        return 2
    except REFUSED_ERRORS as exc:  # restarting with the same URL cannot help: a settings error
        print(f"streamlda {args.command}: error: {refused_message(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception:
        # Python would print this traceback itself; it may quote a Redis URL's password.
        sys.stderr.write(redact(traceback.format_exc()))
        return 1


if __name__ == "__main__":
    sys.exit(main())
