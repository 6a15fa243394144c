"""Stopping a ``streamlda up`` that a benchmark started: SIGTERM (the worker's final checkpoint),
then SIGKILL if it outlives ``timeout_s``."""

from __future__ import annotations

import signal
import subprocess


def stop_up(up: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Stop ``up`` if it still runs, and reap it."""
    if up.poll() is None:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()
