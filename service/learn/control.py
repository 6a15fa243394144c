"""The operator's requests to the worker (the control hash): pause, and checkpoint now."""

from __future__ import annotations

from collections.abc import Callable

from service.store.control import Control
from service.store.redis_retry import RedisRetry


class OperatorControl:
    """Reads the control hash; a checkpoint is requested each time its sequence grows."""

    def __init__(self, read: Callable[[], Control], retry: RedisRetry) -> None:
        """``read``: the control hash's current values (``service.store.snapshot.read_control``)."""
        self.read_control = read
        self.redis = retry
        self.checkpoint_seq = 0  # the last request seen
        self.seeds_seq = 0  # the seeds' sequence at the last read

    def start(self) -> None:
        """Requests made before this process started are not this process's to answer."""
        self.checkpoint_seq = self._read().checkpoint_seq

    def read(self) -> tuple[bool, bool]:
        """(a checkpoint was requested since the last read, learning is paused); the seeds'
        sequence is kept in ``seeds_seq``."""
        control = self._read()
        self.seeds_seq = control.seeds_seq
        requested = control.checkpoint_seq > self.checkpoint_seq
        self.checkpoint_seq = max(self.checkpoint_seq, control.checkpoint_seq)
        return requested, control.paused

    def _read(self) -> Control:
        return self.redis("reading control", self.read_control)
