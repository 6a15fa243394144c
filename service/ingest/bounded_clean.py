"""Wikitext cleaned in a child process bounded in time and memory, so no page can stall or
swell the scraper.

The parser has real pages that hang it or grow it to gigabytes, inside C code that no signal
interrupts; so the scraper hands each page to a long-lived child process (``python -m
service.ingest.bounded_clean``) whose address space is capped (``RLIMIT_AS``), and waits for
the answer no longer than a time that grows with the page up to a fixed ceiling, counted in the
child's CPU seconds from the moment it is ready (a busy machine slows the clock on the wall, not
the parse; the wall stops it at WALL_FACTOR times the bound). A page past the time bound is
skipped as ``parse_timeout`` (the child is killed, and another started for the next page), one
past the memory bound as ``parse_memory``, and one that fails or crashes the parser as
``unparsable``; the command goes on either way. A stop request (the ``stop`` event) abandons
the page being parsed within STOP_POLL_SECONDS: the child is killed and :class:`CleaningStopped`
raised, the page neither cleaned nor counted. Pages travel over pipes, framed by their length,
in UTF-8. Every command that reads articles (``scrape``, ``train``, and ``up`` through its
scraper) cleans through one of these.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO

from service.ingest.sources.base import ArticleSkipped
from service.process import die_with_parent

log = logging.getLogger(__name__)

# Seconds a page may take to clean: a base, plus this many per MB of wikitext (the slowest real
# pages clean at a few seconds per MB on one core: docs/defaults.md, "Parsing bounds").
PARSE_SECONDS = 2.0
PARSE_SECONDS_PER_MB = 20.0
# The most CPU seconds any page gets, whatever its size: the parser is quadratic on some markup,
# so a bound that grew with the page would let one hostile page stall a source for minutes.
PARSE_SECONDS_MAX = 10.0
# How often a wait for the child looks at the stop event: a stop abandons a parse this late.
STOP_POLL_SECONDS = 0.1
# A page's bound on the wall, as a multiple of its CPU bound: what stops a child that waits.
WALL_FACTOR = 10.0
# Seconds a new child may take to start and load the parser (a loaded machine is slow at it).
STARTUP_SECONDS = 120.0
# Address space the child may grow by beyond what it holds once started.
PARSE_MEMORY_BYTES = 2 * 1024**3
# The cleaning the child runs, as module:function.
CLEAN = "service.ingest.cleaning:clean_wikitext"

_LENGTH = struct.Struct(">Q")
OK, FAILED, NO_MEMORY, READY = b"o", b"f", b"m", b"r"
ENCODING = ("utf-8", "surrogatepass")  # JSON may hold lone surrogates: they travel as they are


class CleaningStopped(BaseException):
    """A stop request came while a page was being cleaned: the page is abandoned, neither
    cleaned nor skipped. A BaseException, as KeyboardInterrupt is, so that no source's
    per-article ``except Exception`` counts it as that article's failure; the scraper ends its
    batch before the page, which a file source's next run reads again."""


class BoundedCleaner:
    """A callable cleaning wikitext in the child process; ArticleSkipped past its bounds,
    CleaningStopped once ``stop`` is set while it waits."""

    def __init__(
        self,
        *,
        seconds: float = PARSE_SECONDS,
        seconds_per_mb: float = PARSE_SECONDS_PER_MB,
        seconds_max: float = PARSE_SECONDS_MAX,
        memory_bytes: int = PARSE_MEMORY_BYTES,
        clean: str = CLEAN,
        stop: threading.Event | None = None,
    ) -> None:
        self.seconds = seconds
        self.seconds_per_mb = seconds_per_mb
        self.seconds_max = seconds_max
        self.memory_bytes = memory_bytes
        self.clean = clean
        self.stop = stop
        self.restarts = 0  # children replaced after a timeout, a crash or a memory error
        self._child: subprocess.Popen[bytes] | None = None

    def bound(self, size: int) -> float:
        """CPU seconds a page of ``size`` bytes (UTF-8) may take: grows with it, to a ceiling."""
        return min(self.seconds + self.seconds_per_mb * size / 1e6, self.seconds_max)

    def __call__(self, wikitext: str) -> str:
        data = wikitext.encode(*ENCODING)
        child = self._send(data)
        budget = _Budget(child.pid, self.bound(len(data)), self.stop)
        status, answer = self._receive(child, budget)
        if status == OK:
            return answer.decode(*ENCODING)
        self._stop_child()  # after a memory error or a failure, a fresh heap for the next page
        self.restarts += 1
        if status == NO_MEMORY:
            raise ArticleSkipped("parse_memory", f"over {self.memory_bytes} bytes")
        raise ArticleSkipped("unparsable", answer.decode(*ENCODING)[:200])

    def close(self) -> None:
        """Stop the child (a later call starts another)."""
        self._stop_child()

    def __enter__(self) -> BoundedCleaner:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- the child -------------------------------------------------------------------------
    def _start_child(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        # The same code as this process: its import path first (a worktree, not the install).
        env["PYTHONPATH"] = os.pathsep.join(
            [p for p in sys.path if p] + [env.get("PYTHONPATH", "")]
        )
        command = [sys.executable, "-m", __name__, "--memory", str(self.memory_bytes)]
        command += ["--clean", self.clean]
        child = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            preexec_fn=die_with_parent(),
        )
        assert child.stdout is not None
        try:  # the page's clock starts once the child has loaded the parser
            _read_exactly(child.stdout, len(READY), _Budget(None, STARTUP_SECONDS, self.stop))
        except (TimeoutError, EOFError, CleaningStopped) as exc:
            child.kill()
            child.wait()
            for pipe in (child.stdin, child.stdout):
                if pipe is not None:
                    pipe.close()
            if isinstance(exc, CleaningStopped):
                raise
            raise ArticleSkipped("unparsable", "the cleaning process did not start") from None
        return child

    def _stop_child(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        child.kill()
        child.wait()
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()

    def _send(self, data: bytes) -> subprocess.Popen[bytes]:
        """Write the page to the child (a fresh one if the last died between pages)."""
        for attempt in range(2):
            if self._child is None:
                self._child = self._start_child()
                if attempt or self.restarts:
                    log.info("started a new cleaning process")
            child = self._child
            assert child.stdin is not None
            try:
                child.stdin.write(_LENGTH.pack(len(data)) + data)
                child.stdin.flush()
                return child
            except (BrokenPipeError, OSError):
                self._stop_child()
                self.restarts += 1
        raise ArticleSkipped("unparsable", "the cleaning process could not be started")

    def _receive(self, child: subprocess.Popen[bytes], budget: _Budget) -> tuple[bytes, bytes]:
        """The child's answer, or ArticleSkipped when it takes too long or dies."""
        assert child.stdout is not None
        try:
            head = _read_exactly(child.stdout, 1 + _LENGTH.size, budget)
            (length,) = _LENGTH.unpack(head[1:])
            return head[:1], _read_exactly(child.stdout, length, budget)
        except TimeoutError:
            self._stop_child()
            self.restarts += 1
            raise ArticleSkipped(
                "parse_timeout", f"the parser ran past its bound of {budget.seconds:.1f} s"
            ) from None
        except CleaningStopped:
            self._stop_child()  # the page is abandoned: the next call starts a fresh child
            raise
        except EOFError:
            code = child.wait()
            self._stop_child()
            self.restarts += 1
            if budget.stop is not None and budget.stop.is_set():
                # Killed with us by a signal to the whole process group: the page is not its.
                raise CleaningStopped(f"the parser ended at a stop (exit {code})") from None
            raise ArticleSkipped("unparsable", f"the parser died (exit {code})") from None


class _Budget:
    """A bound of ``seconds`` of a process's CPU time (``pid``; None: of wall time), and at most
    WALL_FACTOR times that on the wall; cut short when ``stop`` is set."""

    def __init__(self, pid: int | None, seconds: float, stop: threading.Event | None) -> None:
        self.pid, self.seconds, self.stop = pid, seconds, stop
        self.start = time.monotonic()
        self.cpu_start = _cpu_seconds(pid)
        self.deadline = self.start + seconds

    def extend(self) -> bool:
        """At the deadline: whether time is left (the process has not used its CPU seconds,
        and the wall's bound is not reached), moving the deadline to when it could be."""
        now, used = time.monotonic(), _cpu_seconds(self.pid)
        last = self.start + WALL_FACTOR * self.seconds
        if used is None or self.cpu_start is None or now >= last:
            return False
        left = self.seconds - (used - self.cpu_start)
        if left <= 0:
            return False
        self.deadline = min(now + max(left, 0.05), last)
        return True


def _cpu_seconds(pid: int | None) -> float | None:
    """User and system CPU seconds of process ``pid`` so far (None where unknown: not Linux)."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _read_exactly(stream: IO[bytes], size: int, budget: _Budget) -> bytes:
    """``size`` bytes of ``stream`` within ``budget`` (TimeoutError), EOFError if it ends first,
    CleaningStopped if the budget's stop event is set while it waits."""
    fd = stream.fileno()
    parts: list[bytes] = []
    stop = budget.stop
    while size:
        left = budget.deadline - time.monotonic()
        wait = left if stop is None else min(left, STOP_POLL_SECONDS)
        if left <= 0 or not select.select([fd], [], [], wait)[0]:
            if stop is not None and stop.is_set():
                raise CleaningStopped("stopped while a page was being cleaned")
            if time.monotonic() < budget.deadline or budget.extend():
                continue
            raise TimeoutError
        part = os.read(fd, min(size, 1 << 20))
        if not part:
            raise EOFError
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def _limit_memory(extra: int) -> None:
    """Cap this process's address space at what it holds now plus ``extra`` bytes."""
    try:
        import resource

        with open("/proc/self/statm") as statm:
            held = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (held + extra, held + extra))
    except (ImportError, OSError, ValueError) as exc:  # not Linux: bounded in time only
        log.warning("cannot bound the cleaning process's memory: %s", exc)


def _load(spec: str) -> Callable[[str], str]:
    module, _, name = spec.partition(":")
    function: Callable[[str], str] = getattr(importlib.import_module(module), name)
    return function


def serve(clean: Callable[[str], str], memory_bytes: int) -> None:
    """The child's loop: read a page, answer its cleaned text (or why not), until EOF."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the scraper's to handle
    _limit_memory(memory_bytes)
    pages, answers = sys.stdin.buffer, sys.stdout.buffer
    answers.write(READY)
    answers.flush()
    while head := pages.read(_LENGTH.size):
        (length,) = _LENGTH.unpack(head)
        wikitext = pages.read(length).decode(*ENCODING)
        try:
            status, answer = OK, clean(wikitext)
        except MemoryError:
            status, answer = NO_MEMORY, ""
        except BaseException as exc:  # the page's failure, reported as such
            status, answer = FAILED, f"{type(exc).__name__}: {exc}"
        del wikitext
        data = answer.encode(*ENCODING)
        answers.write(status + _LENGTH.pack(len(data)) + data)
        answers.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description="clean wikitext pages from stdin (internal)")
    parser.add_argument("--memory", type=int, default=PARSE_MEMORY_BYTES)
    parser.add_argument("--clean", default=CLEAN)
    args = parser.parse_args()
    serve(_load(args.clean), args.memory)


if __name__ == "__main__":
    main()
