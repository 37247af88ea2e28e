"""Ctrl-C, SIGTERM and SIGHUP while an agent runs: turned into :class:`Interrupted`, so the command
can stop the agent and say what was kept before it exits with 128 + the signal."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Final

__all__ = ["Interrupted", "raise_interrupted", "signal_number", "stopping_signals"]

_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP arrived while an agent ran."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def raise_interrupted(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


def signal_number(exc: KeyboardInterrupt) -> int:
    """The signal behind `exc` (a plain KeyboardInterrupt is SIGINT)."""
    return exc.signum if isinstance(exc, Interrupted) else signal.SIGINT


@contextlib.contextmanager
def stopping_signals(handler: signal._HANDLER) -> Iterator[None]:
    """`handler` for the stopping signals that are not ignored (nohup, background jobs), then as before."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for signum in _SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
