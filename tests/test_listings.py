"""Listings kept encoded (azsd.server.pages.ListingCache): a `ListSessions` asked again is the bytes
sent before, but only while the file is in the state they were read from, whoever changed it
(this daemon's other clients, AZUREAL) and however soon after."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest

from azsd.events import AssistantText, Complete, UserMessage
from azsd.ipc import protocol as p
from azsd.model import FollowRecord, SessionInfo
from azsd.server.handlers import list_sessions
from azsd.server.pages import ListingCache
from azsd.server.views import EncodedViews, session_view
from azsd.server.workers import encoded
from azsd.store import Store
from azsd_client import Client
from tests.daemon_fixture import DaemonProc, daemon
from tests.test_cache import stream_json
from tests.test_pages import SETTLE_S, azureal_append, read

__all__ = ["daemon"]  # the fixture, re-exported for pytest


def fresh(reader: Store, req: p.ListSessions) -> bytes:
    """What the handler answers now, with no cache."""
    reader.check_file()
    with reader.snapshot():
        return encoded(list_sessions(reader, req).reply)


@pytest.fixture
def stores(root: Path) -> Iterator[tuple[Store, Store]]:
    writer = Store.open(root)
    for i in range(12):
        sid = writer.create_session(f"s{i}" if i % 3 else None, "main" if i % 2 else "feat").id
        writer.append_events(sid, [UserMessage(content=f"p{i}"), AssistantText(text="ok")])
        if i % 4 == 0:
            writer.append_events(sid, [Complete(success=i % 8 == 0, duration_ms=i, cost_usd=0.5)])
    writer.set_archived(3, True)
    reader = Store.open(root, reader=True)
    time.sleep(SETTLE_S)
    yield writer, reader
    reader.close()
    writer.close()


def requests(root: Path) -> list[p.ListSessions]:
    """Listings that differ in every way a request can make them differ."""
    r = str(root)
    return [
        p.ListSessions(root=r),
        p.ListSessions(root=r, limit=5),
        p.ListSessions(root=r, limit=5, offset=5),
        p.ListSessions(root=r, worktree="main"),
        p.ListSessions(root=r, archived="include"),
        p.ListSessions(root=r, archived="only"),
        p.ListSessions(root=r, with_usage=True, with_meter=True),
    ]


def test_a_listing_read_again_is_the_bytes_sent_before(stores: tuple[Store, Store], root: Path) -> None:
    _, reader = stores
    listings = ListingCache()
    answers = {}
    for req in requests(root):
        first, peeked = read(listings, reader, req)
        assert not peeked and encoded(first.reply) == fresh(reader, req)
        answers[req] = first.reply
    assert len(set(answers.values())) == len(answers)  # each kept apart
    for req in requests(root):
        again, peeked = read(listings, reader, req)
        assert peeked and again.reply is answers[req]


Change = Callable[[Store, Path], object]
CHANGES: dict[str, Change] = {
    "create": lambda w, root: w.create_session("new", "main"),
    "rename": lambda w, root: w.rename_session(5, "renamed"),
    "delete": lambda w, root: w.delete_session(7),
    "archive": lambda w, root: w.set_archived(2, True),
    "append": lambda w, root: w.append_events(9, [UserMessage(content="again")]),
    "azureal": lambda w, root: azureal_append(root, 1, "theirs"),
    "follow": lambda w, root: w.save_follow(FollowRecord(session_id=6, path="/a.jsonl", format="claude")),
}


@pytest.mark.parametrize("settled", [True, False], ids=["settled", "at-once"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_any_change_makes_the_listing_be_read_again(
    stores: tuple[Store, Store], root: Path, change: str, settled: bool
) -> None:
    writer, reader = stores
    listings = ListingCache()
    for req in requests(root):
        read(listings, reader, req)
        assert read(listings, reader, req)[1]
    before = {req: fresh(reader, req) for req in requests(root)}
    CHANGES[change](writer, root)
    if settled:  # the file's stat differs; else read at once (the racy case)
        time.sleep(SETTLE_S)
    for req in requests(root):
        got, _ = read(listings, reader, req)
        assert encoded(got.reply) == fresh(reader, req)
    assert any(fresh(reader, req) != before[req] for req in requests(root))


def test_a_listing_too_big_is_not_kept(stores: tuple[Store, Store], root: Path) -> None:
    _, reader = stores
    req = p.ListSessions(root=str(root))
    size = len(encoded(read(ListingCache(), reader, req)[0].reply))
    listings = ListingCache(budget=4 * size, largest=size - 1)
    read(listings, reader, req)
    assert len(listings) == 0 and not read(listings, reader, req)[1]


def test_the_budget_counts_the_requests_kept_as_keys(stores: tuple[Store, Store], root: Path) -> None:
    """Listings filtered by long worktree names: the names count against the budget (they used to
    be free: 300 listings of 1 MB filters held 300 MB)."""
    _, reader = stores
    listings = ListingCache(budget=1 << 20)
    for i in range(20):
        read(listings, reader, p.ListSessions(root=str(root), worktree=f"{i}" + "x" * (200 << 10)))
    assert len(listings) <= 5 and listings.size <= 1 << 20
    kept = sum(len(req.worktree or "") for req in listings._replies)
    assert kept <= listings.size


def info(sid: int, **changes: object) -> SessionInfo:
    base = SessionInfo(
        id=sid, name=f"s{sid}" if sid % 3 else "", worktree="main", created="2025-01-01 10:00:00",
        event_count=sid % 4, message_count=sid % 3, completed=None if sid % 5 else sid % 2 == 0,
        duration_ms=sid * 10 if sid % 5 == 0 else None, cost_usd=0.25 if sid % 5 == 0 else None,
        archived=sid % 7 == 0, parent=sid - 1 if sid % 6 == 0 else None, fork_seq=3 if sid % 6 == 0 else None,
        following=sid % 4 == 1,
    )  # fmt: skip
    return msgspec.structs.replace(base, **changes)


def plain(store: Store, infos: list[SessionInfo], total: int) -> bytes:
    return p.encode(p.SessionsReply(sessions=[session_view(store, i) for i in infos], total=total))


def test_views_kept_encoded_make_the_bytes_of_every_view(root: Path) -> None:
    views = EncodedViews(kept=8)
    with Store.open(root) as store:
        infos = [info(sid) for sid in range(1, 31)]
        assert views.listing(store, infos, 40) == plain(store, infos, 40)
        assert views.listing(store, infos[:5], 30) == plain(store, infos[:5], 30)  # kept ones
        assert views.listing(store, [], 0) == plain(store, [], 0)
        changed = [info(2, name="renamed"), info(4, event_count=9), info(5, following=False), *infos[5:9]]
        assert views.listing(store, changed, 7) == plain(store, changed, 7)
        assert b"renamed" in views.listing(store, changed, 7)
        assert len(views) <= 30
        for start in range(100, 400, 10):  # many others: the latest listing's are kept
            latest = [info(sid) for sid in range(start, start + 10)]
            views.listing(store, latest, 10)
            assert len(views) <= 8 + 10
        assert views.listing(store, latest, 10) == plain(store, latest, 10)


def test_views_kept_encoded_are_bounded_in_bytes(root: Path) -> None:
    """One session renamed, with a long name, and listed again and again: the views of its old
    names are let go once they hold the budget (they used to stay until 10 000 were kept)."""
    views = EncodedViews(kept_bytes=4 << 20)
    with Store.open(root) as store:
        for i in range(30):
            renamed = [info(1, name=f"{i}" + "n" * (256 << 10))]
            assert views.listing(store, renamed, 1) == plain(store, renamed, 1)
            assert len(views) <= 9  # 8 of 512 KB (each counted twice) and the latest


def names(client: Client, root: Path, **kw: object) -> list[tuple[int, str, int, str]]:
    listed = client.list_sessions(root, limit=1000, **kw)  # type: ignore[arg-type]
    return [(s.id, s.display_name, s.event_count, s.state) for s in listed.sessions]


def test_the_daemon_lists_what_another_client_just_changed(
    daemon: DaemonProc, root: Path, tmp_path: Path
) -> None:
    """Through the daemon: one client lists (again and again, so it may be answered from what was
    kept), another creates, renames, archives, deletes, ingests, AZUREAL appends; each listing after
    a change shows it, settled or at once."""
    source = tmp_path / "run.jsonl"
    stream_json(source, 3, last_done=True)
    with daemon.client() as lister, daemon.client() as other:
        sids = [other.create_session(root, f"s{i}").session.id for i in range(3)]
        steps: list[Callable[[], object]] = [
            lambda: other.create_session(root, "made"),
            lambda: other.rename_session(root, sids[0], "renamed"),
            lambda: other.append_events(root, sids[1], [UserMessage(content="later")]),
            lambda: other.archive_session(root, sids[1]),
            lambda: other.delete_session(root, sids[2]),
            lambda: other.ingest_file(root, sids[0], source),
            lambda: azureal_append(root, sids[0], "theirs"),
        ]
        for i, step in enumerate(steps):
            time.sleep(SETTLE_S)
            before = names(lister, root)
            assert names(lister, root) == before
            step()
            if i % 2:
                time.sleep(SETTLE_S)
            with Store.open(root, reader=True) as direct:
                truth = [(s.id, s.display_name, s.event_count, s.state) for s in direct.list_sessions()]
            got = names(lister, root, archived="include")
            assert got == truth, i
            assert names(lister, root) == [s for s in truth if s[0] != sids[1] or i < 3], i
        assert names(lister, root)[0][1] == "renamed"  # the latest activity: the ingest, AZUREAL's row
