"""The azsd daemon's lifecycle: start, run, stop.

``start`` prepares the private runtime directory, takes the single-instance lock, removes a stale
socket only after proving nobody answers on it, binds, writes the discovery file and tells systemd
it is ready. ``run`` serves until SIGTERM/SIGINT or a `Shutdown` request. ``stop`` tears down in
reverse: no new requests, queued writes finish (a reply always meant "committed"), sockets close,
files go, the lock is released.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import IO, Final

import msgspec
import zmq

from azsd import __version__, pricing
from azsd.backoff import Backoff
from azsd.config import ResolvedConfig, price_table
from azsd.errors import AlreadyRunning, ConfigError
from azsd.files import write_atomic
from azsd.ingest.orphans import recover_orphans
from azsd.ipc import protocol as p
from azsd.ipc.server import Server
from azsd.ipc.transport import Envelope, ipc_path, probe
from azsd.model import FollowRecord
from azsd.sdnotify import notify, watchdog_interval
from azsd.server.follow.follower import Follower
from azsd.server.handlers import handle, runs_alone
from azsd.server.idempotency import RequestKeys
from azsd.server.pages import ListingCache, PageCache
from azsd.server.reader import Inline
from azsd.server.registry import StoreRegistry
from azsd.server.roots import worktree_root
from azsd.server.runtime import StoreRoots, adopt_keys, load_account, prepare_runtime_dir, take_daemon_lock
from azsd.server.sync_control import SyncControl
from azsd.server.views import appended_notes
from azsd.server.watches import Watches
from azsd.server.workers import Outcome
from azsd.store import Store
from azsd.store.account import AccountKeys

__all__ = ["AlreadyRunning", "Daemon", "Discovery"]

log = logging.getLogger("azsd.server.daemon")

#: How long a store whose follows could not be read first waits before they are asked for again
#: (the wait doubles with each failure, up to the backoff's cap).
_RESUME_RETRY_S: Final = 1.0
#: How long a stale socket gets to answer before it is declared dead.
_PROBE_MS: Final = 300
#: Requests that only read their store: they run on its reader, beside its writer (a search whose
#: index must catch up first moves to the writer by itself).
_READS: Final = (
    p.ListSessions, p.GetSession, p.GetEvents, p.BuildContext, p.ContextMeter, p.CompactionBoundary,
    p.PlanCompaction, p.Export, p.Usage, p.Search, p.IndexStatus, p.FullStatus,
)  # fmt: skip
#: Reads quick enough to answer in the socket thread when the store's reader is idle (a page of at
#: most `_INLINE_PAGE` events, a session, its context meter): handing them to the reader thread and
#: their reply back took most of their time. Other reads with a reply encoded before (a longer page,
#: a listing) are answered there from it, when it is current (see `Daemon._runner`).
_QUICK_READS: Final = (p.GetEvents, p.GetSession, p.ContextMeter)
_INLINE_PAGE: Final = 1000
#: Requests the sync service answers (azsd.sync; an error without a `sync-url`).
_SYNC: Final = (p.SyncStatus, p.RemoteList, p.RemoteShow, p.RemoteSearch, p.Pull, p.RemoteUsage)


class Discovery(msgspec.Struct, frozen=True):
    """The discovery file (`azsd.json` in the runtime dir): how to reach the running daemon."""

    pid: int
    version: str
    protocol: int
    rpc: str
    pub: str
    started: float


class Daemon:
    """One azsd process: create, `start()`, `run()`, and `stop()` (in a `finally`)."""

    def __init__(self, config: ResolvedConfig, environ: Mapping[str, str]) -> None:
        self.config = config
        pricing.set_active_table(price_table(config))
        self._environ = environ
        self._stop = threading.Event()
        self._lock_file: IO[str] | None = None
        self._state_lock: IO[str] | None = None
        self._server: Server | None = None
        self._registry: StoreRegistry | None = None
        self._keys: RequestKeys | None = None
        self._follower: Follower | None = None
        self._homes: Watches | None = None
        self._sync: SyncControl | None = None
        self._roots: set[str] = set()  # worktree roots with live follows (kept in `roots_path`)
        self._followed_now: set[str] = set()  # roots followed during this run
        self._roots_lock = threading.Lock()
        self._store_roots: StoreRoots | None = None  # every store root opened, kept in `stores_path`
        self._account: AccountKeys | None = None  # which store counted each model response
        self._resume_backoff: dict[str, Backoff] = {}  # roots whose follows could not be read yet
        self._started = time.monotonic()
        self._watchdog_s = watchdog_interval(environ, os.getpid())
        self._last_watchdog = 0.0

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        prepare_runtime_dir(self.config.runtime_dir)
        self._lock_file = take_daemon_lock(self.config.lock_path)
        try:
            try:
                self.config.state_dir.mkdir(parents=True, exist_ok=True)
                self._state_lock = take_daemon_lock(self.config.state_lock_path)
            except OSError as exc:
                raise ConfigError(
                    f"cannot lock {self.config.state_lock_path}: {exc.strerror or exc}"
                ) from None
        except BaseException:
            self._lock_file.close()
            self._lock_file = None
            raise
        self._remove_stale_sockets()
        self._store_roots = StoreRoots(self.config.stores_path)
        self._account = load_account(self._store_roots.known())
        self._server = Server(self.config)
        home = Path(self._environ.get("HOME", str(Path.home())))
        self._registry = StoreRegistry(
            self._server.outbox,
            self.config.idle_close_s,
            lambda store, root: self._opened(store, root, home),
            max_open=self.config.max_open_stores,
            keep_full=self.config.full_record,
        )
        self._keys = RequestKeys(self._registry)
        self._pages = PageCache()
        self._listings = ListingCache()
        # psycopg is imported only while sync is on; the config file's sync settings are taken again
        # when it changes (or on SIGHUP: `azsd reload`)
        self._sync = SyncControl(self.config, self._registry, self._environ, self._known_roots)
        self._sync.start()
        outbox = self._server.outbox
        self._follower = Follower(
            self._registry,
            lambda envelope, reply: outbox.sender().reply(envelope, p.encode(reply)),
            self.config.follow_idle_s,
        )
        self._follower.start()
        self._start_homes()
        discovery = Discovery(
            pid=os.getpid(),
            version=__version__,
            protocol=p.PROTOCOL_VERSION,
            rpc=self.config.rpc_endpoint,
            pub=self.config.pub_endpoint,
            started=time.time(),
        )
        write_atomic(self.config.discovery_path, msgspec.json.encode(discovery), mode=0o600)
        notify(f"READY=1\nSTATUS=serving on {self.config.rpc_endpoint}\nMAINPID={os.getpid()}", self._environ)
        log.info("azsd %s serving on %s (pid %d)", __version__, self.config.rpc_endpoint, os.getpid())
        # after READY: the stores of the follows open on threads of their own, which would only
        # hold up the start (a request meanwhile waits for its store as it would anyway)
        self._resume_follows()

    def _start_homes(self) -> None:
        """Watch the agents' homes (`watch-agents`): their histories imported as they change."""
        if not self.config.watch_agents:
            return
        assert self._follower is not None and self._registry is not None and self._store_roots is not None
        roots = self._store_roots

        def known() -> set[str]:  # the worktrees whose Aider histories are watched
            return {*roots.known(), *self._known_roots()}

        self._homes = Watches(
            self.config.watch_agents, self._environ, self._registry,
            claimed=self._follower.claimed, followed=self._follower.followed, roots=known,
        )  # fmt: skip
        self._homes.start()

    def _opened(self, store: Store, root: str, home: Path) -> list[p.Notification]:
        """A store opens: its root noted among the account's stores, its usage keys among theirs,
        and its orphans recovered."""
        assert self._store_roots is not None and self._account is not None
        self._store_roots.note(root)
        adopt_keys(self._account, store, root)
        return _recover(store, root, home)

    def run(self) -> None:
        assert self._server is not None
        self._server.serve(self._handle, self._stop, self._tick)

    def request_stop(self) -> None:
        """Ask `run` to return (safe from a signal handler or another thread)."""
        self._stop.set()

    def request_reload(self) -> None:
        """Take the config file's sync settings again (safe from a signal handler: SIGHUP)."""
        if self._sync is not None:
            self._sync.request_reload()

    def _known_roots(self) -> set[str]:
        with self._roots_lock:
            return set(self._roots)

    def stop(self) -> None:
        """Tear down what `start` set up; a daemon that never got the lock touches nothing."""
        self._stop.set()
        if self._lock_file is None:
            return
        notify("STOPPING=1", self._environ)
        if self._homes is not None:
            self._homes.stop()
        if self._follower is not None:
            self._follower.stop()
        if self._sync is not None:
            self._sync.stop()
        if self._registry is not None:
            self._registry.close()
        if self._server is not None:
            self._server.close()
        for endpoint in (self.config.rpc_endpoint, self.config.pub_endpoint):
            path = ipc_path(endpoint)
            if path is not None:
                path.unlink(missing_ok=True)
        self.config.discovery_path.unlink(missing_ok=True)
        self._lock_file.close()
        self._lock_file = None
        if self._state_lock is not None:
            self._state_lock.close()
            self._state_lock = None
        log.info("azsd stopped")

    # -- requests ---------------------------------------------------------------------------------

    def _handle(self, envelope: Envelope, request: p.Request) -> None:
        assert self._server is not None
        match request:
            case p.Status():
                self._server.reply(envelope, self._status())
            case p.Shutdown():
                self._server.reply(envelope, p.ShutdownReply())
                log.info("shutdown requested by a client")
                self._stop.set()
            case p.SyncStatus() | p.SyncVerify():
                self._sync_answer(envelope, request)
            case _:
                root = worktree_root(request.root, self._registry_roots)
                if root is None:
                    message = (
                        f"no such worktree directory: {request.root!r} "
                        "(give an absolute path to an existing directory)"
                    )
                    self._server.reply(envelope, p.ErrorReply(code="no_such_root", message=message))
                    return
                if isinstance(request, _SYNC):
                    self._sync_answer(envelope, msgspec.structs.replace(request, root=root))
                    return
                self._route(envelope, msgspec.structs.replace(request, root=root))

    def _registry_roots(self) -> list[str]:  # (the roots of the open stores)
        return self._registry.open_stores() if self._registry is not None else []

    def _sync_answer(self, envelope: Envelope, request: p.SyncRequest) -> None:
        """Hand a sync request to the sync service; without a `sync-url`, say so."""
        assert self._server is not None
        service = self._sync.service if self._sync is not None else None
        if service is not None:
            service.answer(envelope, request)
        elif isinstance(request, p.SyncStatus):
            off = self._sync.status() if self._sync is not None else p.SyncStatusReply(configured=False)
            self._server.reply(envelope, off)
        else:
            message = "sync is not configured: set sync-url in the config file (README: Sync to PostgreSQL)"
            self._server.reply(envelope, p.ErrorReply(code="sync_error", message=message))

    def _route(self, envelope: Envelope, request: p.Follow | p.Unfollow | p.StoreRequest) -> None:
        """Hand a request about one store (its root made canonical) to whoever answers it."""
        assert self._server is not None and self._keys is not None and self._follower is not None
        assert self._registry is not None
        match request:
            case p.Follow() | p.Unfollow() if "\0" in request.path:
                self._server.reply(
                    envelope, p.ErrorReply(code="bad_request", message="a path cannot hold a NUL byte")
                )
            case p.Follow():  # its root is remembered once the follow is accepted, never before
                self._follower.follow(envelope, request.root, request, accepted=self._remember_root)
            case p.Unfollow():
                self._follower.unfollow(envelope, request.root, request.path, request.reason or "unfollowed")
            case p.GetEvents() | p.ListSessions():  # reads, never keyed: straight to their store
                run, peek = self._runner(request)
                inline = _inline(request, True)
                self._registry.answer(request.root, envelope, run, read=True, inline=inline, peek=peek)
            case _:
                run, peek = self._runner(request)
                self._keys.answer(  # a retry with a known `request_key` gets the first reply
                    request.root,
                    envelope,
                    request,
                    run,
                    peek=peek,
                    alone=runs_alone(request),
                    read=isinstance(request, _READS),
                    inline=_inline(request, peek is not None),
                )

    def _runner(
        self, request: p.StoreRequest
    ) -> tuple[Callable[[Store], Outcome], Callable[[Store], Outcome | None] | None]:
        """What carries out a store request in the store's thread, and what a reader tries first
        (a page or a listing: the reply encoded before)."""
        assert self._registry is not None
        if isinstance(request, p.GetEvents):
            return partial(self._pages.answer, req=request), partial(self._pages.peek, req=request)
        if isinstance(request, p.ListSessions):
            return partial(self._listings.answer, req=request), partial(self._listings.peek, req=request)
        publish = partial(self._registry.publish, request.root)
        return (lambda store: handle(store, request, publish)), None

    def _status(self) -> p.StatusReply:
        assert self._registry is not None
        return p.StatusReply(
            version=__version__,
            pid=os.getpid(),
            uptime_s=round(time.monotonic() - self._started, 3),
            stores=self._registry.open_stores(),
            follows=self._follower.views() if self._follower else [],
        )

    def _remember_root(self, root: str) -> None:
        """Note a root with live follows, so that a restarted daemon resumes them (called once a
        follow is validated and saved: a refused one leaves no trace)."""
        with self._roots_lock:
            self._followed_now.add(root)
            if root not in self._roots:
                self._roots.add(root)
                self._save_roots()

    def _forget_root(self, root: str) -> None:
        """Drop a root whose store has no live follow left (unless one began in this run)."""
        with self._roots_lock:
            if root in self._roots and root not in self._followed_now:
                self._roots.discard(root)
                self._save_roots()

    def _save_roots(self) -> None:
        self.config.roots_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(
            self.config.roots_path, "".join(f"{r}\n" for r in sorted(self._roots)).encode(), mode=0o600
        )

    def _resume_follows(self) -> None:
        """Pick up, in each known root, the follows a previous daemon left running."""
        try:
            self._roots = {line for line in self.config.roots_path.read_text().splitlines() if line}
        except FileNotFoundError:
            self._roots = set()
        for root in sorted(self._roots):
            if not os.path.isdir(root):
                self._forget_root(root)
                continue
            self._resume_root(root)

    def _resume_root(self, root: str) -> None:
        """Read the live follows of one store and hand them to the follower; a store that cannot be
        read now (another program holds its lock) is asked again later, never forgotten."""
        assert self._registry is not None and self._follower is not None
        follower = self._follower

        def resume(done: Future[list[FollowRecord]]) -> None:
            exc = done.exception()
            if exc is not None:
                if not self._stop.is_set():
                    backoff = self._resume_backoff.setdefault(root, Backoff())
                    delay = backoff.fail(str(exc), time.monotonic(), first_s=_RESUME_RETRY_S)
                    log.warning(
                        "cannot read the follows of %s yet (%s); trying again in %.1f s", root, exc, delay
                    )
                    retry = threading.Timer(delay, self._resume_root, (root,))
                    retry.daemon = True
                    retry.start()
                return
            self._resume_backoff.pop(root, None)
            records = done.result()
            if records:
                follower.resume(root, records)
            else:
                self._forget_root(root)

        self._registry.call(root, lambda store: store.follows(active_only=True), then=resume)

    def _tick(self) -> None:
        if self._sync is not None:
            self._sync.tick()
        if self._watchdog_s is None:
            return
        now = time.monotonic()
        if now - self._last_watchdog >= self._watchdog_s:
            notify("WATCHDOG=1", self._environ)
            self._last_watchdog = now

    def _remove_stale_sockets(self) -> None:
        """We hold the lock, so an old daemon is gone; still, only remove a socket nobody answers on."""
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        try:
            for endpoint in (self.config.rpc_endpoint, self.config.pub_endpoint):
                path = ipc_path(endpoint)
                if path is None or not path.exists():
                    continue
                if endpoint == self.config.rpc_endpoint and probe(
                    ctx, endpoint, p.encode(p.Status()), _PROBE_MS
                ):
                    raise AlreadyRunning(
                        f"something answers on {endpoint} without holding {self.config.lock_path}"
                    )
                log.info("removing the stale socket %s", path)
                path.unlink(missing_ok=True)
        finally:
            ctx.term()


def _inline(request: p.StoreRequest, peeks: bool) -> Inline:
    """How much of `request` may run in the socket thread (see `_QUICK_READS`)."""
    big_page = isinstance(request, p.GetEvents) and (request.limit > _INLINE_PAGE or request.full is True)
    if isinstance(request, _QUICK_READS) and not big_page:
        return True
    return "peek" if peeks else False


def _recover(store: Store, root: str, home: Path) -> list[p.Notification]:
    """Orphan recovery when a store opens, announced like any other append."""
    notes: list[p.Notification] = []
    for sid, events in recover_orphans(store, home).items():
        notes += appended_notes(root, sid, events)
    return notes
