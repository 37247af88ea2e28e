"""The `azs` commands over sessions themselves: ls, new, rename, rm, fork, archive, unarchive, context
(`show` and `log` are :mod:`.transcript`).

Each takes its :class:`~.invocation.Invocation` and returns its exit status.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Final

import msgspec

from azsd.errors import AzsdError
from azsd.ipc.protocol import SessionView
from azsd_client._shared import Archived
from azsd_client.render.sessions import by_latest, session_rows
from azsd_client.render.text import plural

from .invocation import Invocation, UsageError

__all__ = [
    "active_since",
    "all_sessions",
    "archive",
    "context",
    "fork",
    "ls",
    "new",
    "rename",
    "rm",
    "unarchive",
]

_PAGE: Final = 500


def all_sessions(run: Invocation, worktree: str | None, archived: Archived = "exclude") -> list[SessionView]:
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


def with_forks(views: Sequence[SessionView], among: Sequence[SessionView]) -> list[SessionView]:
    """`views` with their forks among `among` (a listing names each session's parent, and the daemon
    fills `forks` only for one session's view): `ls --json` says both sides of a lineage."""
    forks: dict[int, list[int]] = {}
    for view in among:
        if view.parent is not None:
            forks.setdefault(view.parent, []).append(view.id)
    return [msgspec.structs.replace(v, forks=tuple(sorted(forks[v.id]))) if v.id in forks else v
            for v in views]  # fmt: skip


def ls(run: Invocation) -> int:
    """By default: the sessions labelled with the current branch, and the unlabelled ones, not archived."""
    args = run.args
    archived: Archived = "only" if args.archived else "include" if args.all else "exclude"
    if args.all_worktrees or args.worktree is not None:
        everything = views = all_sessions(run, None if args.all_worktrees else args.worktree, archived)
        hidden = 0
    else:
        everything = all_sessions(run, None, archived)
        views = [v for v in everything if v.worktree in (run.branch, "")]
        hidden = len(everything) - len(views)
    views = by_latest(with_forks(views, everything))
    if args.since is not None:
        views = [v for v in views if active_since(v, args.since)]
    if args.limit is not None:
        views = views[: args.limit]
    if not views and not hidden and run.outside_git:
        raise UsageError(
            f"{run.root} is not inside a git worktree, and holds no sessions: run azs inside the worktree "
            "whose sessions you want, or give --root DIR"
        )
    run.out.results(views, lambda vs, style: session_rows(vs, style, worktree=args.all_worktrees))
    if not views:
        run.out.hint(
            "no archived sessions" if args.archived else "no sessions yet: `azs new NAME` creates one"
        )
    if hidden:  # on stderr even on a pipe: a filter never hides sessions without a word
        run.out.aside(f"{hidden:,} more on other branches: `azs ls --all-branches`")
    return 0


def active_since(view: SessionView, since: str) -> bool:
    """Whether the session was active on the day `since` (``YYYY-MM-DD`` or ``YYYYMMDD``, UTC) or after:
    its latest turn's time, else its creation."""
    day = since if "-" in since else f"{since[:4]}-{since[4:6]}-{since[6:]}"
    return (view.last_activity or view.created)[:10] >= day


def _named(view: SessionView) -> str:
    return f" “{view.name}”" if view.name else ""


def new(run: Invocation) -> int:
    worktree = run.args.worktree if run.args.worktree is not None else run.branch
    root = run.new_root
    with run.creating_store(root):
        view = run.client.create_session(root, run.args.name or None, worktree=worktree).session
    run.out.result(view, lambda v, _: [f"created S{v.id}{_named(v)} in {root}"])
    return 0


def rename(run: Invocation) -> int:
    """A new name for a session; an empty one is refused (the session would be called S3 again)."""
    if not run.args.name.strip():
        raise UsageError(f"the new name is empty: give S{run.args.session} a name with a word in it")
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
        question = f"delete S{sid} “{view.display_name}” and its {plural(view.event_count, 'event')}?"
        if forks:
            question += f" (with its {_forks(forks)})" if with_forks else f" (its {_forks(forks)} stay)"
        if not _confirm(question):
            raise AzsdError(f"S{sid} was not deleted")
    elif with_forks:
        forks = run.client.get_session(run.root, sid).session.forks
    run.client.delete_session(run.root, sid, with_forks=with_forks)
    gone = f" and its {_forks(forks)}" if with_forks and forks else ""
    deleted = {"deleted": [sid, *(forks if with_forks else ())]}
    run.out.result(deleted, lambda _, __: [f"deleted S{sid}{gone}"])
    return 0


def fork(run: Invocation) -> int:
    """`--at SEQ`, or `--at -N`: all but the session's last N events."""
    a = run.args
    at: int = a.at
    if at < 0:
        stored = run.client.get_session(run.root, a.session).session.event_count
        if stored + at < 1:
            raise AzsdError(
                f"S{a.session} has {plural(stored, 'event')}: --at {at} leaves none to copy "
                "(`azs show` lists them with their seqs)"
            )
        at = stored + at
    view = run.client.fork_session(run.root, a.session, at, a.name).session
    at = view.fork_seq if view.fork_seq is not None else at
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
    """Exactly the prompt, ended by a newline (``--json``: ``{"session", "backend", "prompt"}``, the
    prompt to the byte)."""
    a = run.args
    reply = run.client.build_context(run.root, a.session, a.prompt, backend=a.backend)
    run.out.text({"session": a.session, "backend": a.backend, "prompt": reply.prompt}, reply.prompt)
    return 0
