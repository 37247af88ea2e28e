"""Live follow: agent files tailed line by line (an OpenCode session message by message,
:mod:`.opencode_tail`) into their sessions. One thread (the follower) owns every follow
and takes its work from an inbox (:mod:`.inbox`). Watcher hints (:mod:`.watcher`)
and a stat poll every :data:`POLL_S` make it read each file from its saved offset to EOF
(:class:`~.tailing.Tail`). Each read's events, the new offset (compare-and-swap) and the
run's usage are stored in one transaction (:mod:`.store`): a crash loses nothing
and stores nothing twice. A follow ends on the turn's final event, on `Unfollow`, or once its writer
is gone and the file idle for `follow_idle_s`; a follow given no writer goes idle instead, and on as
its file grows (:mod:`.quiet`). It never spins nor vanishes silently: failures back off
(:mod:`azsd.backoff`), and after :data:`MAX_FAILURES` in a row it ends (the reason in `status`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import stat
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import Final

import msgspec

from azsd.events import Event
from azsd.files import open_regular
from azsd.ipc import protocol as p
from azsd.ipc.replies import error_reply
from azsd.ipc.transport import Envelope
from azsd.model import FollowRecord
from azsd.server.follow.inbox import Committed, End, Fetched, Hint, Message, Resume, Service, Start, Wake
from azsd.server.follow.opencode_tail import make_tail
from azsd.server.follow.quiet import quiet_verdict
from azsd.server.follow.store import start_follow, store_read
from azsd.server.follow.table import FollowTable
from azsd.server.follow.tailing import MAX_FAILURES, Tail, check_follow, detect, is_final, started_epoch
from azsd.server.follow.watcher import watch_dirs
from azsd.server.registry import StoreRegistry
from azsd.server.workers import Outcome
from azsd.store.side_tables import FollowMovedError

__all__ = ["MAX_FAILURES", "POLL_S", "Follower"]

log = logging.getLogger("azsd.ingest.follow")

#: Every followed file is stat-ed this often, watcher or not ...
POLL_S: Final = 0.25
#: ... but an idle one (see azsd.server.follow.quiet) only this often: the watcher's hints wake it sooner.
IDLE_POLL_S: Final = 2.0
#: The longest reason an `Unfollow` may give (it is shown in every `status`).
REASON_MAX: Final = 500
#: Reads of one follow on their way to its store at most (a file read faster than it is stored
#: waits for its commits instead of piling up in memory).
IN_FLIGHT_MAX: Final = 2


class Follower(FollowTable):
    """Owns every live follow; runs one follower thread and one watcher thread."""

    def __init__(self, registry: StoreRegistry, reply: Callable[[Envelope, p.Reply], None],
                 idle_end_s: float) -> None:  # fmt: skip
        self._registry = registry
        self._reply = reply  # thread-safe: goes through the outbox
        super().__init__()
        self._idle_end_s = idle_end_s
        self._inbox: queue.SimpleQueue[Message] = queue.SimpleQueue()
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
        self._inbox.put(Wake())
        for thread in (self._thread, self._watcher):
            if thread.is_alive():
                thread.join(2)

    def follow(self, envelope: Envelope | None, root: str, request: p.Follow,
               accepted: Callable[[str], None] | None = None) -> None:  # fmt: skip
        """Start following a file; `accepted(root)` runs (in a worker thread) once the follow is
        validated and saved, before the client is answered, and never for a refused one."""
        self._inbox.put(Start(envelope, root, request, accepted))

    def unfollow(self, envelope: Envelope, root: str, path: str, reason: str = "unfollowed") -> None:
        self._inbox.put(End(envelope, root, path, reason[:REASON_MAX] or "unfollowed"))

    def resume(self, root: str, records: list[FollowRecord]) -> None:
        """Pick up follows a previous daemon left running."""
        for record in records:
            self._inbox.put(Resume(root, record))

    # -- the follower thread ----------------------------------------------------------------------

    def _run(self) -> None:
        next_poll = time.monotonic()
        while not self._stop.is_set():
            message: Message | None = None  # (None: time to poll)
            with contextlib.suppress(queue.Empty):
                message = self._inbox.get(timeout=max(0.0, next_poll - time.monotonic()))
            try:
                self._dispatch(message)
            except Exception as exc:  # a request among them is answered all the same
                log.exception("follow: %s failed", type(message).__name__)
                if isinstance(message, Start | End) and message.envelope is not None:
                    self._reply(message.envelope, error_reply(exc))
            now = time.monotonic()
            if message is None or now >= next_poll:
                for follow in list(self._follows.values()):
                    if follow.record.idle and now < follow.polled + IDLE_POLL_S:
                        continue  # idle: the watcher's hints wake it, or a slower poll
                    follow.polled = now
                    self._service_safely(follow)
                next_poll = time.monotonic() + POLL_S

    def _dispatch(self, message: Message | None) -> None:
        match message:
            case Start(envelope, root, request, accepted):
                self._add(envelope, root, request, accepted)
            case Resume(root, record):
                self._resume(root, record)
            case End(envelope, root, path, reason):
                self._end_request(envelope, root, path, reason)
            case Hint(changed, deleted):
                for follow in list(self._follows.values()):
                    if follow.record.path in deleted:
                        follow.gone = True
                    if follow.record.path in changed:
                        self._service_safely(follow)
            case Service(path, resync):
                target = self._follows.get(path)
                if target is not None:
                    target.resync = target.resync or resync
                    self._service_safely(target)
            case Fetched(path, done):
                target = self._follows.get(path)
                if target is not None:
                    self._restored(target, done)
            case Committed(follow, generation, error, record):
                self._committed(follow, generation, error, record)
            case Wake() | None:
                pass

    def _add(self, envelope: Envelope | None, root: str, request: p.Follow,
             accepted: Callable[[str], None] | None) -> None:  # fmt: skip
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
            session_id=request.session,
            path=path,
            format=fmt,
            writer_pid=request.writer_pid,
            model=request.model or "",
        )
        follow = make_tail(root, record)
        follow.agent_home = request.agent_home or ""
        follow.given_session = request.agent_session if isinstance(request.agent_session, str) else ""
        follow.resync = True  # not read before `start` has saved where it begins: _rebuild loads that
        self._live(path, follow)
        self._rewatch.set()

        self._registry.call(
            root,
            lambda store: start_follow(store, root, record),
            then=lambda done: self._started(root, envelope, path, done, accepted),
        )

    def _started(self, root: str, envelope: Envelope | None, path: str, done: Future[Outcome],
                 accepted: Callable[[str], None] | None) -> None:  # fmt: skip
        """Answer the `Follow` (in the worker thread), and have the file read at once if it began;
        its root is remembered for the next daemon only then, before the client hears of it."""
        if done.exception() is None and accepted is not None:
            try:
                accepted(root)
            except Exception:  # e.g. the state dir is full: the follow runs, a restart may not resume it
                log.exception("cannot remember %s for the next daemon", root)
        if done.exception() is not None:  # e.g. no such session: gone before the client hears why,
            self._drop(path)  # so that a follow it asks for next is not refused as a second one
            self._registry.deliver(root, envelope, done)
            return
        self._registry.deliver(root, envelope, done)
        self._inbox.put(Service(path))  # read it now rather than at the next poll

    def _resume(self, root: str, record: FollowRecord) -> None:
        if record.path in self._follows:
            return
        follow = make_tail(root, record, started=started_epoch(record.started))
        follow.resync = True
        self._live(record.path, follow)
        self._rewatch.set()
        log.info(
            "resuming the follow of %s into S%d at byte %d", record.path, record.session_id, record.offset
        )

    def _end_request(self, envelope: Envelope, root: str, path: str, reason: str) -> None:
        follow = self._follows.get(os.path.realpath(path))
        if follow is None or follow.root != root:
            self._reply(envelope, p.ErrorReply(code="not_found", message=f"{path} is not followed in {root}"))
            return
        follow.ending, follow.ending_reason = envelope, reason
        self._service_safely(follow)

    # -- reading ----------------------------------------------------------------------------------

    def _service_safely(self, follow: Tail) -> None:
        try:
            self._service(follow)
        except OSError as exc:  # a FIFO, a link, no permission, an I/O error: try again later
            self._failed(follow, f"cannot read the file: {exc.strerror or exc}")
        except Exception as exc:
            log.exception("follow of %s failed; retrying from the stored offset", follow.path)
            self._failed(follow, f"reading the file failed: {exc or type(exc).__name__}")

    def _service(self, follow: Tail) -> None:
        if follow.fetching:
            return  # waiting for the store to give back where the follow stands
        if not follow.backoff.ready(time.monotonic()) and follow.ending is None:
            return  # it failed lately: wait before trying again (an Unfollow does not wait)
        if follow.resync:
            self._fetch(follow)
            return
        if follow.in_flight >= IN_FLIGHT_MAX:
            return  # the store is behind: read on once a commit is back (`_committed`)
        record = follow.record  # after a rebuild: the stored one
        try:
            info = follow.probe()
        except FileNotFoundError:
            follow.gone = follow.missing = True
            self._settled(follow)
            self._when_quiet(follow)
            return
        follow.missing = False
        if not stat.S_ISREG(info.st_mode):
            with open_regular(follow.path, nofollow=True):  # raises an OSError naming what it is
                return  # it became a regular file just now: read it at the next turn
        replaced = info.st_ino != record.inode or info.st_size < record.offset or follow.gone
        if follow.parser is not None and record.inode and replaced:
            log.info("%s was replaced or truncated: re-reading it", follow.path)
            events = follow.reread(info.st_ino)
            ending = follow.ending is not None
            self._commit(follow, events, end_follow=ending, changed=True, reason=follow.ending_reason)
            return
        if follow.parser is None and follow.prepare_parser() is None:
            self._settled(follow)
            self._when_quiet(follow)
            return
        if info.st_size == record.offset and follow.ending is None:
            self._settled(follow)
            self._when_quiet(follow)
            return
        start_offset = record.offset
        events = follow.read_new(info.st_ino)
        # an Unfollow ends it once every whole line is read (a backlog takes reads of its budget)
        end_follow = is_final(events, record.format) or (follow.ending is not None and follow.caught_up)
        why = "the turn ended (its final event is stored)" if follow.ending is None else follow.ending_reason
        self._commit(follow, events, end_follow=end_follow, changed=record.offset != start_offset, reason=why)

    def _fetch(self, follow: Tail) -> None:
        """Ask the store for the follow's saved position; the file is read again once it is back
        (a busy store only makes the follow wait its turn, it never drops it)."""
        follow.resync, follow.fetching = False, True
        follow.store_since = time.monotonic()
        session_id, path = follow.record.session_id, follow.record.path
        self._registry.call(
            follow.root,
            lambda store: store.get_follow(session_id, path),
            then=lambda done: self._inbox.put(Fetched(path, done)),
        )

    def _restored(self, follow: Tail, done: Future[FollowRecord | None]) -> None:
        follow.fetching = False
        exc = done.exception()
        if exc is not None:  # the store cannot be read now (locked, gone): ask again, later and later
            self._failed(follow, f"cannot read where it stands from its store: {exc}")
            return
        stored = done.result()
        if stored is None:  # its row is gone (the session was deleted): nothing to follow into
            log.warning("the follow of %s is no longer in its store; ending it", follow.path)
            self._ended_now(follow, "its row is no longer in its store (was the session deleted?)")
            return
        follow.stored, follow.saved_offset = msgspec.structs.replace(stored), stored.offset
        follow.idle_told = stored.idle
        try:
            follow.restore(stored)
        except OSError as unreadable:  # replaying it up to the offset: the file cannot be read now
            self._failed(follow, f"cannot read the file: {unreadable.strerror or unreadable}")
            return
        self._service_safely(follow)

    # -- failures ---------------------------------------------------------------------------------

    def _failed(self, follow: Tail, reason: str) -> None:
        """One more failure in a row: wait longer before the next try (from the stored offset), or
        end the follow once there were :data:`MAX_FAILURES`."""
        if self._follows.get(follow.record.path) is not follow:
            return  # it ended meanwhile
        follow.generation += 1  # what is still on its way to the store belongs to the failed try
        follow.resync = not follow.fetching  # a fetch on its way brings the stored position anyway
        delay = follow.backoff.fail(reason, time.monotonic())
        failures = follow.backoff.failures
        log.warning(
            "%s: %s (failure %d of %d in a row)%s",
            follow.path, reason, failures, MAX_FAILURES,
            "" if failures >= MAX_FAILURES else f"; next try in {delay:.2f} s",
        )  # fmt: skip
        if failures >= MAX_FAILURES:
            self._give_up(follow)

    def _settled(self, follow: Tail) -> None:
        """The follow read its file and has nothing on its way to the store: its failures are over."""
        if follow.backoff.failures and not follow.in_flight:
            log.info("the follow of %s goes on after %d failures", follow.path, follow.backoff.failures)
            follow.backoff.reset()

    def _give_up(self, follow: Tail) -> None:
        """End a follow that failed too often (as its store last held it), and mark its row ended."""
        reason = f"ended after {follow.backoff.failures} failures in a row: {follow.backoff.reason}"
        log.error("the follow of %s %s", follow.path, reason)
        ended = self._ended_now(follow, reason)
        session_id, path = follow.record.session_id, follow.record.path

        def marked(done: Future[bool]) -> None:
            if done.exception() is not None:
                log.warning("cannot mark the follow of %s ended in its store: %s", path, done.exception())

        self._registry.call(follow.root, lambda store: store.end_follow(session_id, path, ended), then=marked)
        if follow.ending is not None:
            self._reply(follow.ending, p.ErrorReply(code="follow_error", message=f"{path}: {reason}"))

    def _ended_now(self, follow: Tail, reason: str) -> str:
        """End a follow at once, as the store last held it (or as it started); when."""
        ended = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
        record = msgspec.structs.replace(follow.stored or follow.record, active=False, ended=ended)
        self._retire(follow, record, reason)
        return ended

    def _when_quiet(self, follow: Tail) -> None:
        """The file has nothing new: end the follow if asked to, or if it was quiet long enough and
        its writer is gone; a follow given no writer goes idle instead (:mod:`azsd.server.follow.quiet`)."""
        if follow.ending is not None or follow.source_gone:
            self._commit(follow, [], end_follow=True, reason=follow.source_gone or follow.ending_reason)
        elif (quiet := quiet_verdict(follow, time.monotonic(), self._idle_end_s)) is None:
            pass
        elif quiet.ends:
            log.info("ending the follow of %s: %s", follow.path, quiet.reason)
            self._commit(follow, [], end_follow=True, failed_if_open=True, reason=quiet.reason)
        else:  # stored: its session no longer shows running (a restarted daemon resumes it idle)
            log.info("the follow of %s is idle: %s", follow.path, quiet.reason)
            follow.record.idle, follow.idle_reason = True, quiet.reason
            self._commit(follow, [], end_follow=False, changed=True)

    # -- committing -------------------------------------------------------------------------------

    def _commit(self, follow: Tail, events: list[Event], *, end_follow: bool, reason: str = "",
                failed_if_open: bool = False, changed: bool = False) -> None:  # fmt: skip
        """Store `events` with the follow's new position, provided the stored position is still the
        one this follower read from (compare-and-swap); with `end_follow` the follow ends (`reason`)."""
        if not events and not end_follow and not changed:
            return
        record = msgspec.structs.replace(follow.record)
        expected, follow.saved_offset = follow.saved_offset, record.offset
        envelope = follow.ending if end_follow else None  # an Unfollow is answered by the ending commit
        if end_follow:
            record.active, record.ended = False, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
            self._close(follow)  # shown live until the commit is done
        root = follow.root
        started = follow.last_growth
        generation = follow.generation
        if not follow.in_flight:
            follow.store_since = time.monotonic()
        follow.in_flight += 1

        def committed(done: Future[list[p.Notification]]) -> None:
            exc = done.exception()
            if exc is None:
                self._registry.publish(root, done.result())
            if end_follow:  # now, and not before, `status` shows it ended
                if exc is not None:
                    log.warning("storing the end of the follow of %s failed: %s", record.path, exc)
                self._retire(follow, record, reason)
            if envelope is not None:  # an Unfollow, answered once its last read is stored
                self._reply(envelope, p.OkReply() if exc is None else error_reply(exc))
            self._inbox.put(Committed(follow, generation, exc, record))

        failed_ms = int((time.monotonic() - started) * 1000) if failed_if_open else None
        change = ""  # the session's badge left running, or runs again: said once, as it is stored
        if not end_follow and record.idle != follow.idle_told:
            follow.idle_told, change = record.idle, "idle" if record.idle else "running"
        usage = follow.take_usage()  # the run's usage so far, stored with the read when it changed
        owned = follow.agent_histories() if end_follow else []  # the agent's own record of the run
        apart, follow.keep_apart = follow.keep_apart, ""  # a rotated file's earlier usage, kept
        write = partial(store_read, root=root, record=record, events=events, expected=expected, change=change)
        self._registry.call(
            root,
            partial(write, failed_ms=failed_ms, usage=usage, owned=owned, keep_apart=apart),
            then=committed,
        )

    def _committed(self, follow: Tail, generation: int, error: BaseException | None,
                   record: FollowRecord) -> None:  # fmt: skip
        """The store answered a commit of `follow` (nothing more to do if the follow ended)."""
        if self._follows.get(follow.record.path) is not follow:
            return
        follow.in_flight -= 1
        follow.store_since = time.monotonic()
        if error is None:
            follow.stored = record
        if generation != follow.generation:
            return  # sent before a failure: it was counted once, and the follow re-reads anyway
        if error is None:
            if follow.backoff.failures:
                log.info("the follow of %s goes on after %d failures", follow.path, follow.backoff.failures)
                follow.backoff.reset()
            self._service_safely(follow)  # a file read faster than it is stored: read on now
        elif isinstance(error, FollowMovedError):  # another writer stored those lines
            log.warning("%s; going on from there", error)
            follow.generation += 1
            follow.resync = not follow.fetching
            self._service_safely(follow)
        else:
            self._failed(follow, f"storing its new lines failed: {error}")

    def _watch(self) -> None:
        """The watcher thread: file-system events in the followed directories become hints."""
        watch_dirs(self._watched_dirs, lambda changed, deleted: self._inbox.put(Hint(changed, deleted)),
                   self._stop, self._rewatch, POLL_S)  # fmt: skip
