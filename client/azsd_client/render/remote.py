"""How `azs` prints what sync gives: the pushing of each store, and sessions of the sync database."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from azsd.ipc.protocol import RemoteHit, RemoteSessionView, SyncStatusReply, SyncVerifyReply

from .sessions import badge
from .text import Cell, Line, Style, format_cost, format_duration, format_size, join, one_line, table

if TYPE_CHECKING:
    from rich.text import Text

__all__ = [
    "remote_header",
    "remote_hit_row",
    "remote_ref",
    "remote_rows",
    "sync_status_lines",
    "sync_verify_lines",
    "who",
]

#: The characters of a UUID `azs ls --remote` shows (a prefix long enough in practice; a shorter or
#: ambiguous one is refused by the daemon with the candidates).
REF_CHARS: Final = 8
_MARK: Final = re.compile(r"\[\[(.*?)\]\]", re.S)


def remote_ref(uuid: str) -> str:
    """The REMOTE-REF a session is shown and named by: ``@`` and the start of its UUID.

    >>> remote_ref("1a2b3c4d-0000-4000-8000-000000000000")
    '@1a2b3c4d'
    """
    return "@" + uuid[:REF_CHARS]


def _ago(seconds: float) -> str:
    """A time span, short.

    >>> _ago(3.2), _ago(125), _ago(7300)
    ('3.2s', '2m05s', '2h01m')
    """
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"


def sync_status_lines(reply: SyncStatusReply, style: Style) -> list[Line]:
    """`azs sync status`: the database and identity, then one line per store."""
    if not reply.configured:
        off: list[Line] = ["sync: off (no sync-url in the config file; README: Sync to PostgreSQL)"]
        if reply.config_error:
            off.append(style.red(f"  config file: {reply.config_error}"))
        return off
    redact = "secrets masked" if reply.redact else "secrets pushed as stored (sync-redact = false)"
    lines: list[Line] = [f"sync: {reply.url} as {reply.identity}; {redact}"]
    if reply.config_error:
        lines.append(style.red(f"  config file: {reply.config_error} (the settings before it stay)"))
    if reply.error:
        lines.append(style.red(f"  database: {reply.error}"))
    rows = []
    notes: list[Line] = []
    for s in reply.stores:
        if s.waiting:
            lag = f"waiting: {s.waiting}"
        else:
            lag = "caught up" if not s.lag_events else f"{s.lag_events} behind, {_ago(s.lag_s)}"
        if s.masked:
            lag += f", {s.masked} secrets masked"
        if s.note:
            notes.append(style.yellow(f"  {one_line(s.note, 200)}"))
        last = f"pushed {_ago(time.time() - s.last_push)} ago" if s.last_push else "never pushed"
        rows.append(
            [
                Cell(s.root, style.bold),
                Cell(f"#{s.pushed_event_id}/{s.local_event_id}"),
                Cell(lag, style.green if not (s.lag_events or s.waiting) else style.yellow),
                Cell(last, style.dim),
                Cell(one_line(s.last_error, 80), style.red),
            ]
        )
    return lines + (table(rows, flex=0, optional=(4, 3)) if rows else ["  no store pushed yet"]) + notes


def sync_verify_lines(reply: SyncVerifyReply, style: Style) -> list[Line]:
    """`azs sync verify`: per store, its sessions compared, and each that differed."""
    lines: list[Line] = []
    for s in reply.stores:
        if s.error:
            lines.append(join(style.bold(s.root), ": ", style.yellow(s.error)))
            continue
        if not s.sessions:
            lines.append(join(style.bold(s.root), ": ", style.green(f"{s.checked} sessions, all there")))
            continue
        lines.append(join(style.bold(s.root), f": {s.checked} sessions, {len(s.sessions)} differed"))
        for c in s.sessions:
            said = f"  S{c.local_id} {remote_ref(c.uuid)}: {c.local} events here, {c.remote} in the database"
            if c.error:
                lines.append(style.red(f"{said}: {c.error}"))
            elif c.repaired:
                lines.append(style.green(f"{said}: {c.repaired} pushed again"))
            else:
                lines.append(style.yellow(said))
    return lines or ["no store pushed yet"]


def who(view: RemoteSessionView | RemoteHit) -> str:
    """Who pushed a remote session: the identity it claims, and the database role that vouches for
    it (an identity alone proves nothing: any role can claim any).

    >>> from azsd.ipc.protocol import RemoteHit
    >>> who(RemoteHit("u", "ada@laptop", "n", 1, "k", 0.0, "", "", owner="bob"))
    'ada@laptop (role bob)'
    """
    return f"{view.identity} (role {view.owner})" if view.owner else view.identity


def remote_rows(views: Sequence[RemoteSessionView], style: Style) -> list[Line]:
    """`azs ls --remote`: badge, ref, name, who and where, branch, size, last push."""
    rows = []
    for v in views:
        pusher = "you, here" if v.mine else who(v)
        rows.append(
            [
                badge(v.state, style),
                Cell(remote_ref(v.uuid), style.bold),
                Cell(one_line(v.name or f"S{v.local_id}", 50)),
                Cell(pusher, style.cyan),
                Cell(v.worktree or "-", style.cyan),
                Cell(f"{v.event_count} events, {format_size(v.char_total)}", style.dim),
                Cell(v.updated, style.dim),
                Cell("deleted" if v.deleted else "archived" if v.archived else "", style.yellow),
            ]
        )
    return table(rows, flex=2, optional=(6, 5, 4, 7))


def remote_header(view: RemoteSessionView, style: Style) -> list[Line]:
    """`azs show @REF`: the session, who pushed it from where, where it stands."""
    mark = badge(view.state, style)
    title = join(
        mark.paint(mark.text),
        " ",
        style.bold(remote_ref(view.uuid)),
        "  ",
        style.bold(one_line(view.name, 100)),
    )
    facts = [
        view.state, f"{who(view)}:{view.root} S{view.local_id}", f"branch {view.worktree or '-'}",
        f"created {view.created}", f"pushed {view.updated}", f"{view.event_count} events",
    ]  # fmt: skip
    if view.duration_ms:  # 0: not measured
        facts.append(format_duration(view.duration_ms))
    if view.cost_usd:
        facts.append(format_cost(view.cost_usd))
    lines: list[Line] = [title, style.dim(" · ".join(facts))]
    if view.pulled_from:
        lines.append(style.cyan(f"pulled from {remote_ref(view.pulled_from)}"))
    if view.parent:
        lines.append(style.cyan(f"forked from {remote_ref(view.parent)} at seq {view.fork_seq}"))
    if view.deleted:
        lines.append(style.yellow(f"deleted at its origin {view.deleted}"))
    return lines


def remote_hit_row(hit: RemoteHit, style: Style) -> list[Cell]:
    """`azs search --remote`: ref and seq, kind, the snippet with its matches painted, name, who."""
    plain = one_line(_MARK.sub(r"\1", hit.snippet), 100)
    painted = _painted(one_line(hit.snippet, 104), style)
    return [
        Cell(remote_ref(hit.session), style.bold),
        Cell(f"#{hit.seq}", style.dim),
        Cell(hit.kind, style.cyan),
        Cell(plain, lambda _text: painted),
        Cell(one_line(hit.session_name, 40), style.dim),
        Cell(who(hit), style.dim),
    ]


def _painted(snippet: str, style: Style) -> str | Text:
    """The snippet with each ``[[match]]`` highlighted and its brackets gone.

    >>> _painted("a [[panic]] here", Style())
    'a panic here'
    """
    parts: list[str | Text] = []
    last = 0
    for match in _MARK.finditer(snippet):
        parts += [snippet[last : match.start()], style.highlight(match.group(1))]
        last = match.end()
    parts.append(snippet[last:])
    return join(*parts)
