"""What each `azs` command does, given its :class:`Invocation`. Each returns its exit status."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import msgspec

from azsd.errors import AzsdError
from azsd.ipc.protocol import (
    PROTOCOL_VERSION,
    Notification,
    SessionChanged,
    SessionView,
    WireEvent,
    json_schema,
)

from ._commands_more import archive, backup, doctor, export, fork, search, unarchive, usage
from ._import import import_sessions
from ._invocation import Invocation, UsageError
from ._run import run_turn
from ._shared import Archived
from .follow import follow_session
from .render import event_lines, notification_line, session_header, session_rows
from .render_status import follow_line, ingest_lines, status_lines

__all__ = ["COMMANDS"]

_PAGE: Final = 500


def status(run: Invocation) -> int:
    reply = run.client.status()
    if run.json:
        run.emit(reply)
    else:
        run.say(status_lines(reply, run.config.rpc_endpoint, run.style))
    return 0


def _all_sessions(run: Invocation, worktree: str | None, archived: Archived = "exclude") -> list[SessionView]:
    """Every session of the store (with `worktree`, that worktree's), latest activity first, with usage."""
    views: dict[int, SessionView] = {}
    offset = 0
    while True:
        page = run.client.list_sessions(
            run.root, worktree, limit=_PAGE, offset=offset, archived=archived, with_usage=True
        )
        for view in page.sessions:
            views.setdefault(view.id, view)
        offset += len(page.sessions)
        if not page.sessions or offset >= page.total:
            return list(views.values())


def ls(run: Invocation) -> int:
    """By default: the sessions labelled with the current branch, and the unlabelled ones, not archived."""
    args = run.args
    archived: Archived = "only" if args.archived else "include" if args.all else "exclude"
    if args.all_worktrees or args.worktree is not None:
        views = _all_sessions(run, None if args.all_worktrees else args.worktree, archived)
        hidden = 0
    else:
        everything = _all_sessions(run, None, archived)
        views = [v for v in everything if v.worktree in (run.branch, "")]
        hidden = len(everything) - len(views)
    if run.json:
        for view in views:
            run.emit(view)
        return 0
    run.say(session_rows(views, run.style, worktree=args.all_worktrees))
    if run.tty and not views:
        empty = "no archived sessions" if args.archived else "no sessions yet: `azs new NAME` creates one"
        run.say([run.style.dim(empty)])
    if run.tty and hidden:
        run.say([run.style.dim(f"{hidden} more in other worktrees: `azs ls --all-worktrees`")])
    return 0


def new(run: Invocation) -> int:
    worktree = run.args.worktree if run.args.worktree is not None else run.branch
    view = run.client.create_session(run.root, run.args.name or None, worktree=worktree).session
    if run.json:
        run.emit(view)
    else:
        run.say([f"created S{view.id}" + (f" “{view.name}”" if view.name else "") + f" in {run.root}"])
    return 0


def show(run: Invocation) -> int:
    sid: int = run.args.session
    view = run.client.get_session(run.root, sid).session
    if run.json:
        run.emit(view)
        for event in run.client.get_events(run.root, sid):
            run.emit(event)
        return 0
    run.say(session_header(view, run.style))
    for event in run.client.get_events(run.root, sid):
        run.say(event_lines(event, run.style))
    return 0


def rename(run: Invocation) -> int:
    view = run.client.rename_session(run.root, run.args.session, run.args.name).session
    if run.json:
        run.emit(view)
    else:
        run.say([f"S{view.id} is now “{view.display_name}”"])
    return 0


def _confirm(question: str) -> bool:
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _forks(ids: Sequence[int]) -> str:
    return f"fork{'s' if len(ids) > 1 else ''} " + ", ".join(f"S{sid}" for sid in ids)


def rm(run: Invocation) -> int:
    """Delete a session; its forks stay (as sessions of their own) unless `--with-forks`."""
    sid: int = run.args.session
    with_forks: bool = run.args.with_forks
    forks: Sequence[int] = ()
    if not run.args.yes:
        if not sys.stdin.isatty():
            raise UsageError(f"not deleting S{sid} without confirmation: stdin is not a terminal (add -y)")
        view = run.client.get_session(run.root, sid).session
        forks = view.forks
        question = f"delete S{sid} “{view.display_name}” and its {view.event_count} events?"
        if forks:
            question += f" (with its {_forks(forks)})" if with_forks else f" (its {_forks(forks)} stay)"
        if not _confirm(question):
            raise AzsdError(f"S{sid} was not deleted")
    elif with_forks:
        forks = run.client.get_session(run.root, sid).session.forks
    reply = run.client.delete_session(run.root, sid, with_forks=with_forks)
    if run.json:
        run.emit(reply)
    else:
        run.say([f"deleted S{sid}" + (f" and its {_forks(forks)}" if with_forks and forks else "")])
    return 0


def context(run: Invocation) -> int:
    reply = run.client.build_context(run.root, run.args.session, run.args.prompt, backend=run.args.backend)
    if run.json:
        run.emit(reply)
        return 0
    sys.stdout.write(reply.prompt)  # exactly the prompt; a newline only so a terminal's prompt starts clean
    if run.tty and not reply.prompt.endswith("\n"):
        sys.stdout.write("\n")
    return 0


def ingest(run: Invocation) -> int:
    path = Path(run.args.file).absolute()
    if not path.is_file():
        raise AzsdError(f"no such file: {run.args.file}")
    reply = run.client.ingest_file(run.root, run.args.session, path, format=run.args.format)
    if run.json:
        run.emit(reply)
    else:
        run.say(ingest_lines(run.args.session, reply))
    return 0


def follow(run: Invocation) -> int:
    """Have the daemon follow a file live into a session (until its final event, or `azs unfollow`)."""
    path = Path(run.args.file).absolute()
    if not path.is_file():
        raise AzsdError(f"no such file: {run.args.file}")
    view = run.client.follow(run.root, run.args.session, path, format=run.args.format).follow
    if run.json:
        run.emit(view)
    else:
        run.say([follow_line(view, run.style)])
    return 0


def unfollow(run: Invocation) -> int:
    """Stop following a file, after the daemon stored what it holds now."""
    path = Path(run.args.file).absolute()
    reply = run.client.unfollow(run.root, path)
    if run.json:
        run.emit(reply)
    else:
        run.say([f"stopped following {path}"])
    return 0


def tail(run: Invocation) -> int:
    sid: int = run.args.session
    start = 1
    if run.args.lines is not None:
        view = run.client.get_session(run.root, sid).session
        start = max(1, view.event_count - run.args.lines + 1)
    items = follow_session(run.client, run.root, sid, from_seq=start, follow=run.args.follow)
    try:
        for item in items:
            _print_item(run, item)
    except KeyboardInterrupt:
        return 0  # the way out of `tail -f`
    return 0


def _print_item(run: Invocation, item: WireEvent | SessionChanged) -> None:
    if run.json:
        run.emit(item, flush=True)
    elif isinstance(item, WireEvent):
        run.say(event_lines(item, run.style), flush=True)
    else:
        run.say([run.style.dim(notification_line(item, run.style))], flush=True)


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
                if run.json:
                    run.emit(note, flush=True)
                else:
                    run.say([notification_line(note, run.style)], flush=True)
    except KeyboardInterrupt:
        return 0


def _report_gap(run: Invocation, last: int, note: Notification) -> None:
    missed = note.seq - last - 1
    if last == 0 or missed <= 0:
        return  # the first one seen, or the daemon restarted and counts from 1 again
    if run.json:
        run.emit({"op": "gap", "root": note.root, "missed": missed, "seq": note.seq}, flush=True)
    else:
        run.say(
            [run.style.yellow(f"! missed {missed} notifications (`azs ls` re-reads the store)")], flush=True
        )


def protocol(run: Invocation) -> int:
    if not run.args.schema:
        if run.json:
            run.emit({"protocol": PROTOCOL_VERSION})
        else:
            run.say([f"protocol {PROTOCOL_VERSION}"])
        return 0
    encoded = msgspec.json.encode(json_schema())
    run.say([encoded.decode() if run.json else msgspec.json.format(encoded, indent=2).decode()])
    return 0


COMMANDS: Final = {
    "status": status,
    "ls": ls,
    "new": new,
    "show": show,
    "rename": rename,
    "rm": rm,
    "context": context,
    "ingest": ingest,
    "follow": follow,
    "unfollow": unfollow,
    "run": run_turn,
    "search": search,
    "doctor": doctor,
    "fork": fork,
    "archive": archive,
    "unarchive": unarchive,
    "export": export,
    "backup": backup,
    "import": import_sessions,
    "usage": usage,
    "tail": tail,
    "watch": watch,
    "protocol": protocol,
}
