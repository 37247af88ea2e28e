"""How every retry loop of the daemon waits: exponential backoff with a cap and jitter.

A follow whose commits fail, a store whose follows cannot be read at start: each keeps a
:class:`Backoff`, counts its failures in a row there, and tries again no sooner than it says.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

__all__ = ["BACKOFF_CAP_S", "BACKOFF_FIRST_S", "Backoff"]

#: The wait after a first failure; it doubles with each failure in a row, up to the cap.
BACKOFF_FIRST_S: Final = 0.25
BACKOFF_CAP_S: Final = 30.0


@dataclass
class Backoff:
    """Failures in a row, and when the next try may run: the wait doubles from
    :data:`BACKOFF_FIRST_S` to :data:`BACKOFF_CAP_S`, each a random half to whole of its step (so
    follows that failed together do not retry together); a success resets it.

    >>> b = Backoff()
    >>> 0.125 <= b.fail("disk full", now=100.0) <= 0.25, b.failures, b.ready(100.0)
    (True, 1, False)
    >>> [round(b.fail("disk full", now=100.0) / s, 1) >= 0.5 for s in (0.5, 1, 2)]
    [True, True, True]
    >>> b.reset(); b.ready(100.0), b.failures, b.reason
    (True, 0, '')
    """

    failures: int = 0
    retry_at: float = 0.0  # time.monotonic()
    reason: str = ""  # what failed last

    def fail(self, reason: str, now: float, *, first_s: float = BACKOFF_FIRST_S) -> float:
        """Count a failure; the wait before the next try (`first_s` after the first failure)."""
        self.failures += 1
        self.reason = reason
        step = min(BACKOFF_CAP_S, first_s * (1 << min(self.failures - 1, 16)))
        delay = step * random.uniform(0.5, 1.0)
        self.retry_at = now + delay
        return delay

    def reset(self) -> None:
        self.failures, self.retry_at, self.reason = 0, 0.0, ""

    def ready(self, now: float) -> bool:
        return now >= self.retry_at
