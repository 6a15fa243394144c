"""``streamlda up``: the whole service on one machine — Redis, scraper, worker and API.

Starts an embedded Redis (unless ``--redis``; see :mod:`service.store.embedded_redis`), then
``scrape``, ``worker`` and ``api`` as child processes of this Python (``python -m service ...``)
with every setting passed as STREAMLDA_* variables (``threads``, unless set, is all cores but one:
the worker shares the machine), their output merged on stdout with a name prefix. A child that
crashes (non-zero exit or a signal; the embedded Redis too) is restarted after an exponential
backoff, and ``up`` says which, how it ended, the delay and the restart count; the scraper
finishing a finite source (exit 0) is not restarted, and a configuration error (exit 2: restarting
cannot help) stops everything with exit 1. Ctrl-C or SIGTERM stops the children in order — scraper,
worker (which checkpoints), API, Redis — each given ``stop_timeout_s`` before it is killed. Running
it again with the same ``data_dir`` resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import IO

import redis

from service.errors import CommandError
from service.process import die_with_parent
from service.redact import redact
from service.seeds_file import given_seeds
from service.settings import Settings, add_flags
from service.settings_pipeline import UpSettings
from service.store.embedded_redis import EmbeddedRedis, EmbeddedRedisError
from service.store.redis_client import (
    REFUSED_ERRORS,
    RedisURLError,
    check_url,
    connect,
    refused_message,
    unreachable_message,
)

# How often the supervisor looks at its children.
SUPERVISE_INTERVAL_S = 0.2
# Exits that are a clean answer to our SIGTERM: uvicorn re-raises it, and a child still
# importing (no handler yet, nothing to save) dies of it.
CLEAN_EXITS = {0, -signal.SIGTERM, 128 + signal.SIGTERM}
# The exit of a command that refused its arguments or settings: restarting cannot help.
CONFIG_ERROR_EXIT = 2
STOP_ORDER = ("scraper", "worker", "api", "redis")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``up`` subcommand."""
    p = subparsers.add_parser(
        "up",
        help="start Redis (embedded), scraper, worker and API together",
        description="One command for the whole service; Ctrl-C stops it cleanly, checkpointing "
        "first. Running it again resumes from data_dir.",
    )
    add_flags(p, "up")
    p.set_defaults(func=run)


def child_environment(settings: Settings) -> dict[str, str]:
    """The environment plus every setting that was set (by the environment, a flag or ``up``
    itself) as STREAMLDA_<NAME> (lists and dicts as JSON). Defaults are left for each child to
    resolve as a process started alone would: a default written out would count as set there
    (a mean decay exported that way stopped following the minibatch)."""
    env = dict(os.environ)
    given = settings.given()
    for name, value in settings.flat().items():
        key = "STREAMLDA_" + name.upper()
        if value is None or name not in given:
            env.pop(key, None)
        elif isinstance(value, list | dict):
            env[key] = json.dumps(value)
        else:
            env[key] = str(value)
    return env


def shared_machine_threads(workers: int = 1) -> int:
    """Each worker rank's threads when ``up`` shares the machine and none were set: all cores
    but one, split over the ranks. A kernel on every core is interrupted by the scraper, Redis
    and the API, and learned slower than one left a core (docs/defaults.md, "Threads")."""
    return max(1, ((os.cpu_count() or 1) - 1) // workers)


# torchrun answers our SIGTERM by passing it to its ranks (each finishes its minibatch and the
# group checkpoints), waiting for them, then raising SignalException: exit code 1.
GROUP_CLEAN_EXITS = frozenset(CLEAN_EXITS | {1})
# Restarts of the whole group torchrun makes when a rank dies, before ``up``'s own backoff.
GROUP_MAX_RESTARTS = 10


def group_launcher(workers: int) -> list[str]:
    """torchrun's arguments for ``workers`` ranks on this machine (a free rendezvous port)."""
    return [
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={workers}",
        f"--max-restarts={GROUP_MAX_RESTARTS}",
        "-m",
    ]


def describe_exit(code: int) -> str:
    """``code 1``, ``signal SIGKILL`` (killed) or ``stopped by SIGTERM`` (it exited 128 + the
    signal it was stopped with): how a child ended, for people."""
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    if code > 128:
        try:
            return f"stopped by {signal.Signals(code - 128).name}"
        except ValueError:
            pass
    return f"code {code}"


@dataclass
class Child:
    """One supervised process, how to start it again, and its restart state."""

    name: str
    launch: Callable[[], subprocess.Popen[bytes]]
    process: subprocess.Popen[bytes] | None = None
    pump: threading.Thread | None = None
    started_at: float = 0.0
    restarts: int = 0  # restarts so far
    crashes_in_a_row: int = 0  # sets the next delay; reset once a run outlasts the longest
    restart_at: float | None = None  # monotonic time of the pending restart
    clean_exits: frozenset[int] = frozenset(CLEAN_EXITS)

    def clean(self, code: int) -> bool:
        return code in self.clean_exits


class Supervisor:
    """Starts, watches, restarts and stops the children; prints their merged output."""

    def __init__(self, settings: UpSettings, out: IO[str]) -> None:
        self.settings = settings
        self.out = out
        self.lock = threading.Lock()
        self.children: dict[str, Child] = {}
        self.stop = threading.Event()

    def say(self, name: str, line: str) -> None:
        with self.lock:
            self.out.write(f"{name:<7}| {redact(line.rstrip())}\n")
            self.out.flush()

    def _pump(self, name: str, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            self.say(name, raw.decode("utf-8", errors="replace"))
        stream.close()

    def add(self, name: str, launch: Callable[[], subprocess.Popen[bytes]]) -> Child:
        """Start a child with ``launch`` (used again for each restart)."""
        child = Child(name, launch)
        self.children[name] = child
        self._launch(child)
        return child

    def _launch(self, child: Child) -> None:
        process = child.launch()
        child.process, child.started_at, child.restart_at = process, time.monotonic(), None
        child.pump = None
        if process.stdout is not None:
            child.pump = threading.Thread(
                target=self._pump, args=(child.name, process.stdout), daemon=True
            )
            child.pump.start()

    def spawn(
        self,
        name: str,
        command: str,
        env: dict[str, str],
        launcher: list[str] | None = None,
        clean_exits: frozenset[int] = frozenset(CLEAN_EXITS),
    ) -> None:
        """``python -m service <command>`` in its own session (signals come from us only),
        through ``launcher`` (e.g. torchrun's arguments) when given."""
        argv = [sys.executable, "-m", *(launcher or []), "service", command]

        def launch() -> subprocess.Popen[bytes]:
            process = subprocess.Popen(
                argv,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent(),
            )
            self.say("up", f"started {name} (pid {process.pid})")
            return process

        self.add(name, launch).clean_exits = clean_exits

    def watch(self) -> str | None:
        """Supervise until stop is requested (None) or a child cannot be helped (its message):
        crashed children are restarted after their backoff delay."""
        while not self.stop.wait(SUPERVISE_INTERVAL_S):
            for child in list(self.children.values()):
                failure = self._check(child)
                if failure:
                    return failure
        return None

    def _check(self, child: Child) -> str | None:
        if child.restart_at is not None:
            if time.monotonic() >= child.restart_at:
                self._restart(child)
            return None
        assert child.process is not None
        code = child.process.poll()
        if code is None:
            return None
        if child.name == "scraper" and code == 0:
            self.say("up", "scraper finished its source; the others keep running")
            del self.children[child.name]
            return None
        if code == CONFIG_ERROR_EXIT and child.name != "redis":
            return f"{child.name} exited with code {code} (its settings are wrong)"
        delay = self._next_delay(child)
        child.restart_at = time.monotonic() + delay
        ended = "was stopped from outside" if code > 128 else "crashed"
        self.say(
            "up",
            f"{child.name} {ended} ({describe_exit(code)}): restart {child.restarts + 1} "
            f"in {delay:.1f} s",
        )
        return None

    def _next_delay(self, child: Child) -> float:
        """Exponential backoff over crashes in a row: a child that ran restart_stable_s before
        it died (a Redis killed after an hour, say) starts again after the first wait."""
        first, longest = self.settings.restart_delay_first_s, self.settings.restart_delay_max_s
        if time.monotonic() - child.started_at >= self.settings.restart_stable_s:
            child.crashes_in_a_row = 0
        delay = min(longest, first * 2**child.crashes_in_a_row)
        child.crashes_in_a_row += 1
        return delay

    def _restart(self, child: Child) -> None:
        child.restarts += 1
        try:
            self._launch(child)
        except (OSError, EmbeddedRedisError) as exc:
            delay = self._next_delay(child)
            child.restart_at = time.monotonic() + delay
            self.say(
                "up",
                f"restart {child.restarts} of {child.name} failed ({exc}): again in {delay:.1f} s",
            )
            return
        self.say("up", f"restarted {child.name}: restart {child.restarts}")

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
        assert process is not None
        if child.restart_at is not None:  # already dead: nothing left to stop
            self.say(
                "up",
                f"{child.name} is not running ({describe_exit(process.returncode)}): "
                "its restart is cancelled",
            )
            return True
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
        if ok and code != 0:  # it ended by the SIGTERM we sent: stopped, as asked
            self.say("up", f"{child.name} stopped")
        else:
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


def _start_redis(supervisor: Supervisor, settings: Settings) -> str:
    """Start the embedded Redis under supervision; its URL (with the password)."""
    server = EmbeddedRedis(settings.store.data_dir / "redis", settings.up.redis_start_timeout_s)

    def launch() -> subprocess.Popen[bytes]:
        process = server.start()
        supervisor.say(
            "up",
            f"started redis (pid {process.pid}) at {redact(server.url)}, "
            f"files in {server.directory}",
        )
        return process

    try:
        supervisor.add("redis", launch)
    except EmbeddedRedisError as exc:
        raise CommandError(str(exc)) from exc
    return server.url


def _check_redis(settings: Settings) -> None:
    """A given Redis must answer, with these credentials, before any child starts: every child
    would fail the same way (and a refused password never heals)."""
    client = connect(settings.store)
    try:
        client.ping()
    except REFUSED_ERRORS as exc:
        raise CommandError(refused_message(exc)) from None
    except (redis.RedisError, OSError) as exc:
        raise CommandError(unreachable_message(str(settings.store.redis_url), exc)) from None
    finally:
        client.close()


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Start everything, supervise until a signal or a failure, stop everything in order."""
    supervisor = Supervisor(settings.up, sys.stdout)
    _install_stop_handlers(
        supervisor.stop,
        lambda: supervisor.say("up", "already stopping: the worker is checkpointing"),
    )
    if settings.store.redis_url:
        try:
            check_url(settings.store.redis_url)
        except RedisURLError as exc:
            raise CommandError(str(exc)) from None
        _check_redis(settings)
    given_seeds(
        settings.model.seeds, settings.model.topics
    )  # a bad seeds file stops everything before anything starts
    if settings.model.seeds is not None:  # the worker may start elsewhere
        settings = settings.updated(seeds=settings.model.seeds.resolve())
    settings.store.data_dir.mkdir(parents=True, exist_ok=True)
    if not settings.store.redis_url:
        settings = settings.updated(redis_url=_start_redis(supervisor, settings))
    workers = settings.up.workers
    if settings.model.threads is None:
        settings = settings.updated(threads=shared_machine_threads(workers))
        supervisor.say(
            "up",
            f"worker: {workers} rank(s) x {settings.model.threads} Gibbs thread(s), "
            "a core left to the rest",
        )
    env = child_environment(settings)
    failure: str | None = None
    try:
        if workers == 1:
            supervisor.spawn("worker", "worker", env)
        else:
            launcher = group_launcher(workers)
            supervisor.spawn("worker", "worker", env, launcher, GROUP_CLEAN_EXITS)
        for name, command in (("api", "api"), ("scraper", "scrape")):
            supervisor.spawn(name, command, env)
        supervisor.say(
            "up", f"API on http://{settings.api.host}:{settings.api.port}/ (Ctrl-C stops)"
        )
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
