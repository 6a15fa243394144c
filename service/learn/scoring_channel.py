"""One-way channels between the worker and its scoring process: a pipe, written by a thread.

Not ``multiprocessing.Queue``: under the spawn context each queue holds three named POSIX
semaphores that the resource tracker must unlink, so a worker killed with SIGKILL left a
"leaked semaphore objects" warning behind. A pipe has no named resource (the kernel closes it
with the process), and the writing thread keeps what a queue's feeder thread gave: ``put``
never blocks the caller on a full pipe (a beta is megabytes; the learner must not wait).
"""

from __future__ import annotations

import pickle
import queue
import threading
from multiprocessing.connection import Connection
from typing import Any

_CLOSE = object()  # tells the writing thread to finish


class Sender:
    """The writing end: :meth:`put` queues a message in memory; a daemon thread sends it."""

    def __init__(self, connection: Connection, name: str) -> None:
        self._connection = connection
        self._messages: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._write, name=name, daemon=True)
        self._thread.start()

    def put(self, message: Any) -> None:
        self._messages.put(message)

    def _write(self) -> None:
        while (message := self._messages.get()) is not _CLOSE:
            # Pickle protocol 5 with the arrays' buffers out of band: a beta goes down the
            # pipe from its own memory, not from a pickled copy of its K x W values.
            buffers: list[pickle.PickleBuffer] = []
            header = pickle.dumps(message, protocol=5, buffer_callback=buffers.append)
            try:
                views = [buffer.raw() for buffer in buffers]
                self._connection.send((header, [view.nbytes for view in views]))
                for view in views:
                    self._connection.send_bytes(view)
            except OSError:  # the reader is gone: what is left is not wanted
                break
        self._connection.close()

    def close(self, timeout: float = 0.0) -> None:
        """Send what is queued (waiting up to ``timeout`` seconds), then close the pipe."""
        self._messages.put(_CLOSE)
        self._thread.join(timeout)


class Receiver:
    """The reading end."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def get(self, timeout: float | None = None) -> Any:
        """The next message, waiting up to ``timeout`` seconds (None: for ever); raises
        ``queue.Empty`` when none came, and ``EOFError`` once the writer is gone."""
        if not self._connection.poll(timeout):
            raise queue.Empty
        header, sizes = self._connection.recv()
        buffers = [bytearray(size) for size in sizes]  # writable, as the arrays were
        for buffer in buffers:
            self._connection.recv_bytes_into(buffer)
        return pickle.loads(header, buffers=buffers)

    def close(self) -> None:
        self._connection.close()
