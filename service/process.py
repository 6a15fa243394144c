"""Child processes that do not outlive the process that started them."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to SIGTERM the child when its parent dies (else None).

    SIGTERM rather than SIGKILL: a worker orphaned by a killed ``streamlda up`` still
    finishes its minibatch and checkpoints.
    """
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)

    return preexec


def lower_priority(nice: int) -> None:
    """Add ``nice`` to this process's niceness, and to its scheduling autogroup's.

    With Linux's autogroups (on by default on desktops and many servers) every session is
    scheduled as one group whatever its processes' nice values, and ``up`` starts each child
    in a session of its own, so a plain nice would not let the API run before the learner.
    """
    if nice <= 0:
        return
    os.nice(nice)
    autogroup = Path("/proc/self/autogroup")
    try:
        if autogroup.exists():
            autogroup.write_text(str(nice))
    except OSError:
        pass  # no permission, or autogroups are off: the plain nice still applies
