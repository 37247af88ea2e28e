"""Follow one session live: its stored events, then each new one as the daemon stores it.

Notifications travel on PUB/SUB, which drops messages for a subscriber that is slow or not yet
connected. So a :class:`SessionFollower` subscribes *before* it reads what is stored, keeps the next
seq it expects, and re-reads with `GetEvents` whenever something could have been missed: a
notification whose first event is past that seq (a gap), shortly after it starts (the subscription
may not have reached the daemon when the first read ran), and after a quiet spell (the last
notification may have been the one dropped). Events are yielded once each, in seq order.

:func:`follow_session` is the simple loop over it (`azs tail -f`); `azs run` drives a follower
itself, between checks on the agent it started.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Final, TypeAlias

from azsd.errors import DaemonUnavailable
from azsd.ipc.protocol import EventsAppended, SessionChanged, WireEvent

from ._shared import RootLike, refuse_unless_listening
from .client import Client

__all__ = ["FollowItem", "SessionFollower", "follow_session"]

#: What a follower yields: stored events, and the session's renames, completions and deletion.
FollowItem: TypeAlias = WireEvent | SessionChanged

#: The first re-read after subscribing: by then the subscription has reached the daemon.
_SETTLE_S: Final = 0.3


class SessionFollower:
    """One session's events from `from_seq` on, by request and by notification, each once, in order.

    The subscription is opened at once, so create the follower before whatever makes the events
    (its settle re-read catches those published before the subscription took effect).
    """

    def __init__(
        self,
        client: Client,
        root: RootLike,
        session: int,
        *,
        from_seq: int = 1,
        idle_check_s: float = 5.0,
        on_daemon: Callable[[bool], None] | None = None,
    ) -> None:
        self.client, self.root, self.session = client, root, session
        #: The seq of the next event this follower yields.
        self.next_seq = from_seq
        self.idle_check_s = idle_check_s
        #: Told False when a re-read finds the daemon gone, True when it is back.
        self.on_daemon = on_daemon
        self._daemon_up = True
        self._subscription = client.subscribe(root, session)
        self._check_at = time.monotonic() + _SETTLE_S  # re-read if nothing arrives by then

    def read(self) -> Iterator[WireEvent]:
        """What is stored from :attr:`next_seq` on, by request (errors raise)."""
        for event in self.client.get_events(self.root, self.session, from_seq=self.next_seq):
            if event.seq >= self.next_seq:
                self.next_seq = event.seq + 1
                yield event

    def poll(self, timeout: float | None = None) -> Iterator[FollowItem]:
        """What arrives within `timeout` seconds (None: until something may have): one notification's worth.

        When no notification comes by the next check time, the store is re-read instead; a daemon
        that does not answer that re-read is waited for (the next quiet spell retries).
        """
        wait = max(0.0, self._check_at - time.monotonic())
        due = timeout is None or timeout >= wait  # a quiet wait reaches the check time: re-read then
        note = self._subscription.recv(timeout=wait if due else max(0.0, timeout or 0.0))
        if note is None:
            if due:
                self._check_at = time.monotonic() + self.idle_check_s
                yield from self._read_quietly()
            return
        self._check_at = time.monotonic() + self.idle_check_s
        if isinstance(note, EventsAppended):
            yield from self._appended(note)
        elif isinstance(note, SessionChanged):
            yield note

    def _appended(self, note: EventsAppended) -> Iterator[WireEvent]:
        if note.events and note.events[0].seq > self.next_seq:
            yield from self.read()  # a gap: what was missed is stored, read it all
            return
        for event in note.events:
            if event.seq >= self.next_seq:
                self.next_seq = event.seq + 1
                yield event

    def _read_quietly(self) -> Iterator[WireEvent]:
        """A re-read after a quiet spell; a daemon that is gone is noticed at once (its socket)
        rather than after a request's timeout, and waited for."""
        before = self.next_seq
        try:
            if self.on_daemon is not None:  # someone to tell: look at the socket, not a request's timeout
                refuse_unless_listening(self.client.config.rpc_endpoint)
            events = list(self.read())
        except DaemonUnavailable:
            self.next_seq = before  # what a broken read got is read again
            self._daemon(False)  # stopped or restarting: try again after the next quiet spell
            return
        self._daemon(True)
        yield from events

    def _daemon(self, up: bool) -> None:
        if up != self._daemon_up:
            self._daemon_up = up
            if self.on_daemon is not None:
                self.on_daemon(up)

    def close(self) -> None:
        """Stop receiving notifications (idempotent)."""
        self._subscription.close()

    def __enter__(self) -> SessionFollower:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def follow_session(
    client: Client,
    root: RootLike,
    session: int,
    *,
    from_seq: int = 1,
    follow: bool = True,
    idle_check_s: float = 5.0,
    on_daemon: Callable[[bool], None] | None = None,
) -> Iterator[FollowItem]:
    """Yield the session's events from `from_seq` on, then (with `follow`) live ones, until deleted.

    A `SessionChanged` is yielded for each rename, completion and the deletion, which ends the
    iteration. While following, a daemon that stops answering is waited for (re-reads retry every
    `idle_check_s`, and `on_daemon` hears when it goes and comes back); any other error ends the
    iteration by raising.
    """
    if not follow:
        yield from (e for e in client.get_events(root, session, from_seq=from_seq) if e.seq >= from_seq)
        return
    with SessionFollower(
        client, root, session, from_seq=from_seq, idle_check_s=idle_check_s, on_daemon=on_daemon
    ) as follower:
        yield from follower.read()
        while True:
            for item in follower.poll():
                yield item
                if isinstance(item, SessionChanged) and item.change == "deleted":
                    return
