"""The bridge's two pipes, with backpressure: stdin is read only while the editor reads stdout.

Every line read from stdin takes one of `pending` slots (:data:`MAX_PENDING`) before it is handed on,
and gives it back once its answer is written to stdout (a blank line at once). An editor that stops
reading its replies therefore stops the bridge reading its requests: the pipe to the bridge fills and
the editor's writes block, as with any program on pipes, instead of the bridge holding ever more
replies in memory. Notifications take no slot (they answer no line): they queue up to
:data:`MAX_NOTE_BYTES`, then are dropped, and the editor is told how many once it reads again
(``{"notify": {"op": "dropped", "count": N}}``; it re-reads with ``getevents``, as after any gap).

Lines are written by a thread of their own, so that a full stdout never stops the event loop (the
heartbeat, the daemon's replies and notifications go on meanwhile).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import BinaryIO, Final

__all__ = ["MAX_LINE_BYTES", "MAX_NOTE_BYTES", "MAX_PENDING", "Output", "read_lines"]

_log = logging.getLogger("azsd_client.bridge")

#: The longest request line read (the daemon's default `max-message-bytes`); longer ones are refused.
MAX_LINE_BYTES: Final = 64 * 1024 * 1024
#: Lines read whose answer is not written yet; the bridge reads no more stdin while this many wait.
MAX_PENDING: Final = 64
#: Bytes of notifications waiting for the editor to read; more are dropped (and counted).
MAX_NOTE_BYTES: Final = 8 * 1024 * 1024


def read_lines(
    stream: BinaryIO,
    deliver: Callable[[bytes | None], None],
    limit: int = MAX_LINE_BYTES,
    slots: threading.Semaphore | None = None,
) -> None:
    """Read `stream` line by line (in a thread: a pipe, a file or a terminal alike), then None at EOF.

    A line longer than `limit` bytes is delivered as its first ``limit + 1`` bytes (so it is seen to
    be too long) and the rest of it is skipped. With `slots`, each line delivered takes one first
    (waiting while there is none): whoever answers the line gives it back.
    """
    skipping = False
    while True:
        line = stream.readline(limit + 1)
        if not line:
            deliver(None)
            return
        whole = line.endswith(b"\n")
        if not skipping:
            if slots is not None:
                slots.acquire()
            deliver(line)
        skipping = not whole and len(line) > limit


class Output:
    """Lines to `out` (stdout's binary buffer), written in order by a thread of its own.

    :meth:`answer` lines give back a slot of `slots` once written (or once stdout is found closed);
    :meth:`notify` lines are dropped while more than `note_bytes` of them wait.
    """

    def __init__(
        self, out: BinaryIO, slots: threading.Semaphore, *, note_bytes: int = MAX_NOTE_BYTES
    ) -> None:
        self.out, self.slots, self.note_bytes = out, slots, note_bytes
        self.closed = False  # stdout is gone: lines are no longer written
        self._queue: queue.SimpleQueue[tuple[bytes, bool] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._note_backlog = 0  # bytes of notifications queued
        self._dropped = 0  # notifications dropped since the editor last read
        self._thread = threading.Thread(target=self._write_all, name="azs-bridge-stdout", daemon=True)
        self._thread.start()

    def answer(self, line: bytes) -> None:
        """The answer to one line read (it gives that line's slot back once written)."""
        self._queue.put((line, True))

    def release(self) -> None:
        """Give back the slot of a line that gets no answer (a blank line)."""
        self.slots.release()

    def notify(self, line: bytes, *, droppable: bool = True) -> None:
        """A notification; while the editor does not read, `droppable` ones are counted, not kept."""
        with self._lock:
            if droppable and self._note_backlog + len(line) > self.note_bytes:
                self._dropped += 1
                return
            self._note_backlog += len(line)
        self._queue.put((line, False))

    def close(self, timeout: float | None = None) -> None:
        """Write what is queued, then end the writer thread."""
        self._queue.put(None)
        self._thread.join(timeout)

    def _write_all(self) -> None:
        while (item := self._queue.get()) is not None:
            line, answers = item
            self._write(line)
            if answers:
                self.slots.release()
            self._written(0 if answers else len(line))

    def _written(self, note_size: int) -> None:
        """Count a notification written; say how many were dropped once the editor reads again."""
        with self._lock:
            self._note_backlog -= note_size
            dropped = self._dropped if self._note_backlog <= self.note_bytes // 2 else 0
            self._dropped -= dropped
        if dropped:
            _log.warning("the editor did not read: %d notifications were dropped", dropped)
            self._write(b'{"notify":{"op":"dropped","count":%d}}' % dropped)

    def _write(self, line: bytes) -> None:
        if self.closed:
            return
        try:
            self.out.write(line + b"\n")
            self.out.flush()
        except (BrokenPipeError, ValueError, OSError):
            self.closed = True
