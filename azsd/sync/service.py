"""What the daemon runs when `sync-url` is set: the pusher, and the answers to sync requests.

:class:`SyncService` owns the :class:`~azsd.sync.pusher.Pusher` and a few threads that answer
:data:`~azsd.ipc.protocol.SyncRequest` s (remote reads wait on the network, so they never run in a
store's threads). When a store's pushes catch up, it publishes
:class:`~azsd.ipc.protocol.SyncCaughtUp` on :data:`~azsd.ipc.protocol.SYNC_TOPIC`. A pull reads the
remote session here, then writes it through the store's writer like any other write, and publishes
the new session once it is committed.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec
import psycopg

from azsd.errors import AzsdError, BadRequestError, RemoteSessionNotFound, SyncError
from azsd.ipc import protocol as p
from azsd.ipc.replies import error_reply
from azsd.ipc.transport import Envelope
from azsd.pgurl import redact_url
from azsd.store import Store
from azsd.store.codec import RowCodec
from azsd.sync import remote
from azsd.sync.connection import connect, reason
from azsd.sync.identity import repository_identity
from azsd.sync.push import StorePush, prepare_connection
from azsd.sync.pusher import Pusher, StoreStatus
from azsd.sync.stores import SessionViewFn, Stores
from azsd.sync.team_usage import remote_usage
from azsd.sync.verify import verify_store

if TYPE_CHECKING:
    from azsd.config import ResolvedConfig

__all__ = ["SyncService"]

log = logging.getLogger("azsd.sync.service")

#: Threads answering sync requests (each holds one connection to the database while it works).
_THREADS: Final = 2
#: How long a worktree's repository identity (its `origin` remote) is kept before git is asked again.
_IDENTITY_S: Final = 30.0
#: How long a pull waits for the store's writer to commit it.
_PULL_WRITE_S: Final = 120.0


class SyncService:
    """The pusher and the sync request threads; `start()`, `answer()`, `stop()`."""

    def __init__(
        self,
        config: ResolvedConfig,
        registry: Stores,
        session_view: SessionViewFn,
        seed: set[str] | None = None,
    ) -> None:
        assert config.sync_url is not None
        self.url, self.identity, self.redact = config.sync_url, config.sync_identity, config.sync_redact
        self._registry = registry
        self._session_view = session_view
        #: Why the config file's latest sync settings were not taken ("": they were); the daemon sets it.
        self.config_error = ""
        self.pusher = Pusher(
            self.url, self.identity, registry, config.state_dir / "sync-roots", on_caught_up=self._caught_up,
            redact=self.redact, seed=seed,
        )  # fmt: skip
        self._note_seq = 0
        self._identities: dict[str, tuple[str, float]] = {}  # root: (repository, when asked)
        self._queue: queue.SimpleQueue[tuple[Envelope, p.SyncRequest] | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._serve, name=f"azsd-sync-{i}", daemon=True) for i in range(_THREADS)
        ]

    def start(self) -> None:
        registry = self._registry
        registry.on_commit = self.pusher.note
        self.pusher.start()
        for thread in self._threads:
            thread.start()
        log.info("sync: pushing every store to %s as %s", redact_url(self.url), self.identity)

    def stop(self) -> None:
        self._registry.on_commit = None
        for _ in self._threads:
            self._queue.put(None)
        self.pusher.stop()
        for thread in self._threads:
            thread.join(2.0)

    def _caught_up(self, root: str, status: StoreStatus) -> None:
        """Publish that a store's pushes caught up (called in the pusher's thread, which owns a sender)."""
        self._note_seq += 1
        note = p.SyncCaughtUp(
            root=root, seq=self._note_seq, store_uuid=status.store_uuid, repository=status.repository,
            pushed_event_id=status.pushed_event_id, pushed=status.pushed,
        )  # fmt: skip
        self._registry.outbox.sender().publish(p.SYNC_TOPIC, p.encode(note))

    def answer(self, envelope: Envelope, request: p.SyncRequest) -> None:
        """Queue a sync request; its reply is sent from a sync thread."""
        self._queue.put((envelope, request))

    def status(self) -> p.SyncStatusReply:
        now = time.monotonic()
        stores = [
            p.SyncStoreView(
                root=s.root,
                store_uuid=s.store_uuid,
                repository=s.repository,
                pushed_event_id=s.pushed_event_id,
                local_event_id=s.local_event_id,
                lag_events=s.lag_events,
                lag_s=round(now - s.behind_since, 3) if s.behind_since is not None and s.lag_events else 0.0,
                last_push=s.last_push,
                last_error=s.last_error,
                pushed=s.pushed,
                waiting=self.pusher.waiting(s, now),
                masked=s.masked,
                note=s.note,
            )
            for s in self.pusher.statuses()
        ]
        return p.SyncStatusReply(
            configured=True, identity=self.identity, url=redact_url(self.url), error=self.pusher.error,
            stores=stores, redact=self.redact, config_error=self.config_error,
        )  # fmt: skip

    # -- the request threads ---------------------------------------------------------------------

    def _serve(self) -> None:
        codec = RowCodec()
        sender = self._registry.outbox.sender()
        conn: psycopg.Connection[Any] | None = None  # this thread's, kept between requests
        login = ""
        try:
            while (item := self._queue.get()) is not None:
                envelope, request = item
                for attempt in (1, 2):  # a connection lost since the last request: once more, anew
                    try:
                        if not isinstance(request, p.SyncStatus) and (conn is None or conn.closed):
                            conn = connect(self.url)
                            login = remote.login_role(conn)
                        reply = self._reply(request, codec, conn, login)
                    except Exception as exc:
                        lost = conn is not None and (conn.broken or conn.closed)
                        if conn is not None and (lost or isinstance(exc, SyncError)):
                            conn.close()  # a new one for the next request
                            conn = None
                        if lost and attempt == 1:
                            log.info("sync: the connection was lost (%s); reading again", exc)
                            continue
                        reply = _error_reply(exc)
                    break
                sender.reply(envelope, p.encode(reply))
        finally:
            if conn is not None:
                conn.close()
            self._registry.outbox.release()

    def _repository(self, root: str) -> str:
        """`root`'s repository identity, asked of git at most every :data:`_IDENTITY_S` seconds."""
        now = time.monotonic()
        known = self._identities.get(root)
        if known is None or now - known[1] > _IDENTITY_S:
            known = self._identities[root] = (repository_identity(root), now)
        return known[0]

    def _reply(
        self, request: p.SyncRequest, codec: RowCodec, conn: psycopg.Connection[Any] | None, login: str
    ) -> p.Reply:
        if isinstance(request, p.SyncStatus):
            return self.status()
        assert conn is not None
        try:
            match request:
                case p.RemoteList():
                    repository = self._repository(request.root)
                    return remote.list_sessions(conn, repository, request, self.identity, login)
                case p.RemoteShow():
                    return remote.session_events(conn, request, self.identity, codec, login)
                case p.RemoteSearch():
                    return remote.search(conn, self._repository(request.root), request, codec)
                case p.Pull():
                    return self._pull(conn, request, login)
                case p.SyncVerify():
                    return self._verify(conn, request)
                case p.RemoteUsage():
                    return remote_usage(conn, self._repository(request.root), request)
            raise AssertionError(f"not a sync request: {request!r}")
        except psycopg.Error as exc:
            raise SyncError(f"the sync database failed: {reason(exc)}") from None

    def _pull(self, conn: psycopg.Connection[Any], req: p.Pull, login: str) -> p.PullReply:
        pulled, row = remote.fetch_for_pull(conn, req.ref, req.name, req.worktree)
        origin = remote.session_view(row, identity=self.identity, root=req.root, login=login)
        root = req.root

        def write(store: Store) -> p.SessionView:
            return self._session_view(store, store.sync_insert_pulled(pulled))

        def announce(done: Any) -> None:
            if done.exception() is None:
                note = p.SessionCreated(root=root, seq=0, session=done.result())
                self._registry.publish(root, [note])

        view = self._registry.call(root, write, then=announce).result(_PULL_WRITE_S)
        return p.PullReply(session=view, origin=origin, left_out=pulled.left_out or msgspec.UNSET)

    def _verify(self, conn: psycopg.Connection[Any], req: p.SyncVerify) -> p.SyncVerifyReply:
        """`azs sync verify`: every store the pusher knows, compared (and repaired) one by one."""
        prepare_connection(conn)  # (its staging table, for what is pushed again)
        views = []
        for status in self.pusher.statuses():
            root = status.root
            try:
                store = Store.open(Path(root), reader=True)
            except AzsdError as exc:
                views.append(p.SyncVerifyView(root=root, error=str(exc)))
                continue
            try:
                if not store.exists:
                    views.append(p.SyncVerifyView(root=root, error="no store file there now"))
                    continue
                job = StorePush(root, self.identity, redact=self.redact)
                views.append(verify_store(conn, store, job, repair=req.repair))
            finally:
                store.close()
        return p.SyncVerifyReply(stores=views)


def _error_reply(exc: BaseException) -> p.ErrorReply:
    code: p.ErrorCode
    match exc:
        case RemoteSessionNotFound():
            code = "not_found"
        case SyncError():
            code = "sync_error"
        case BadRequestError():
            code = "bad_request"
        case AzsdError():
            return error_reply(exc)
        case TimeoutError():
            return p.ErrorReply(
                code="sync_error", message="the store's writer did not commit the pull in time"
            )
        case _:
            log.exception("a sync request failed", exc_info=exc)
            code = "internal"
    return p.ErrorReply(code=code, message=str(exc) or type(exc).__name__)
