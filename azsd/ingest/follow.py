"""Live follow: agent JSONL files tailed line by line into their sessions.

One thread (the follower) owns every followed file. watchfiles watches their **directories** (a
file that is replaced stops being watched, its directory does not); its events are only hints.
On a hint, and on a stat poll of its own every :data:`POLL_S` (which also covers a watcher that
could not start, e.g. inotify exhausted), each file is read from its saved byte offset to EOF.
A torn last line waits for its newline; a line longer than the limit is read past and counted,
never held. Truncation or replacement (size below the offset, another inode) re-reads the file
from its start and appends only what the session does not already end with.

The events of each read are appended by the store's worker thread **in the same transaction** as
the new offset (side table `azsd_follows`), so after a crash the follow resumes exactly after the
last stored line: nothing lost, nothing stored twice. The parser's state is rebuilt on resume by
replaying the file up to that offset. A follow ends on the turn's final event (a `Complete`), on
`Unfollow`, or when its writer process is gone and the file has been idle for `follow_idle_s`.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import msgspec
import watchfiles

from azsd.events import Event
from azsd.ingest.tailing import Tail, check_follow, detect, is_final, pid_alive, started_epoch
from azsd.ipc import protocol as p
from azsd.ipc.transport import Envelope
from azsd.model import FollowRecord
from azsd.server.views import appended_notes, changed_note
from azsd.server.workers import Outcome, StoreRegistry, error_reply
from azsd.store import Store

__all__ = ["POLL_S", "Follower"]

log = logging.getLogger("azsd.ingest.follow")

#: Every followed file is stat-ed this often, watcher or not.
POLL_S: Final = 0.25
#: How many ended follows `Status` still shows.
ENDED_KEPT: Final = 20


# -- the follower's inbox: what other threads ask of it ---------------------------------------------


@dataclass(frozen=True)
class _Start:
    """A `Follow` request (no envelope: the daemon's own)."""

    envelope: Envelope | None
    root: str
    request: p.Follow


@dataclass(frozen=True)
class _Resume:
    """A follow a previous daemon left running."""

    root: str
    record: FollowRecord


@dataclass(frozen=True)
class _End:
    """An `Unfollow` request."""

    envelope: Envelope
    root: str
    path: str


@dataclass(frozen=True)
class _Hint:
    """The watcher saw these paths change (or go)."""

    changed: set[str]
    deleted: set[str]


@dataclass(frozen=True)
class _Service:
    """Read a followed file now (after `resync`: from its stored offset, its parser rebuilt)."""

    path: str
    resync: bool = False


@dataclass(frozen=True)
class _Fetched:
    """The store gave back (or could not give back) a follow's saved position."""

    path: str
    done: Future[FollowRecord | None]


@dataclass(frozen=True)
class _Wake:
    """Look at the stop flag."""


_Message = _Start | _Resume | _End | _Hint | _Service | _Fetched | _Wake


class Follower:
    """Owns every live follow; runs one follower thread and one watcher thread."""

    def __init__(self, registry: StoreRegistry, reply: Callable[[Envelope, p.Reply], None],
                 idle_end_s: float) -> None:  # fmt: skip
        self._registry = registry
        self._reply = reply  # thread-safe: goes through the outbox
        self._idle_end_s = idle_end_s
        self._follows: dict[str, Tail] = {}
        self._ended: deque[p.FollowView] = deque(maxlen=ENDED_KEPT)
        self._lock = threading.Lock()
        self._inbox: queue.SimpleQueue[_Message] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._rewatch = threading.Event()
        self._thread = threading.Thread(target=self._run, name="azsd-follow", daemon=True)
        self._watcher = threading.Thread(target=self._watch, name="azsd-watch", daemon=True)

    # -- public, any thread -----------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()
        self._watcher.start()

    def stop(self) -> None:
        self._stop.set()
        self._rewatch.set()
        self._inbox.put(_Wake())
        for thread in (self._thread, self._watcher):
            if thread.is_alive():
                thread.join(2)

    def follow(self, envelope: Envelope | None, root: str, request: p.Follow) -> None:
        self._inbox.put(_Start(envelope, root, request))

    def unfollow(self, envelope: Envelope, root: str, path: str) -> None:
        self._inbox.put(_End(envelope, root, path))

    def resume(self, root: str, records: list[FollowRecord]) -> None:
        """Pick up follows a previous daemon left running."""
        for record in records:
            self._inbox.put(_Resume(root, record))

    def views(self) -> list[p.FollowView]:
        """Live follows, then the most recently ended ones."""
        with self._lock:
            return [f.view() for f in self._follows.values()] + list(self._ended)

    # -- the follower thread ----------------------------------------------------------------------

    def _run(self) -> None:
        next_poll = time.monotonic()
        while not self._stop.is_set():
            message: _Message | None
            try:
                message = self._inbox.get(timeout=max(0.0, next_poll - time.monotonic()))
            except queue.Empty:
                message = None  # time to poll
            try:
                self._dispatch(message)
            except Exception:
                log.exception("follow: %s failed", type(message).__name__)
            if message is None or time.monotonic() >= next_poll:
                for follow in list(self._follows.values()):
                    self._service_safely(follow)
                next_poll = time.monotonic() + POLL_S

    def _dispatch(self, message: _Message | None) -> None:
        match message:
            case _Start(envelope, root, request):
                self._add(envelope, root, request)
            case _Resume(root, record):
                self._resume(root, record)
            case _End(envelope, root, path):
                self._end_request(envelope, root, path)
            case _Hint(changed, deleted):
                for follow in list(self._follows.values()):
                    if follow.record.path in deleted:
                        follow.gone = True
                    if follow.record.path in changed:
                        self._service_safely(follow)
            case _Service(path, resync):
                target = self._follows.get(path)
                if target is not None:
                    target.resync = target.resync or resync
                    self._service_safely(target)
            case _Fetched(path, done):
                target = self._follows.get(path)
                if target is not None:
                    self._restored(target, done)
            case _Wake() | None:
                pass

    def _add(self, envelope: Envelope | None, root: str, request: p.Follow) -> None:
        path = os.path.realpath(request.path)
        error = check_follow(request, path)
        current = self._follows.get(path)
        if error is None and current is not None and current.record.session_id != request.session:
            error = f"{path} is already followed into S{current.record.session_id}"
        if error is not None:
            if envelope is not None:
                self._reply(envelope, p.ErrorReply(code="follow_error", message=error))
            return
        if current is not None:  # following it again: just answer with where it is
            if envelope is not None:
                self._reply(envelope, p.FollowReply(follow=current.view()))
            return
        fmt = request.format or detect(Path(path)) or ""
        record = FollowRecord(
            session_id=request.session, path=path, format=fmt, writer_pid=request.writer_pid
        )
        follow = Tail(root, record)
        follow.resync = True  # not read before `start` has saved where it begins: _rebuild loads that
        with self._lock:
            self._follows[path] = follow
        self._rewatch.set()

        def start(store: Store) -> Outcome:
            saved = msgspec.structs.replace(record, active=True, ended=None)
            stored = store.get_follow(request.session, path)
            if stored is not None and stored.format == (fmt or stored.format):
                # Followed before (running or ended): go on from where that follow stopped; a file
                # replaced since is noticed by its inode and re-read without duplicates.
                saved.offset, saved.inode, saved.format = stored.offset, stored.inode, stored.format
                saved.lines, saved.skipped = stored.lines, stored.skipped
            store.save_follow(saved)
            return Outcome(p.FollowReply(follow=Tail(root, saved).view()))

        self._registry.call(root, start, then=lambda done: self._started(root, envelope, path, done))

    def _started(self, root: str, envelope: Envelope | None, path: str, done: Future[Outcome]) -> None:
        """Answer the `Follow` (in the worker thread), and have the file read at once if it began."""
        self._registry.deliver(root, envelope, done)
        if done.exception() is not None:  # e.g. no such session: the client got the error reply
            with self._lock:
                self._follows.pop(path, None)
            return
        self._inbox.put(_Service(path))  # read it now rather than at the next poll

    def _resume(self, root: str, record: FollowRecord) -> None:
        if record.path in self._follows:
            return
        follow = Tail(root, record, started=started_epoch(record.started))
        follow.resync = True
        with self._lock:
            self._follows[record.path] = follow
        self._rewatch.set()
        log.info(
            "resuming the follow of %s into S%d at byte %d", record.path, record.session_id, record.offset
        )

    def _end_request(self, envelope: Envelope, root: str, path: str) -> None:
        follow = self._follows.get(os.path.realpath(path))
        if follow is None or follow.root != root:
            self._reply(envelope, p.ErrorReply(code="not_found", message=f"{path} is not followed in {root}"))
            return
        follow.ending = envelope
        self._service_safely(follow)

    # -- reading ----------------------------------------------------------------------------------

    def _service_safely(self, follow: Tail) -> None:
        try:
            self._service(follow)
        except Exception:
            log.exception("follow of %s failed; retrying from the stored offset", follow.path)
            follow.resync = True

    def _service(self, follow: Tail) -> None:
        if follow.fetching:
            return  # waiting for the store to give back where the follow stands
        if follow.resync:
            self._fetch(follow)
            return
        record = follow.record  # after a rebuild: the stored one
        try:
            info = os.stat(follow.path)
        except FileNotFoundError:
            follow.gone = True
            self._maybe_idle_end(follow)
            return
        changed = info.st_ino != record.inode or info.st_size < record.offset or follow.gone
        if follow.parser is not None and record.inode and changed:
            log.info("%s was replaced or truncated: re-reading it", follow.path)
            events = follow.reread(info.st_ino)
            self._commit(follow, events, end_follow=follow.ending is not None, moved=True)
            return
        if follow.parser is None and follow.prepare_parser() is None:
            self._maybe_idle_end(follow)
            return
        if info.st_size == record.offset and follow.ending is None:
            self._maybe_idle_end(follow)
            return
        start_offset = record.offset
        events = follow.read_new(info.st_ino)
        end_follow = is_final(events) or follow.ending is not None
        self._commit(follow, events, end_follow=end_follow, moved=record.offset != start_offset)

    def _fetch(self, follow: Tail) -> None:
        """Ask the store for the follow's saved position; the file is read again once it is back
        (a busy store only makes the follow wait its turn, it never drops it)."""
        follow.resync, follow.fetching = False, True
        session_id, path = follow.record.session_id, follow.record.path
        self._registry.call(
            follow.root,
            lambda store: store.get_follow(session_id, path),
            then=lambda done: self._inbox.put(_Fetched(path, done)),
        )

    def _restored(self, follow: Tail, done: Future[FollowRecord | None]) -> None:
        follow.fetching = False
        exc = done.exception()
        if exc is not None:  # the store cannot be read now: ask again at the next poll
            log.warning("cannot load the follow of %s (%s); trying again", follow.path, exc)
            follow.resync = True
            return
        stored = done.result()
        if stored is None:  # its row is gone (the session was deleted): nothing to follow into
            log.warning("the follow of %s is no longer in its store; ending it", follow.path)
            with self._lock:
                self._follows.pop(follow.record.path, None)
            return
        follow.restore(stored)
        self._service_safely(follow)

    def _maybe_idle_end(self, follow: Tail) -> None:
        pid = follow.record.writer_pid
        idle = time.monotonic() - follow.last_growth
        if follow.ending is not None:
            self._commit(follow, [], end_follow=True)
        elif pid is not None and not pid_alive(pid) and idle >= self._idle_end_s:
            log.info("the writer of %s (pid %d) is gone; ending the follow", follow.path, pid)
            self._commit(follow, [], end_follow=True, failed_if_open=True)

    # -- committing -------------------------------------------------------------------------------

    def _commit(self, follow: Tail, events: list[Event], *, end_follow: bool,
                failed_if_open: bool = False, moved: bool = False) -> None:  # fmt: skip
        record = msgspec.structs.replace(follow.record)
        envelope = follow.ending if end_follow else None  # an Unfollow is answered by the ending commit
        if end_follow:
            record.active = False
            record.ended = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
            with self._lock:
                self._follows.pop(follow.record.path, None)
                self._ended.appendleft(Tail(follow.root, record).view())
        root = follow.root
        started = follow.last_growth

        def write(store: Store) -> list[p.Notification]:
            result = store.append_prepared(record.session_id, events)
            store.save_follow(record)
            notes = appended_notes(root, record.session_id, result.events)
            completed = is_final([e.event for e in result.events])
            if failed_if_open and store.get_session(record.session_id).completed is None:
                store.mark_completed(record.session_id, False, int((time.monotonic() - started) * 1000), 0.0)
                completed = True
            if completed:
                notes.append(changed_note(store, root, record.session_id, "completed"))
            return notes

        def committed(done: Future[list[p.Notification]]) -> None:
            exc = done.exception()
            if exc is None:
                self._registry.publish(root, done.result())
            else:
                log.warning("storing from %s failed; it will be re-read from the stored offset", record.path)
                if not end_follow:
                    self._inbox.put(_Service(record.path, resync=True))
            if envelope is not None:  # an Unfollow, answered once its last read is stored
                self._reply(envelope, p.OkReply() if exc is None else error_reply(exc))

        if not events and not end_follow and not moved:
            return
        self._registry.call(root, write, then=committed)

    # -- the watcher thread -----------------------------------------------------------------------

    def _watch(self) -> None:
        """Turn file-system events in the followed directories into hints (polling covers gaps)."""
        while not self._stop.is_set():
            self._rewatch.clear()
            with self._lock:
                dirs = sorted({str(Path(path).parent) for path in self._follows})
            dirs = [d for d in dirs if os.path.isdir(d)]
            if not dirs:
                self._rewatch.wait(POLL_S)
                continue
            try:
                for changes in watchfiles.watch(
                    *dirs, debounce=20, step=5, stop_event=self._rewatch, recursive=False,
                    raise_interrupt=False, rust_timeout=1000, yield_on_timeout=False,
                ):  # fmt: skip
                    changed = {os.path.realpath(path) for _, path in changes}
                    deleted = {
                        os.path.realpath(path) for kind, path in changes if kind == watchfiles.Change.deleted
                    }
                    self._inbox.put(_Hint(changed, deleted))
            except Exception as exc:  # e.g. inotify watches exhausted: the stat poll carries on
                log.warning("file watching failed (%s); polling every %.2f s instead", exc, POLL_S)
                self._rewatch.wait(5)
