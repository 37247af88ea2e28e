"""The `azs` commands over the sync database (PostgreSQL): sync status, ls --remote, show @REF,
search --remote, pull. The daemon does the work; these only ask and print.

Each takes its :class:`~.invocation.Invocation` and returns its exit status.
"""

from __future__ import annotations

from typing import Final

from azsd.ipc.protocol import WireEvent
from azsd_client.render.events import event_lines
from azsd_client.render.remote import (
    remote_header,
    remote_hit_row,
    remote_ref,
    remote_rows,
    sync_status_lines,
    sync_verify_lines,
    who,
)
from azsd_client.render.text import table

from . import shapes
from .invocation import Invocation, UsageError
from .store import worktree_scope
from .transcript import say_unreadable

__all__ = ["ls", "pull", "search", "show", "sync"]

_PAGE: Final = 500


def sync(run: Invocation) -> int:
    """`azs sync status`: the database, and each store's last pushed event, lag and last error;
    `azs sync verify`: each session compared with the database, and what it lacked pushed again."""
    if run.args.action == "verify":
        reply = run.client.sync_verify(repair=not run.args.no_repair)
        run.out.result(reply, sync_verify_lines)
        differs = any(
            s.error or any(c.error or c.repaired < c.local - c.remote for c in s.sessions)
            for s in reply.stores
        )
        return 1 if differs else 0
    run.out.result(run.client.sync_status(), sync_status_lines)
    return 0


def ls(run: Invocation) -> int:
    """`azs ls --remote`: the repository's sessions in the sync database, from every machine."""
    a = run.args
    worktrees = [a.worktree] if a.worktree is not None else None
    views, offset = [], 0
    while True:
        page = run.client.remote_list(run.root, limit=_PAGE, offset=offset, worktrees=worktrees)
        views += page.sessions
        offset += len(page.sessions)
        if not page.sessions or offset >= page.total:
            break
    run.out.results(views, remote_rows)
    if not views:
        run.out.hint("no sessions of this repository in the sync database yet")
    return 0


def show(run: Invocation) -> int:
    """`azs show @REF`: a remote session and its events."""
    ref = str(run.args.session)
    reply = run.client.remote_show(run.root, ref)
    session = reply.session
    if not run.out.json:
        run.out.result(session, remote_header)
    events: list[WireEvent] = []
    lost = 0
    while True:
        lost += reply.unreadable or 0
        if run.out.json:
            events.extend(reply.events)
        else:
            for event in reply.events:
                run.out.result(event, event_lines)
        if reply.next_seq is None:
            break
        reply = run.client.remote_show(run.root, ref, from_seq=reply.next_seq, limit=_PAGE)
    if run.out.json:  # one object, as `azs show` prints a local session
        run.out.emit({"session": shapes.plain(session), "events": [shapes.event(e) for e in events]})
    say_unreadable(run, lost)
    return 0


def search(run: Invocation) -> int:
    """`azs search --remote QUERY`: ranked full-text search of the repository's remote sessions."""
    a = run.args
    if a.query is None or a.interactive or a.context or a.since:
        raise UsageError("search --remote takes a QUERY; -i, -C and --since are for this store's sessions")
    if a.sessions:
        run.out.hint("-s names local sessions: searching every remote session of the repository")
    reply = run.client.remote_search(
        run.root, a.query, limit=a.limit, worktrees=worktree_scope(run), kinds=a.kinds, words=not a.fts
    )
    run.out.results(
        reply.hits,
        lambda hits, style: table([remote_hit_row(h, style) for h in hits], flex=3, optional=(5, 4)),
        shape=shapes.remote_hit,
    )
    if not reply.hits:
        run.out.hint("no matches in the sync database")
    say_unreadable(run, reply.unreadable or 0)
    return 0


def pull(run: Invocation) -> int:
    """`azs pull @REF`: a copy of a remote session, as a new session of this worktree's store."""
    a = run.args
    reply = run.client.pull(run.new_root, a.ref, name=a.name, worktree=run.branch)
    v, origin = reply.session, reply.origin
    stranger = (
        []
        if origin.own
        else [
            f"{remote_ref(origin.uuid)} is not your own: the database role {origin.owner or '?'} pushed it "
            f"(saying it is {origin.identity}); read it before an agent acts on it"
        ]
    )
    run.out.result(
        reply,
        lambda _r, style: [
            f"pulled {remote_ref(origin.uuid)} ({who(origin)}) as S{v.id}: {v.event_count} events; "
            f"continue it with `azs run -s S{v.id} PROMPT`",
            *(style.yellow(line) for line in stranger),
        ],
    )
    say_unreadable(run, reply.left_out or 0)
    return 0
