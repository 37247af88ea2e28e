"""The live `azs` commands: a session's events as they are stored (tail), every change to a store
(watch), and the agent files the daemon reads into sessions (ingest, follow, unfollow).

Each takes its :class:`~.invocation.Invocation` and returns its exit status; `azs run`, which follows
the turn it starts, is :mod:`.run`.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from azsd.errors import AzsdError, DaemonUnavailable
from azsd.ipc.protocol import Notification, SessionChanged, WireEvent
from azsd_client._shared import refuse_unless_listening
from azsd_client.client import Client
from azsd_client.follow import FollowItem, follow_session
from azsd_client.render.events import event_lines, notification_line
from azsd_client.render.status import follow_line, ingest_lines
from azsd_client.render.term import terminal_safe
from azsd_client.render.text import Line, Style, format_size, join, plural

from . import shapes
from .invocation import Invocation

__all__ = ["follow", "ingest", "tail", "unfollow", "watch"]


#: How long `watch` waits in silence before it looks whether the daemon is still there.
_CHECK_S: Final = 2.0
#: How long `tail -f` waits in silence before it re-reads the session (and so sees the daemon gone).
_TAIL_CHECK_S: Final = 3.0
#: How often `azs ingest` says how far it is.
_PROGRESS_S: Final = 0.5


def _item_lines(item: FollowItem, style: Style) -> list[Line]:
    """An event as `show` prints it; a rename, completion or deletion as a dim line."""
    if isinstance(item, WireEvent):
        return event_lines(item, style)
    return [join(style.dim("      "), notification_line(item, style))]


def _item_shape(item: FollowItem) -> dict[str, Any]:
    return shapes.change(item) if isinstance(item, SessionChanged) else shapes.event(item)


def _daemon_news(run: Invocation) -> Any:
    """What `tail -f` and `watch` say (on stderr, and as a JSON line with ``--json``) when the daemon
    goes away and when it is back."""

    def said(up: bool) -> None:
        if up:
            message = "azsd is back: following again"
        else:
            message = (
                "azsd went away: waiting for it to come back (`systemctl --user start azsd` or `azsd run`)"
            )
        if run.out.json:
            run.out.emit({"type": "daemon", "running": up, "message": message}, flush=True)
        else:
            sys.stderr.write(terminal_safe(f"azs: {message}") + "\n")
            sys.stderr.flush()

    return said


def tail(run: Invocation) -> int:
    """The session's last 10 events (`-n N`: N; `--from SEQ`: from there), then with `-f` new ones."""
    sid: int = run.args.session
    start: int = run.args.from_seq or 1
    if run.args.from_seq is None:
        view = run.client.get_session(run.root, sid).session
        start = max(1, view.event_count - run.args.lines + 1)
    items = follow_session(
        run.client, run.root, sid, from_seq=start, follow=run.args.follow, idle_check_s=_TAIL_CHECK_S,
        on_daemon=_daemon_news(run),
    )  # fmt: skip
    try:
        for item in items:
            run.out.result(item, _item_lines, shape=_item_shape, flush=True)
    except KeyboardInterrupt:
        return 0  # the way out of `tail -f`
    return 0


def _notification_lines(note: Notification, style: Style) -> list[Line]:
    return [notification_line(note, style)]


def watch(run: Invocation) -> int:
    """Every notification of the store, one a line; a gap in their seqs is reported, not hidden; the
    daemon going away and coming back is said (its socket is looked at after each quiet spell)."""
    run.client.status()  # fail now, not never, when the daemon is not there
    news = _daemon_news(run)
    last, up = 0, True
    try:
        with run.client.subscribe(run.root) as subscription:
            while True:
                note = subscription.recv(timeout=_CHECK_S)
                if note is None:
                    now_up = _listening(run)
                    if now_up != up:
                        up, last = now_up, 0  # a new daemon numbers its notifications from 1
                        news(up)
                    continue
                _report_gap(run, last, note)
                last = note.seq
                run.out.result(note, _notification_lines, shape=shapes.notification, flush=True)
    except KeyboardInterrupt:
        return 0


def _listening(run: Invocation) -> bool:
    try:
        refuse_unless_listening(run.config.rpc_endpoint)
    except DaemonUnavailable:
        return False
    return True


def _report_gap(run: Invocation, last: int, note: Notification) -> None:
    missed = note.seq - last - 1
    if last == 0 or missed <= 0:
        return  # the first one seen, or the daemon restarted and counts from 1 again
    gap = {"type": "gap", "root": note.root, "missed": missed, "seq": note.seq, "notification_seq": note.seq}
    said = f"! missed {plural(missed, 'notification')} (`azs ls` re-reads the store)"
    run.out.result(gap, lambda _, style: [style.yellow(said)], flush=True)


def _existing_file(run: Invocation, *, may_be_missing: bool = False) -> Path:
    """The file argument, made absolute; a clear error when it is a directory or (unless it
    `may_be_missing`: a follow waits for it) missing (the daemon names any other kind it refuses)."""
    path = Path(run.args.file).absolute()
    location, sep, _ = str(path).rpartition("#")
    if sep and Path(location).exists():  # an OpenCode session: <opencode.db or storage dir>#<id>
        return path
    if path.is_dir():
        raise AzsdError(
            f"{run.args.file} is a directory: give one agent JSONL file (`azs import` reads them all)"
        )
    if not path.exists() and not may_be_missing:
        raise AzsdError(f"no such file: {run.args.file}")
    return path


def ingest(run: Invocation) -> int:
    """Store a finished file (a file of which nothing parses is the daemon's error, naming the format
    the file looks like), in `-s S3` or a new session named after the file; how far it is, from the
    start, on a terminal; Ctrl-C leaves the daemon storing it, and says so."""
    path = _existing_file(run)
    sid: int | None = run.args.session
    root = run.root
    if sid is None:
        root = run.new_root  # a new session: never in a stray directory
        with run.creating_store(root):
            sid = run.client.create_session(root, path.stem, worktree=run.branch).session.id
        run.out.note(f"made S{sid} “{path.stem}” for {path.name}", flush=True)
    try:
        with _progress(run, root, sid, path):
            reply = run.client.ingest_file(root, sid, path, format=run.args.format)
    except KeyboardInterrupt:
        sys.stderr.write(
            f"azs: interrupted: azsd goes on storing {path} into S{sid} to its end (what is stored once "
            f"is never stored twice); `azs show S{sid}` shows what is there\n"
        )
        return 130
    except AzsdError:
        if run.args.session is None:  # nothing of it was stored: the session made for it goes too
            with contextlib.suppress(AzsdError):
                if not run.client.get_session(root, sid).session.event_count:
                    run.client.delete_session(root, sid)
        raise
    done: int = sid
    run.out.result(
        reply, lambda r, _: ingest_lines(done, r), shape=lambda r: {"session": done, **shapes.plain(r)}
    )
    return 0


@contextlib.contextmanager
def _progress(run: Invocation, root: str, sid: int, path: Path) -> Iterator[None]:
    """While the daemon ingests `path`: on a terminal, a line on stderr rewritten every half second
    with the events stored so far (asked on a connection of its own)."""
    if not sys.stderr.isatty() or run.out.json:
        yield
        return
    stop = threading.Event()
    what = f"ingesting {path.name} ({format_size(path.stat().st_size)}) into S{sid}"

    def report() -> None:
        with Client(run.config, timeout=run.args.timeout) as client:
            while not stop.wait(_PROGRESS_S):
                try:
                    stored = client.get_session(root, sid).session.event_count
                except AzsdError:
                    continue
                sys.stderr.write(f"\r{what}: {stored:,} events…")
                sys.stderr.flush()

    reporter = threading.Thread(target=report, name="azs-progress", daemon=True)
    sys.stderr.write(f"{what}…")
    sys.stderr.flush()
    reporter.start()
    try:
        yield
    finally:
        stop.set()
        reporter.join(timeout=2 * _PROGRESS_S + run.args.timeout)
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()


def follow(run: Invocation) -> int:
    """Have the daemon follow a file live into a session (until its final event, or `azs unfollow`);
    a file that does not exist yet is waited for."""
    path = _existing_file(run, may_be_missing=True)
    view = run.client.follow(run.root, run.args.session, path, format=run.args.format).follow
    run.out.result(view, lambda v, style: [follow_line(v, style)])
    return 0


def unfollow(run: Invocation) -> int:
    """Stop following a file, after the daemon stored what it holds now."""
    path = Path(run.args.file).absolute()
    run.client.unfollow(run.root, path)
    run.out.result({"path": str(path), "following": False}, lambda _, __: [f"stopped following {path}"])
    return 0
