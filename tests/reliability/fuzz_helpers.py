"""Shared pieces of the fuzzing tests (tests/reliability/test_fuzz_*.py): the limits, the
expected reply of every request, and reading a store back.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar, get_args

import zmq

from azsd.events import Event, encode_event
from azsd.ipc import protocol as p
from azsd.store import store_path
from tests.daemon_fixture import DaemonProc, start_daemon
from tests.reliability.common import SOAK

_T = TypeVar("_T")

#: The fuzzed daemon's `max-message-bytes`: small, so oversized frames are cheap to send.
MAX_MESSAGE: Final = 64 * 1024
#: How long a reply may take before it counts as never sent (generous: a 2-core shared machine).
REPLY_MS: Final = 30_000
#: pytest-timeout of the library-level property tests (thousands of examples under soak).
LIBRARY_TIMEOUT_S: Final = 3600 if SOAK else 300
#: How long one fuzzed request may take to be answered (a missing reply fails the example).
FUZZ_REPLY_MS: Final = 10_000
#: Waits for the daemon to reach a state (never a pass/fail criterion by themselves).
WAIT_S: Final = 30.0

REQUEST_TYPES: Final[dict[str, type[Any]]] = {c.__struct_config__.tag: c for c in get_args(p.Request)}
#: Ops whose valid meaning writes somewhere (or stops the daemon): never aimed at the protected store.
MUTATING: Final = frozenset(
    {
        "shutdown",
        "createsession",
        "renamesession",
        "deletesession",
        "appendevents",
        "markcompleted",
        "storecompaction",
        "compactwithoutput",
        "pull",
        "ingestfile",
        "follow",
        "unfollow",
        "forksession",
        "archivesession",
        "reindex",
        "backup",
        "importsession",
        "prunefull",
    }
)
EXPECTED_REPLY: Final[dict[type[Any], type[Any]]] = {  # every request (a test below checks)
    p.Status: p.StatusReply,
    p.Shutdown: p.ShutdownReply,
    p.CreateSession: p.SessionReply,
    p.ListSessions: p.SessionsReply,
    p.GetSession: p.SessionReply,
    p.RenameSession: p.SessionReply,
    p.DeleteSession: p.OkReply,
    p.AppendEvents: p.AppendReply,
    p.GetEvents: p.EventsPage,
    p.BuildContext: p.ContextReply,
    p.MarkCompleted: p.OkReply,
    p.StoreCompaction: p.OkReply,
    p.CompactionBoundary: p.BoundaryReply,
    p.ContextMeter: p.MeterReply,
    p.PlanCompaction: p.CompactionPlanReply,
    p.CompactWithOutput: p.CompactionReply,
    p.Search: p.SearchReply,
    p.IngestFile: p.IngestReply,
    p.Follow: p.FollowReply,
    p.Unfollow: p.OkReply,
    p.ForkSession: p.SessionReply,
    p.ArchiveSession: p.SessionReply,
    p.Reindex: p.ReindexReply,
    p.IndexStatus: p.IndexStatusReply,
    p.Export: p.ExportReply,
    p.Backup: p.BackupReply,
    p.ImportSources: p.SourcesReply,
    p.ImportSession: p.ImportReply,
    p.ImportSessions: p.ImportsReply,
    p.Usage: p.UsageReply,
    p.SyncStatus: p.SyncStatusReply,
    p.SyncVerify: p.SyncVerifyReply,
    p.RemoteUsage: p.UsageReply,
    p.RemoteList: p.RemoteSessionsReply,
    p.RemoteShow: p.RemoteSessionReply,
    p.RemoteSearch: p.RemoteSearchReply,
    p.Pull: p.PullReply,
    p.FullStatus: p.FullStatusReply,
    p.PruneFull: p.PruneReply,
}
HUGE_INTS: Final = [2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, -(2**31), -(2**63)]


# == shared helpers ==================================================================================


class Chunks(list[bytes]):
    """Frames or lines, drawn by Hypothesis: printed with long items cut short (a falsifying example
    of 100 kB frames would be unreadable, and Hypothesis warns about, i.e. fails on, huge reprs)."""

    def __repr__(self) -> str:
        return "[" + ", ".join(_short(item) for item in self) + "]"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # how Hypothesis prints examples
        printer.text(repr(self))


def _short(data: bytes, keep: int = 120) -> str:
    if len(data) <= 2 * keep:
        return repr(data)
    return f"{data[:keep]!r} + <{len(data) - 2 * keep} bytes> + {data[-keep:]!r}"


def status(d: DaemonProc) -> p.StatusReply:
    assert d.proc.poll() is None, f"the daemon died (exit {d.proc.returncode}):\n{d.log_text()[-4000:]}"
    reply = d.request(p.Status(), timeout_ms=REPLY_MS)
    assert isinstance(reply, p.StatusReply), reply
    return reply


def dump_store(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a store (read-only), sorted."""
    uri = f"{store_path(root).as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True, timeout=30)) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in sorted(tables)}


def event_rows(root: Path, sid: int) -> list[tuple[Any, ...]]:
    """The raw `events` rows of one session, in seq order."""
    uri = f"{store_path(root).as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True, timeout=30)) as conn:
        return conn.execute("SELECT * FROM events WHERE session_id = ? ORDER BY seq", (sid,)).fetchall()


def stored(d: DaemonProc, root: Path, sid: int) -> list[str]:
    out: list[str] = []
    from_seq = 1
    while True:
        page = d.request(p.GetEvents(root=str(root), session=sid, from_seq=from_seq, limit=5000), REPLY_MS)
        assert isinstance(page, p.EventsPage), page
        out += [e.data for e in page.events]
        if page.next_seq is None:
            return out
        from_seq = page.next_seq


def new_session(d: DaemonProc, root: Path, name: str | None = None) -> int:
    created = d.request(p.CreateSession(root=str(root), name=name), REPLY_MS)
    assert isinstance(created, p.SessionReply), created
    return created.session.id


def append(d: DaemonProc, root: Path, sid: int, events: list[Event]) -> None:
    reply = d.request(
        p.AppendEvents(root=str(root), session=sid, events=[encode_event(e).decode() for e in events]),
        REPLY_MS,
    )
    assert isinstance(reply, p.AppendReply), reply


@dataclass
class FuzzEnv:
    """The module's daemon, the store it must not change, and the throwaway root it may change."""

    base: Path
    protected: Path
    scratch: Path
    config: Path
    daemon: DaemonProc
    snapshot: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    digest: str = ""
    internal: list[str] = field(default_factory=list)  # requests answered with code `internal`
    fuzzed: bool = False  # the fuzz test ran all its examples

    def live(self) -> DaemonProc:
        """The daemon; restarted when an earlier example killed it (that example already failed)."""
        if self.daemon.proc.poll() is not None:
            self.daemon.close()
            self.daemon = start_daemon(self.base / "run", env={"AZSD_CONFIG": str(self.config)})
        return self.daemon


def await_reply(d: DaemonProc, sock: zmq.Socket[bytes], timeout_ms: int = FUZZ_REPLY_MS) -> None:
    """Wait for a reply on `sock`; fail at once if the daemon died meanwhile."""
    deadline = time.monotonic() + timeout_ms / 1000
    while not sock.poll(100):
        assert d.proc.poll() is None, f"the daemon died (exit {d.proc.returncode}):\n{d.log_text()[-4000:]}"
        assert time.monotonic() < deadline, f"no reply in {timeout_ms} ms from a live daemon"
