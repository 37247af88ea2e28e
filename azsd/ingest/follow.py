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

import calendar
import logging
import os
import queue
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import msgspec
import watchfiles

from azsd.compact import prepare_for_store
from azsd.events import Complete, Event, encode_event
from azsd.ingest.parsers import FORMATS, MAX_LINE_BYTES, LineParser, detect_format, iter_lines, make_parser
from azsd.ingest.parsers.base import read_lines
from azsd.ipc import protocol as p
from azsd.ipc.transport import Envelope
from azsd.model import FollowRecord
from azsd.server.views import appended_notes, changed_note
from azsd.server.workers import Outcome, StoreRegistry, error_reply
from azsd.store import Store

__all__ = ["POLL_S", "Follower", "read_lines"]

log = logging.getLogger("azsd.ingest.follow")

#: Every followed file is stat-ed this often, watcher or not.
POLL_S: Final = 0.25
#: How many ended follows `Status` still shows.
ENDED_KEPT: Final = 20
#: How long a follow waits for its store to give back its saved position.
_FETCH_TIMEOUT_S: Final = 10.0
#: At most this many bytes are read from one file per turn, so no file starves the others.
READ_BUDGET: Final = 8 * 1024 * 1024


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
class _Wake:
    """Look at the stop flag."""


_Message = _Start | _Resume | _End | _Hint | _Service | _Wake


@dataclass
class _Follow:
    root: str
    record: FollowRecord
    parser: LineParser | None = None
    skipping: bool = False
    last_growth: float = field(default_factory=time.monotonic)
    ending: Envelope | None = None  # an Unfollow waiting for the final read
    resync: bool = False
    started: float = field(default_factory=time.time)  # wall clock, for turns that report no duration
    produced: array[int] = field(default_factory=lambda: array("q"))  # fingerprints of this file's events
    gone: bool = False  # the file vanished since it was last read

    @property
    def path(self) -> Path:
        return Path(self.record.path)


class Follower:
    """Owns every live follow; runs one follower thread and one watcher thread."""

    def __init__(self, registry: StoreRegistry, reply: Callable[[Envelope, p.Reply], None],
                 idle_end_s: float) -> None:  # fmt: skip
        self._registry = registry
        self._reply = reply  # thread-safe: goes through the outbox
        self._idle_end_s = idle_end_s
        self._follows: dict[str, _Follow] = {}
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
            return [_view(f) for f in self._follows.values()] + list(self._ended)

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
            case _Wake() | None:
                pass

    def _add(self, envelope: Envelope | None, root: str, request: p.Follow) -> None:
        path = os.path.realpath(request.path)
        error = _check_request(request, path)
        current = self._follows.get(path)
        if error is None and current is not None and current.record.session_id != request.session:
            error = f"{path} is already followed into S{current.record.session_id}"
        if error is not None:
            if envelope is not None:
                self._reply(envelope, p.ErrorReply(code="follow_error", message=error))
            return
        if current is not None:  # following it again: just answer with where it is
            if envelope is not None:
                self._reply(envelope, p.FollowReply(follow=_view(current)))
            return
        fmt = request.format or _detect(Path(path)) or ""
        record = FollowRecord(
            session_id=request.session, path=path, format=fmt, writer_pid=request.writer_pid
        )
        follow = _Follow(root, record)
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
            return Outcome(p.FollowReply(follow=_view(_Follow(root, saved))))

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
        follow = _Follow(root, record, started=_started_epoch(record.started))
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

    def _service_safely(self, follow: _Follow) -> None:
        try:
            self._service(follow)
        except Exception:
            log.exception("follow of %s failed; retrying from the stored offset", follow.path)
            follow.resync = True

    def _service(self, follow: _Follow) -> None:
        if follow.resync and not self._rebuild(follow):
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
            self._reread(follow, info.st_ino)
            return
        if follow.parser is None and self._prepare_parser(follow) is None:
            self._maybe_idle_end(follow)
            return
        if info.st_size == record.offset and follow.ending is None:
            self._maybe_idle_end(follow)
            return
        with open(follow.path, "rb") as stream:
            result = read_lines(stream, record.offset, skipping=follow.skipping, budget=READ_BUDGET)
            torn = b""
            if follow.ending is not None:
                stream.seek(result.end)
                torn = stream.read(MAX_LINE_BYTES + 1)
        assert follow.parser is not None
        start_offset = record.offset
        before = follow.parser.report.skipped_total
        events: list[Event] = []
        for line in result.lines:
            events.extend(follow.parser.feed(line))
        end = result.end
        if torn and not result.skipping:  # an Unfollow: a last line without its newline counts too
            events.extend(follow.parser.feed(torn))
            end += len(torn)
        events.extend(follow.parser.finish() if follow.ending is not None else [])
        record.lines += len(result.lines) + (1 if torn else 0)
        record.skipped += follow.parser.report.skipped_total - before
        record.offset, record.inode, follow.skipping = end, info.st_ino, result.skipping
        if result.lines or torn:
            follow.last_growth = time.monotonic()
        events = [_with_wall_time(e, follow.started) for e in events]
        final = any(isinstance(e, Complete) for e in events)
        moved = end != start_offset
        prepared = prepare_for_store(events)
        follow.produced.extend(_fingerprints(prepared))
        self._commit(follow, prepared, end_follow=final or follow.ending is not None, moved=moved)

    def _prepare_parser(self, follow: _Follow) -> LineParser | None:
        """A fresh parser for the follow's format (detected from the file if need be), or None."""
        if not follow.record.format:
            fmt = _detect(follow.path)
            if fmt is None:
                return None
            follow.record.format = fmt
        follow.parser = make_parser(follow.record.format)
        return follow.parser

    def _rebuild(self, follow: _Follow) -> bool:
        """Reload the stored offset and rebuild the parser's state by replaying up to it."""
        follow.resync = False
        session_id, path = follow.record.session_id, follow.record.path
        fetched = self._registry.call(follow.root, lambda store: store.get_follow(session_id, path))
        try:
            stored = fetched.result(timeout=_FETCH_TIMEOUT_S)
        except Exception:  # the store cannot be read, or it is busy for longer than the wait
            stored = None
        if stored is None:
            log.warning("cannot load the follow of %s; dropping it", follow.path)
            with self._lock:
                self._follows.pop(follow.record.path, None)
            return False
        stored.writer_pid = follow.record.writer_pid or stored.writer_pid
        follow.record = stored
        follow.parser = None
        follow.skipping = False
        parser = self._prepare_parser(follow) if stored.format else None
        if parser is None:
            return True
        try:
            info = os.stat(follow.path)
        except FileNotFoundError:
            return True
        if stored.offset and (info.st_ino != stored.inode or info.st_size < stored.offset):
            return True  # replaced or truncated while we were away: _service re-reads it
        with open(follow.path, "rb") as stream:
            replay = read_lines(stream, 0, budget=stored.offset + 1, stop=stored.offset)
        replayed = [e for line in replay.lines for e in parser.feed(line)]
        follow.produced = array("q", _fingerprints(prepare_for_store(replayed)))
        follow.skipping = replay.skipping  # the offset sits inside a skipped huge line
        return True

    def _reread(self, follow: _Follow, inode: int) -> None:
        """The file was replaced or truncated: parse it whole, store what the session lacks."""
        assert follow.record.format
        parser = make_parser(follow.record.format)
        with open(follow.path, "rb") as stream:
            result = read_lines(stream, 0, budget=READ_BUDGET)
        prepared = prepare_for_store([e for line in result.lines for e in parser.feed(line)])
        fingerprints = array("q", _fingerprints(prepared))
        same = 0  # the new content's events that this file already produced (and that are stored)
        while (
            same < min(len(fingerprints), len(follow.produced))
            and fingerprints[same] == follow.produced[same]
        ):
            same += 1
        follow.parser, follow.produced, follow.gone = parser, fingerprints, False
        follow.record.offset, follow.record.inode, follow.skipping = result.end, inode, result.skipping
        follow.record.lines = len(result.lines)
        follow.record.skipped = parser.report.skipped_total
        follow.last_growth = time.monotonic()
        self._commit(follow, prepared[same:], end_follow=follow.ending is not None, moved=True)

    def _maybe_idle_end(self, follow: _Follow) -> None:
        pid = follow.record.writer_pid
        idle = time.monotonic() - follow.last_growth
        if follow.ending is not None:
            self._commit(follow, [], end_follow=True)
        elif pid is not None and not _alive(pid) and idle >= self._idle_end_s:
            log.info("the writer of %s (pid %d) is gone; ending the follow", follow.path, pid)
            self._commit(follow, [], end_follow=True, failed_if_open=True)

    # -- committing -------------------------------------------------------------------------------

    def _commit(self, follow: _Follow, events: list[Event], *, end_follow: bool,
                failed_if_open: bool = False, moved: bool = False) -> None:  # fmt: skip
        record = msgspec.structs.replace(follow.record)
        envelope = follow.ending if end_follow else None  # an Unfollow is answered by the ending commit
        if end_follow:
            record.active = False
            record.ended = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
            with self._lock:
                self._follows.pop(follow.record.path, None)
                self._ended.appendleft(_view(_Follow(follow.root, record)))
        root = follow.root
        started = follow.last_growth

        def write(store: Store) -> list[p.Notification]:
            result = store.append_prepared(record.session_id, events)
            store.save_follow(record)
            notes = appended_notes(root, record.session_id, result.events)
            completed = any(isinstance(e.event, Complete) for e in result.events)
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


def _fingerprints(events: list[Event]) -> list[int]:
    """A cheap identity for each event (stable within the process), to compare file incarnations."""
    return [hash(encode_event(e)) for e in events]


def _with_wall_time(event: Event, started: float) -> Event:
    """Codex reports no duration (0): use the turn's wall time since the follow began, as AZUREAL does."""
    if isinstance(event, Complete) and event.duration_ms == 0:
        return msgspec.structs.replace(event, duration_ms=max(0, int((time.time() - started) * 1000)))
    return event


def _started_epoch(started: str) -> float:
    """The epoch of a stored `datetime('now')` (UTC), or now when it cannot be read."""
    try:
        return calendar.timegm(time.strptime(started, "%Y-%m-%d %H:%M:%S"))
    except ValueError:
        return time.time()


def _check_request(request: p.Follow, path: str) -> str | None:
    if not os.path.isabs(request.path):
        return f"follow needs an absolute path: {request.path}"
    if request.format is not None and request.format not in FORMATS:
        return f"unknown format {request.format!r}; expected one of {', '.join(FORMATS)}"
    if os.path.exists(path) and not os.path.isfile(path):
        return f"{path} is not a regular file"
    if not os.path.isdir(os.path.dirname(path)):
        return f"no such directory: {os.path.dirname(path)}"
    return None


def _detect(path: Path) -> str | None:
    try:
        with open(path, "rb") as stream:
            return detect_format(iter_lines(stream, final=False))
    except OSError:
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _view(follow: _Follow) -> p.FollowView:
    r = follow.record
    return p.FollowView(
        root=follow.root, session=r.session_id, path=r.path, format=r.format, offset=r.offset, lines=r.lines,
        skipped=r.skipped, active=r.active, last_activity=r.last_activity, writer_pid=r.writer_pid,
        ended=r.ended,
    )  # fmt: skip
