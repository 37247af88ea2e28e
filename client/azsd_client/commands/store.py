"""The `azs` commands over a whole store: search, usage, export and backup.

Each takes its :class:`~.invocation.Invocation` and returns its exit status.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from azsd.config import price_table
from azsd.errors import AzsdError, RemoteError
from azsd.files import atomic_write
from azsd.ipc.protocol import ExportReply, SearchHit
from azsd_client.render.reports import (
    NO_ACTIVE_BLOCK,
    backup_line,
    block_lines,
    context_lines,
    hits_beyond,
    period_lines,
    price_lines,
    price_shape,
    search_table,
    usage_lines,
)
from azsd_client.render.text import format_size, plural

from . import shapes
from .invocation import Invocation, UsageError

__all__ = [
    "SHOW_INDEXING_FROM",
    "backup",
    "export",
    "prune",
    "search",
    "usage",
    "wait_for_index",
    "worktree_scope",
]


def worktree_scope(run: Invocation) -> list[str] | None:
    """The worktrees a command covers: `--worktree W`, all with `--all-worktrees` (None), else like
    `ls`: the current branch's sessions and the unlabelled ones."""
    if run.args.all_worktrees:
        return None
    if run.args.worktree is not None:
        return [run.args.worktree]
    return list(dict.fromkeys([run.branch, ""]))


#: Rows waiting to be indexed from which `azs search` shows the daemon indexing them (fewer: the
#: search indexes them itself, in a moment).
SHOW_INDEXING_FROM: Final = 2000
#: How often the waiting search asks how far the index is; polls without progress before it searches
#: anyway (the search then indexes the rest itself).
_POLL_S: Final = 0.25
_STALLED_POLLS: Final = 20


def wait_for_index(run: Invocation) -> None:
    """While the store's search index is far behind its events (another program, AZUREAL, wrote many
    rows), say on stderr how the daemon's background indexing goes: ``indexing 12,000 of 40,000 new
    events…``, on one line rewritten at a terminal, else a line a second at most."""
    try:
        pending = run.client.index_status(run.root).pending
    except RemoteError as exc:  # a daemon from before IndexStatus: it does not know the request
        if exc.code != "bad_request":
            raise
        return
    if pending < SHOW_INDEXING_FROM:
        return
    tty = sys.stderr.isatty()
    total, stalled, said = pending, 0, float("-inf")
    while pending >= SHOW_INDEXING_FROM and stalled < _STALLED_POLLS:
        total = max(total, pending)
        now = time.monotonic()
        if tty or now - said >= 1.0:
            line = f"indexing {total - pending:,} of {total:,} new events…"
            sys.stderr.write(f"\r{line}" if tty else f"{line}\n")
            sys.stderr.flush()
            said = now
        time.sleep(_POLL_S)
        before, pending = pending, run.client.index_status(run.root).pending
        stalled = stalled + 1 if pending >= before else 0
    back = "\r" if tty else ""
    sys.stderr.write(f"{back}indexing {total - pending:,} of {total:,} new events: searching\n")
    sys.stderr.flush()


def search(run: Invocation) -> int:
    """Ranked full-text search, plain text unless `--fts` (a query FTS5 cannot parse is the daemon's
    `bad_request`, exit 1). While the index is far behind (:func:`wait_for_index`), its progress is
    shown first; hits the default branch scope hides are counted on stderr."""
    a = run.args
    if a.query is None and not a.interactive:
        raise UsageError("give a query: azs search QUERY (or search as you type: azs search -i)")
    wait_for_index(run)
    named = a.sessions and a.worktree is None  # sessions named outright are searched wherever they are
    scope = None if named else worktree_scope(run)
    if a.since is not None:  # the sessions active since then (the store keeps no time per event)
        from .sessions import active_since, all_sessions

        recent = [v.id for v in all_sessions(run, None) if active_since(v, a.since)]
        a.sessions = [sid for sid in a.sessions if sid in recent] if a.sessions else recent
        if not a.sessions:
            run.out.hint(f"no sessions active since {a.since}")
            return 0
    if a.interactive:
        from .picker import pick

        return pick(run, lambda query: run.client.search(
            run.root, query, limit=a.limit, worktrees=scope, sessions=a.sessions, kinds=a.kinds,
            words=not a.fts,
        ).hits)  # fmt: skip
    reply = run.client.search(
        run.root, a.query, limit=a.limit, worktrees=scope, sessions=a.sessions, kinds=a.kinds,
        words=not a.fts,
    )  # fmt: skip
    if a.context:
        _with_context(run, reply.hits, a.context)
    else:
        run.out.results(reply.hits, search_table, shape=shapes.hit)
    if reply.partial:
        run.out.aside(
            "the search ran out of time before it looked at every candidate: these are the best it "
            "found, and there may be more (narrow it: -s S…, --kind, a rarer word)"
        )
    hidden = _hidden_hits(run, reply.hits) if scope is not None and a.worktree is None else 0
    if hidden:
        more = f"{hidden:,}+" if hidden >= a.limit else f"{hidden:,}"
        run.out.aside(f"{more} more {'hit' if hidden == 1 else 'hits'} on other branches: --all-branches")
    elif not reply.hits:
        run.out.hint("no matches")
    return 0


def _hidden_hits(run: Invocation, shown: Sequence[SearchHit]) -> int:
    """How many hits the same search has in sessions of other branches (up to the limit)."""
    a = run.args
    everywhere = run.client.search(
        run.root, a.query, limit=a.limit, sessions=a.sessions, kinds=a.kinds, words=not a.fts
    ).hits
    return hits_beyond(shown, everywhere)


def _with_context(run: Invocation, hits: Sequence[SearchHit], around: int) -> None:
    """`search -C N`: each hit as a piece of its transcript, the N events before and after it."""
    for n, hit in enumerate(hits):
        first = max(1, hit.seq - around)
        page = run.client.get_events_page(run.root, hit.session, from_seq=first, limit=2 * around + 1)
        events = [e for e in page.events if e.seq <= hit.seq + around]
        first_hit = n == 0
        run.out.result(
            (hit, events),
            lambda he, style: context_lines(he[0], he[1], style, first=first_hit),  # noqa: B023 (used at once)
            shape=lambda he: {**shapes.hit(he[0]), "context": [shapes.event(e) for e in he[1]]},
        )


def export(run: Invocation) -> int:
    """The document on stdout, or in `-o FILE` (written whole or not at all); the masking report on
    stderr; with `-o` and `--json`, a summary object on stdout."""
    a = run.args
    pages = run.client.export(run.root, a.session, format=a.format, redact=a.redact, full=a.full)
    masked: Counter[str] = Counter()
    path, size = None, 0
    if a.output is None:
        for page in pages:
            sys.stdout.write(page.text)
            masked.update(page.masked)
        sys.stdout.flush()
    else:
        path = Path(a.output).absolute()
        size = _write_atomically(path, pages, masked)
    if a.redact:
        counts = ", ".join(f"{name}: {n}" for name, n in sorted(masked.items()))
        total = sum(masked.values())
        sys.stderr.write(f"masked {plural(total, 'secret')}{f' ({counts})' if counts else ''}\n")
    if path is not None:
        summary = {"session": a.session, "format": a.format, "bytes": size, "path": str(path)}
        said = f"exported S{a.session} as {a.format} to {path} ({format_size(size)})"
        run.out.result({**summary, "masked": dict(masked)}, lambda _, __: [said])
    return 0


def _write_atomically(path: Path, pages: Iterable[ExportReply], masked: Counter[str]) -> int:
    """Write the pages to `path`, all or nothing (:func:`azsd.files.atomic_write`); the bytes written."""
    size = 0
    try:
        with atomic_write(path) as out:
            for page in pages:
                data = page.text.encode()
                out.write(data)
                size += len(data)
                masked.update(page.masked)
    except OSError as exc:
        raise AzsdError(f"cannot write {path}: {exc.strerror or exc}") from None
    return size


def backup(run: Invocation) -> int:
    dest = None if run.args.dest is None else os.path.abspath(run.args.dest)
    reply = run.client.backup(run.root, dest)
    run.out.result(reply, lambda r, style: [backup_line(r, style)])
    if reply.integrity != "ok":
        raise AzsdError(f"the backup at {reply.path} failed its integrity check: {reply.integrity}")
    return 0


def prune(run: Invocation) -> int:
    """`azs prune --full-before DATE` (or `--session S`): drop full records; the events stay."""
    a = run.args
    if (a.full_before is None) == (a.session is None):
        raise UsageError("say what to prune: --full-before DATE, or --session S")
    reply = run.client.prune_full(run.root, before=a.full_before or "", session=a.session)
    what = f"S{a.session}" if a.session is not None else f"sessions last active before {a.full_before}"
    run.out.result(
        reply,
        lambda r, _: [f"dropped {plural(r.dropped, 'chunk')} of full record of {what} (their events stay)"],
    )
    return 0


def usage(run: Invocation) -> int:
    """Tokens and cost per session and per worktree (or by period, with `--by`); a session named alone
    is looked up in any worktree."""
    a = run.args
    if a.all:
        from .machine import usage_all  # every store of the machine's projects

        return usage_all(run)
    if a.prices:
        table = price_table(run.config)
        try:  # the models this store used that the list does not name (none known without a daemon)
            seen = run.client.usage(run.root, by="month", by_model=True, with_sessions=False).periods
        except AzsdError:
            seen = []
        models = sorted({period.model for period in seen if period.model})
        guessed = {m: as_ for m in models if (as_ := table.priced_as(m)) is not None}
        run.out.result(
            table,
            lambda t, style: price_lines(t, style, guessed),
            shape=lambda t: price_shape(t, guessed),
        )
        return 0
    scoped = a.session is None or a.worktree is not None
    by = "block" if a.active else a.by
    reply = run.client.usage(
        run.root, a.session, worktrees=worktree_scope(run) if scoped else None, by=by,
        by_model=a.by_model, since=a.since, until=a.until, timezone=a.timezone,
        exclude_removed=a.exclude_removed, with_sessions=by is None or a.sessions, active=a.active,
    )  # fmt: skip
    limit = reply.max_block_tokens if a.token_limit == "max" else a.token_limit
    if by == "block" and (a.active or a.token_limit is not None):
        run.out.result(reply, lambda r, style: block_lines(r.periods, limit, style))
        if a.active and not reply.periods:
            run.out.note(NO_ACTIVE_BLOCK)  # (on a pipe too; nothing with --json)
        return 0
    if by is not None:
        run.out.result(reply, lambda r, style: period_lines(r.by, r.periods, r.total, style))
    else:
        run.out.result(reply, lambda r, style: usage_lines(r.sessions, r.worktrees, r.total, style))
    if not reply.sessions and not (reply.periods and a.by is not None):
        dates = " on those days" if a.since or a.until else ""
        run.out.hint(f"no token usage recorded in these sessions{dates}")
    return 0
