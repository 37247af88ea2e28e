"""How long azsd holds a store's write lock, and the pauses it leaves for AZUREAL: :class:`Pacer`.

AZUREAL writes the same file on connections of its own with a 5 s busy timeout and no retry (spec
§8). Every write transaction of a Store's writer is timed by the Store's one :class:`Pacer`
(:meth:`azsd.store.core.StoreCore.atomic` calls :meth:`Pacer.begin` and :meth:`Pacer.release`), so
the rule below holds across the chunks of a long write, across calls (each chunk of the background
catch-up is a call of its own) and across the worker's group commits alike:

- a long write (:class:`azsd.store.chunks.ChunkedWrite`) commits as soon as its transaction has held
  the lock for :attr:`Pacing.chunk_s` (200 ms), or would with one more step and the commit (the
  longest step and commit seen lately are counted ahead), so no hold passes ~250 ms as long as one
  step stays well under 50 ms; after each of its commits the lock stays free :attr:`Pacing.gap_s`;
- whatever the transactions, once they have held the lock for :attr:`Pacing.long_gap_every_s` in all
  without the lock having been free for :attr:`Pacing.long_gap_s` (120 ms) in between, the writer
  leaves it free that long.

Why the long gap: SQLite's default busy handler (what rusqlite's ``busy_timeout`` installs) does not
wait for the lock to be released; it sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100, 100, …
ms and tries once after each sleep. A waiter that has waited 228 ms or more tries only every 100 ms,
so a free window shorter than that can fall between two of its tries every time, and with a steady
rhythm of chunks it could miss every window until its 5 s are gone. A free window longer than
100 ms always holds one of its tries. With one such window at least every second of holding, a
writer that starts waiting at any moment gets the lock within about 1.25 s (one second of holds,
the last one, and the window), far inside its 5 s even on a loaded machine. A pacer made afresh for
each chunk would never see a second of holding, and never leave that window (issue 2/7: AZUREAL
failed after 5 s of back-to-back catch-up chunks): hence one pacer per Store, for its whole life.
The long gaps cost about a tenth of the throughput of a long write.

Paced by how others wait, not by a fixed share: when azsd's own ``BEGIN IMMEDIATE`` had to wait
(:data:`CONTENDED_WAIT_S` or more: another writer, AZUREAL, held the lock), AZUREAL is at work and
likely to write again soon, so for :data:`CONTENDED_FOR_S` the long gap comes after half the holding
and lasts twice as long (:meth:`Pacing.contended`): on a loaded machine, where AZUREAL's thread may
not wake within a short window, its longest wait stays within 1.5 s (round 4 measured 2.04 s). While
nobody else writes, the store's own pace is kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = ["PACING", "Pacer", "Pacing"]


@dataclass(frozen=True)
class Pacing:
    """The policy (see the module docstring for why these numbers)."""

    #: A long write's transaction commits once it has held the lock this long (or would, with one
    #: more step and its commit).
    chunk_s: float = 0.15
    #: The lock is left free this long after every commit of a long write.
    gap_s: float = 0.005
    #: … and this long (over the busy handler's longest sleep, 100 ms) at least once per
    long_gap_s: float = 0.12
    #: … this much time holding it (any transactions: chunks, calls, group commits).
    long_gap_every_s: float = 1.0

    def contended(self) -> Pacing:
        """The policy while another writer is at work: long gaps twice as long, twice as often."""
        return Pacing(self.chunk_s, self.gap_s, self.long_gap_s * 2, self.long_gap_every_s / 2)


#: The one policy every write of azsd follows.
PACING: Final = Pacing()
#: A wait for the write lock this long or longer means another writer held it.
CONTENDED_WAIT_S: Final = 0.005
#: How long after such a wait the writer keeps the policy of :meth:`Pacing.contended`.
CONTENDED_FOR_S: Final = 10.0


class Pacer:
    """The clock side of :data:`PACING` for one store's write connection.

    :meth:`begin` when the lock is taken, :meth:`stepped` after each step of a long write while
    holding it, :meth:`full` to ask whether to commit now, :meth:`committing` just before the commit,
    :meth:`release` once the lock is released (it sleeps the long gap when one is due), and
    :meth:`pause` after a long write's commit (the short gap). :attr:`longest_hold_s` is the longest
    hold so far, :attr:`held_s` all of them, :attr:`chunks` their number, :attr:`long_gaps` the number
    of long gaps left.
    """

    def __init__(
        self,
        pacing: Pacing = PACING,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.pacing = pacing  # (its own pace: while another writer is at work, `policy` is used)
        self._contended_until = float("-inf")
        self._clock = clock
        self._sleep = sleep
        self._began: float | None = None
        self._last = 0.0
        self._step_s = 0.0  # the longest step of the last chunk and this one
        self._chunk_step_s = 0.0
        self._commit_s = 0.0  # the longest commit lately (decaying)
        self._committing: float | None = None
        self._released: float | None = None  # when the lock was last released
        self._held_since_long_gap = 0.0
        self.longest_hold_s = 0.0
        self.held_s = 0.0
        self.chunks = 0
        self.long_gaps = 0

    @property
    def policy(self) -> Pacing:
        """The policy in force: :attr:`pacing`, or while another writer is at work its
        :meth:`Pacing.contended` (which changes only the long gap: a step's check and the short gap
        read :attr:`pacing` itself)."""
        return self.pacing.contended() if self._clock() < self._contended_until else self.pacing

    @property
    def holding(self) -> bool:
        return self._began is not None

    def begin(self, waited: float = 0.0) -> None:
        """The lock was taken (after `waited` seconds: a wait means another writer held it)."""
        now = self._clock()
        if waited >= CONTENDED_WAIT_S:
            self._contended_until = now + CONTENDED_FOR_S
        if self._released is not None and now - self._released >= self.policy.long_gap_s:
            self._held_since_long_gap = 0.0  # the lock was free long enough for any waiter
        self._began = self._last = now
        self._chunk_step_s = 0.0

    def stepped(self) -> None:
        """One step done while holding the lock (its time counts from the end of the one before,
        so work done between steps is counted too)."""
        now = self._clock()
        self._chunk_step_s = max(self._chunk_step_s, now - self._last)
        self._step_s = max(self._step_s, self._chunk_step_s)
        self._last = now

    def full(self) -> bool:
        """Whether the chunk should end now: one more step and the commit would take it past `chunk_s`."""
        if self._began is None:
            return False
        return self._clock() - self._began + self._step_s + self._commit_s >= self.pacing.chunk_s

    def committing(self) -> None:
        """The commit starts now (its time is counted ahead in :meth:`full` from now on)."""
        if self._began is not None:
            self._committing = self._clock()

    def release(self) -> None:
        """The lock was released: note how long it was held, and leave it free for the long gap
        when the holds since the last one add up to about :attr:`Pacing.long_gap_every_s`."""
        if self._began is None:
            return
        now = self._clock()
        held = now - self._began
        if self._committing is not None:
            self._commit_s = max(now - self._committing, self._commit_s / 2)
        self._began = self._committing = None
        self._released = now
        self.chunks += 1
        self.longest_hold_s = max(self.longest_hold_s, held)
        self.held_s += held
        self._step_s = self._chunk_step_s  # forget an old outlier, keep this chunk's measure
        self._held_since_long_gap += held
        policy = self.policy
        if self._held_since_long_gap + policy.chunk_s > policy.long_gap_every_s:
            self._held_since_long_gap = 0.0
            self.long_gaps += 1
            self._sleep(policy.long_gap_s)

    def pause(self) -> None:
        """After a long write's commit: leave the lock free for at least :attr:`Pacing.gap_s` since
        it was released (nothing more when the long gap was just left)."""
        if self._released is None or self._began is not None:
            return
        left = self.pacing.gap_s - (self._clock() - self._released)
        if left > 0:
            self._sleep(left)
