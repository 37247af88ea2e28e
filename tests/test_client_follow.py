"""`follow_session` against a scripted client: each event once and in order, gaps reread, a daemon
restart waited out.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import cast

from azsd.errors import DaemonUnavailable
from azsd.events import AssistantText, encode_event
from azsd.ipc import protocol as p
from azsd_client import Client, follow_session

# -- follow_session, scripted ------------------------------------------------------------------------


def _wire(seq: int) -> p.WireEvent:
    return p.WireEvent(
        seq=seq, kind="AssistantText", data=encode_event(AssistantText(text=str(seq))).decode()
    )


class _ScriptedSubscription:
    def __init__(self, owner: _ScriptedClient, steps: list[tuple[list[int], p.Notification | None]]) -> None:
        self.owner = owner
        self.steps = deque(steps)
        self.closed = False

    def recv(self, timeout: float | None = None) -> p.Notification | None:
        stored, note = self.steps.popleft()  # running out means follow_session did not stop: IndexError
        self.owner.stored += [_wire(s) for s in stored]
        return note

    def close(self) -> None:
        self.closed = True


class _ScriptedClient:
    def __init__(self, stored: list[int], steps: list[tuple[list[int], p.Notification | None]]) -> None:
        self.stored = [_wire(s) for s in stored]
        self.log: list[str] = []
        self.subscription = _ScriptedSubscription(self, steps)
        self.fail_next_read = False

    def subscribe(self, root: str, session: int | None = None) -> _ScriptedSubscription:
        self.log.append(f"subscribe {session}")
        return self.subscription

    def get_events(self, root: str, session: int, *, from_seq: int = 1) -> Iterator[p.WireEvent]:
        self.log.append(f"read {from_seq}")
        if self.fail_next_read:
            self.fail_next_read = False
            raise DaemonUnavailable("restarting")
        return iter([e for e in self.stored if e.seq >= from_seq])


def _appended(*seqs: int) -> p.EventsAppended:
    return p.EventsAppended(root="/r", seq=0, session_id=1, events=[_wire(s) for s in seqs])


def _changed(change: str) -> p.SessionChanged:
    return p.SessionChanged(root="/r", seq=0, session_id=1, change=change)


def test_follow_yields_each_event_once_in_order_and_rereads_gaps() -> None:
    steps: list[tuple[list[int], p.Notification | None]] = [
        ([3], _appended(3)),  # live
        ([4], None),  # its notification was dropped: the quiet re-read finds it
        ([5, 6], _appended(6)),  # 5's notification dropped: a gap, re-read
        ([], _appended(6)),  # nothing new
        ([], _changed("renamed")),
        ([], _changed("deleted")),
    ]
    fake_client = _ScriptedClient([1, 2], steps)
    items = list(follow_session(cast(Client, fake_client), "/r", 1, idle_check_s=0.01))
    assert [i.seq if isinstance(i, p.WireEvent) else i.change for i in items] == [
        1,
        2,
        3,
        4,
        5,
        6,
        "renamed",
        "deleted",
    ]
    assert fake_client.log[:2] == ["subscribe 1", "read 1"]  # subscribed before the first read
    assert fake_client.log[2:] == ["read 4", "read 5"]
    assert fake_client.subscription.closed


def test_follow_waits_out_a_daemon_restart() -> None:
    steps: list[tuple[list[int], p.Notification | None]] = [
        ([2], None),
        ([], None),
        ([], _changed("deleted")),
    ]
    fake_client = _ScriptedClient([1], steps)
    items = follow_session(cast(Client, fake_client), "/r", 1, idle_check_s=0.01)
    assert next(items) == _wire(1)
    fake_client.fail_next_read = True
    assert [i.seq if isinstance(i, p.WireEvent) else i.change for i in items] == [2, "deleted"]


def test_follow_without_follow_only_reads() -> None:
    fake_client = _ScriptedClient([1, 2, 3], [])
    items = list(follow_session(cast(Client, fake_client), "/r", 1, from_seq=2, follow=False))
    assert [cast(p.WireEvent, i).seq for i in items] == [2, 3]
    assert fake_client.log == ["read 2"]
