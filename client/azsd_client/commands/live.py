"""The live `azs` commands: a session's events as they are stored (tail), every change to a store
(watch), and the agent files the daemon reads into sessions (ingest, follow, unfollow).

Each takes its :class:`~.invocation.Invocation` and returns its exit status; `azs run`, which follows
the turn it starts, is :mod:`.run`.
"""

from __future__ import annotations

from pathlib import Path

from azsd.errors import AzsdError
from azsd.ipc.protocol import Notification, WireEvent
from azsd_client.follow import FollowItem, follow_session
from azsd_client.render.events import event_lines, notification_line
from azsd_client.render.status import follow_line, ingest_lines
from azsd_client.render.text import Style

from .invocation import Invocation

__all__ = ["follow", "ingest", "tail", "unfollow", "watch"]


def _item_lines(item: FollowItem, style: Style) -> list[str]:
    """An event as `show` prints it; a rename, completion or deletion as a dim line."""
    if isinstance(item, WireEvent):
        return event_lines(item, style)
    return [style.dim(notification_line(item, style))]


def tail(run: Invocation) -> int:
    sid: int = run.args.session
    start = 1
    if run.args.lines is not None:
        view = run.client.get_session(run.root, sid).session
        start = max(1, view.event_count - run.args.lines + 1)
    items = follow_session(run.client, run.root, sid, from_seq=start, follow=run.args.follow)
    try:
        for item in items:
            run.out.result(item, _item_lines, flush=True)
    except KeyboardInterrupt:
        return 0  # the way out of `tail -f`
    return 0


def _notification_lines(note: Notification, style: Style) -> list[str]:
    return [notification_line(note, style)]


def watch(run: Invocation) -> int:
    """Every notification of the store, one a line; a gap in their seqs is reported, not hidden."""
    run.client.status()  # fail now, not never, when the daemon is not there
    last = 0
    try:
        with run.client.subscribe(run.root) as subscription:
            while True:
                note = subscription.recv(timeout=None)
                if note is None:
                    continue
                _report_gap(run, last, note)
                last = note.seq
                run.out.result(note, _notification_lines, flush=True)
    except KeyboardInterrupt:
        return 0


def _report_gap(run: Invocation, last: int, note: Notification) -> None:
    missed = note.seq - last - 1
    if last == 0 or missed <= 0:
        return  # the first one seen, or the daemon restarted and counts from 1 again
    gap = {"op": "gap", "root": note.root, "missed": missed, "seq": note.seq}
    said = f"! missed {missed} notifications (`azs ls` re-reads the store)"
    run.out.result(gap, lambda _, style: [style.yellow(said)], flush=True)


def _existing_file(run: Invocation) -> Path:
    """The file argument, made absolute; a clear error when it is missing or is a directory (the
    daemon names any other kind of file it refuses)."""
    path = Path(run.args.file).absolute()
    if path.is_dir():
        raise AzsdError(
            f"{run.args.file} is a directory: give one agent JSONL file (`azs import` reads them all)"
        )
    if not path.exists():
        raise AzsdError(f"no such file: {run.args.file}")
    return path


def ingest(run: Invocation) -> int:
    path = _existing_file(run)
    reply = run.client.ingest_file(run.root, run.args.session, path, format=run.args.format)
    run.out.result(reply, lambda r, _: ingest_lines(run.args.session, r))
    return 0


def follow(run: Invocation) -> int:
    """Have the daemon follow a file live into a session (until its final event, or `azs unfollow`)."""
    path = _existing_file(run)
    view = run.client.follow(run.root, run.args.session, path, format=run.args.format).follow
    run.out.result(view, lambda v, style: [follow_line(v, style)])
    return 0


def unfollow(run: Invocation) -> int:
    """Stop following a file, after the daemon stored what it holds now."""
    path = Path(run.args.file).absolute()
    reply = run.client.unfollow(run.root, path)
    run.out.result(reply, lambda _, __: [f"stopped following {path}"])
    return 0
