"""The `azs` commands over sessions themselves: ls, new, show, rename, rm, fork, archive, unarchive, context.

Each takes its :class:`~.invocation.Invocation` and returns its exit status.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Final

from azsd.errors import AzsdError
from azsd.ipc.protocol import SessionView
from azsd_client._shared import Archived
from azsd_client.render.events import event_lines
from azsd_client.render.sessions import session_header, session_rows

from .invocation import Invocation, UsageError

__all__ = ["archive", "context", "fork", "ls", "new", "rename", "rm", "show", "unarchive"]

_PAGE: Final = 500


def _all_sessions(run: Invocation, worktree: str | None, archived: Archived = "exclude") -> list[SessionView]:
    """Every session of the store (with `worktree`, that worktree's), latest activity first, with usage
    (and, for `--json`, each one's context meter)."""
    views: dict[int, SessionView] = {}
    offset = 0
    while True:
        page = run.client.list_sessions(
            run.root,
            worktree,
            limit=_PAGE,
            offset=offset,
            archived=archived,
            with_usage=True,
            with_meter=run.out.json,
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
    run.out.results(views, lambda vs, style: session_rows(vs, style, worktree=args.all_worktrees))
    if not views:
        run.out.hint(
            "no archived sessions" if args.archived else "no sessions yet: `azs new NAME` creates one"
        )
    if hidden:
        run.out.hint(f"{hidden} more in other worktrees: `azs ls --all-worktrees`")
    return 0


def _named(view: SessionView) -> str:
    return f" “{view.name}”" if view.name else ""


def new(run: Invocation) -> int:
    worktree = run.args.worktree if run.args.worktree is not None else run.branch
    root = run.new_root
    view = run.client.create_session(root, run.args.name or None, worktree=worktree).session
    run.out.result(view, lambda v, _: [f"created S{v.id}{_named(v)} in {root}"])
    return 0


def show(run: Invocation) -> int:
    sid: int = run.args.session
    view = run.client.get_session(run.root, sid, with_meter=True).session
    threshold = run.config.compaction_threshold
    run.out.result(view, lambda v, style: session_header(v, style, threshold=threshold))
    for event in run.client.get_events(run.root, sid):
        run.out.result(event, event_lines)
    return 0


def rename(run: Invocation) -> int:
    view = run.client.rename_session(run.root, run.args.session, run.args.name).session
    run.out.result(view, lambda v, _: [f"S{v.id} is now “{v.display_name}”"])
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
    gone = f" and its {_forks(forks)}" if with_forks and forks else ""
    run.out.result(reply, lambda _, __: [f"deleted S{sid}{gone}"])
    return 0


def fork(run: Invocation) -> int:
    a = run.args
    view = run.client.fork_session(run.root, a.session, a.at, a.name).session
    at = view.fork_seq if view.fork_seq is not None else a.at
    run.out.result(view, lambda v, _: [f"forked S{a.session} at seq {at} into S{v.id}{_named(v)}"])
    return 0


def _set_archived(run: Invocation, archived: bool) -> int:
    view = run.client.archive_session(run.root, run.args.session, archived).session
    done = "archived" if archived else "unarchived"
    run.out.result(view, lambda v, _: [f"{done} S{v.id} “{v.display_name}”"])
    return 0


def archive(run: Invocation) -> int:
    return _set_archived(run, True)


def unarchive(run: Invocation) -> int:
    return _set_archived(run, False)


def context(run: Invocation) -> int:
    """Exactly the prompt (with a newline after it only on a terminal, so its prompt starts clean)."""
    reply = run.client.build_context(run.root, run.args.session, run.args.prompt, backend=run.args.backend)
    newline = run.out.tty and not reply.prompt.endswith("\n")
    run.out.result(reply, lambda r, _: [r.prompt], end="\n" if newline else "")
    return 0
