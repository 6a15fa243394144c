"""How ``up`` says a child ended: killed, stopped by a signal it handled, or an exit code."""

from __future__ import annotations

import io
import signal

import pytest

from service.settings import Settings
from service.up import Child, Supervisor, describe_exit


def test_a_stopped_child_reads_as_stopped_not_crashed_or_finished() -> None:
    assert describe_exit(-signal.SIGKILL) == "signal SIGKILL"
    assert describe_exit(128 + signal.SIGTERM) == "stopped by SIGTERM"
    assert describe_exit(128 + signal.SIGINT) == "stopped by SIGINT"
    assert describe_exit(1) == "code 1"
    assert describe_exit(0) == "code 0"


def test_a_redis_killed_after_running_a_while_restarts_after_the_first_delay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings.model_validate(
        {"restart_delay_first_s": 1.0, "restart_delay_max_s": 60.0, "restart_stable_s": 10.0}
    )
    supervisor = Supervisor(settings.up, io.StringIO())
    child = Child("redis", launch=lambda: None)  # type: ignore[arg-type,return-value]
    now = [0.0]
    monkeypatch.setattr("service.up.time.monotonic", lambda: now[0])

    def dies_after(ran_s: float) -> float:
        child.started_at = now[0]
        now[0] += ran_s
        delay = supervisor._next_delay(child)
        now[0] += delay
        return delay

    # Killed every 30 s, as a chaos soak does: never a crash loop, never a longer wait.
    assert [dies_after(30.0) for _ in range(5)] == [1.0] * 5
    # Dying within restart_stable_s of each start is a crash loop: the wait doubles from there.
    assert [dies_after(0.5) for _ in range(4)] == [2.0, 4.0, 8.0, 16.0]
    assert dies_after(10.0) == 1.0  # a run as long as restart_stable_s ends the loop
