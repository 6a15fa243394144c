"""``streamlda up``: the whole service on one machine — Redis, scraper, worker and API.

Starts an embedded Redis (unless ``--redis``), then ``scrape``, ``worker`` and ``api`` as child
processes of this Python (``python -m service ...``) with every setting passed as STREAMLDA_*
variables, their output merged on stdout with a name prefix. Ctrl-C or SIGTERM stops them in
order — scraper, worker (which checkpoints), API, Redis — each given ``stop_timeout_s`` before
it is killed. If a child dies on its own (the scraper finishing a finite source excepted), all
are stopped and ``up`` exits 1. Running it again with the same ``data_dir`` resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO

from service.embedded_redis import EmbeddedRedisError, start_redis
from service.errors import CommandError
from service.process import die_with_parent
from service.redis_client import RedisURLError, check_url
from service.settings import Settings

# How often the supervisor looks at its children.
SUPERVISE_INTERVAL_S = 0.2
# Exits that are a clean answer to our SIGTERM: uvicorn re-raises it, and a child still
# importing (no handler yet, nothing to save) dies of it.
CLEAN_EXITS = {0, -signal.SIGTERM, 128 + signal.SIGTERM}
STOP_ORDER = ("scraper", "worker", "api", "redis")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``up`` subcommand."""
    p = subparsers.add_parser(
        "up",
        help="start Redis (embedded), scraper, worker and API together",
        description="One command for the whole service; Ctrl-C stops it cleanly, checkpointing "
        "first. Running it again resumes from data_dir.",
    )
    p.add_argument("--source", help="wikipedia (default), dump:PATH or jsonl:PATH")
    p.add_argument(
        "--redis",
        dest="redis_url",
        metavar="URL",
        help="use this Redis instead of the embedded one",
    )
    p.add_argument("--host", help="API bind address")
    p.add_argument("--port", type=int, help="API port")
    p.add_argument("--data-dir", type=Path, help="checkpoints and the embedded Redis's files")
    p.add_argument(
        "--api-url",
        dest="wikipedia_api_url",
        metavar="URL",
        help="MediaWiki Action API endpoint of the scraper",
    )
    p.set_defaults(func=run)


def child_environment(settings: Settings) -> dict[str, str]:
    """The environment plus every setting as STREAMLDA_<NAME> (lists and dicts as JSON)."""
    env = dict(os.environ)
    for name, value in settings.model_dump(mode="json").items():
        key = "STREAMLDA_" + name.upper()
        if value is None:
            env.pop(key, None)
        elif isinstance(value, list | dict):
            env[key] = json.dumps(value)
        else:
            env[key] = str(value)
    return env


@dataclass
class Child:
    """One supervised process and the thread that copies its output."""

    name: str
    process: subprocess.Popen[bytes]
    pump: threading.Thread | None = None
    stopping: bool = field(default=False)

    def clean(self, code: int) -> bool:
        return code in CLEAN_EXITS


class Supervisor:
    """Starts, watches and stops the children; prints their merged output."""

    def __init__(self, settings: Settings, out: IO[str]) -> None:
        self.settings = settings
        self.out = out
        self.lock = threading.Lock()
        self.children: dict[str, Child] = {}
        self.stop = threading.Event()

    def say(self, name: str, line: str) -> None:
        with self.lock:
            self.out.write(f"{name:<7}| {line.rstrip()}\n")
            self.out.flush()

    def _pump(self, name: str, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            self.say(name, raw.decode("utf-8", errors="replace"))
        stream.close()

    def adopt(self, name: str, process: subprocess.Popen[bytes]) -> None:
        child = Child(name, process)
        if process.stdout is not None:
            child.pump = threading.Thread(
                target=self._pump, args=(name, process.stdout), daemon=True
            )
            child.pump.start()
        self.children[name] = child

    def spawn(self, name: str, command: str, env: dict[str, str]) -> None:
        """``python -m service <command>`` in its own session (signals come from us only)."""
        process = subprocess.Popen(
            [sys.executable, "-m", "service", command],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent(),
        )
        self.adopt(name, process)
        self.say("up", f"started {name} (pid {process.pid})")

    def watch(self) -> str | None:
        """Wait until stop is requested (None) or a child dies unexpectedly (its message)."""
        while not self.stop.wait(SUPERVISE_INTERVAL_S):
            for child in list(self.children.values()):
                code = child.process.poll()
                if code is None:
                    continue
                if child.name == "scraper" and code == 0:
                    self.say("up", "scraper finished its source; the others keep running")
                    del self.children[child.name]
                    continue
                return f"{child.name} exited unexpectedly with code {code}"
        return None

    def stop_all(self) -> bool:
        """Stop the children in STOP_ORDER; True if each exited cleanly in time."""
        clean = True
        for name in STOP_ORDER:
            child = self.children.get(name)
            if child is None:
                continue
            clean &= self._stop_one(child)
        for child in self.children.values():
            if child.pump is not None:
                child.pump.join(timeout=self.settings.stop_timeout_s)
        return clean

    def _stop_one(self, child: Child) -> bool:
        process = child.process
        if process.poll() is None:
            self.say("up", f"stopping {child.name}")
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=self.settings.stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.say(
                    "up",
                    f"{child.name} did not exit in {self.settings.stop_timeout_s:.0f} "
                    "s: killing it",
                )
                process.kill()
                process.wait()
                return False
        code = process.returncode
        ok = child.clean(code) or child.name == "redis"
        self.say("up", f"{child.name} exited with code {code}" + ("" if ok else " (unclean)"))
        return ok


def _install_stop_handlers(stop: threading.Event, on_second: Callable[[], None]) -> None:
    def handle(signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            on_second()
            return
        stop.set()

    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Start everything, supervise until a signal or a failure, stop everything in order."""
    supervisor = Supervisor(settings, sys.stdout)
    _install_stop_handlers(
        supervisor.stop,
        lambda: supervisor.say("up", "already stopping: the worker is checkpointing"),
    )
    if settings.redis_url:
        try:
            check_url(settings.redis_url)
        except RedisURLError as exc:
            raise CommandError(str(exc)) from None
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if not settings.redis_url:
        try:
            process, url = start_redis(settings.data_dir / "redis", settings.redis_start_timeout_s)
        except EmbeddedRedisError as exc:
            raise CommandError(str(exc)) from exc
        supervisor.adopt("redis", process)
        supervisor.say(
            "up",
            f"started redis (pid {process.pid}) at {url}, files in {settings.data_dir / 'redis'}",
        )
        settings = settings.model_copy(update={"redis_url": url})
    env = child_environment(settings)
    failure: str | None = None
    try:
        for name, command in (("worker", "worker"), ("api", "api"), ("scraper", "scrape")):
            supervisor.spawn(name, command, env)
        supervisor.say("up", f"API on http://{settings.host}:{settings.port}/ (Ctrl-C stops)")
        failure = supervisor.watch()
    finally:
        if failure:
            supervisor.say("up", f"error: {failure}; stopping everything")
        clean = supervisor.stop_all()
    if failure:
        print(f"streamlda up: {failure}", file=sys.stderr)
        return 1
    supervisor.say("up", "stopped" + ("" if clean else " (some children did not stop cleanly)"))
    return 0 if clean else 1
