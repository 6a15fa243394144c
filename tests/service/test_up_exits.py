"""How ``up`` says a child ended: killed, stopped by a signal it handled, or an exit code."""

from __future__ import annotations

import signal

from service.up import describe_exit


def test_a_stopped_child_reads_as_stopped_not_crashed_or_finished() -> None:
    assert describe_exit(-signal.SIGKILL) == "signal SIGKILL"
    assert describe_exit(128 + signal.SIGTERM) == "stopped by SIGTERM"
    assert describe_exit(128 + signal.SIGINT) == "stopped by SIGINT"
    assert describe_exit(1) == "code 1"
    assert describe_exit(0) == "code 0"
