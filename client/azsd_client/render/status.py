"""Human output of what the daemon reports about its own work: status, follows, ingest reports.

Pure functions from protocol values to lines of text.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from azsd.ipc.protocol import FollowView, IngestReply, StatusReply

from .text import Cell, Style, format_duration, table

__all__ = ["follow_line", "follow_rows", "ingest_lines", "status_lines"]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _state(view: FollowView, style: Style) -> Cell:
    """What the follow does: `following`, `waiting`, `retrying` or `ended` (a daemon that does not
    say gets `following` or `ended`, from `active`)."""
    state = view.state or ("following" if view.active else "ended")
    writer = f" (writer {view.writer_pid})" if view.writer_pid is not None and view.active else ""
    match state:
        case "following":
            return Cell("● active" + writer, style.yellow)
        case "waiting":
            return Cell("◐ waiting" + writer, style.yellow)
        case "retrying":
            return Cell(f"↻ retrying ({_plural(view.failures, 'failure')})" + writer, style.red)
        case "ended":
            return Cell("○ ended" + (f" {view.ended}" if view.ended else ""), style.dim)
        case _:  # a state a newer daemon added
            return Cell(state + writer)


def follow_rows(follows: Sequence[FollowView], style: Style) -> list[str]:
    """The followed files, grouped by store root: state, session, format, progress, last activity,
    path; under a follow that waits, retries or ended, why.

    >>> v = FollowView(root="/p", session=3, path="/t/a.jsonl", format="codex-exec-json", offset=120,
    ...     lines=2, skipped=0, active=True, last_activity="2025-01-01 10:00:00")
    >>> follow_rows([v], Style())[0]
    '  /p'
    >>> follow_rows([v], Style())[1].split("  ")[2:5]
    ['● active', 'S3', 'codex-exec-json']
    >>> w = FollowView(root="/p", session=4, path="/t/b.jsonl", format="", offset=0, lines=0, skipped=0,
    ...     active=True, last_activity="", state="waiting", reason="its store is busy")
    >>> row, why = follow_rows([w], Style())[1:]
    >>> row.split("  ")[2], why.strip()
    ('◐ waiting', '↳ its store is busy')
    """
    ordered = sorted(follows, key=lambda v: (v.root, not v.active, v.session, v.path))
    rows = [
        [
            _state(v, style),
            Cell(f"S{v.session}", style.bold),
            Cell(v.format, style.cyan),
            Cell(_plural(v.lines, "line")),
            Cell(f"{v.skipped} skipped", style.red if v.skipped else style.dim),
            Cell(f"{v.offset} bytes", style.dim),
            Cell(f"last activity {v.last_activity}", style.dim),
            Cell(v.path),
        ]
        for v in ordered
    ]
    lines = iter(table(rows, right=frozenset({1, 3, 4, 5})))
    out: list[str] = []
    for root, group in itertools.groupby(ordered, key=lambda v: v.root):
        out.append(f"  {root}")
        for view, line in zip(group, lines, strict=False):
            out.append(f"    {line}")
            if view.reason:
                out.append("      " + style.dim(f"↳ {view.reason}"))
    return out


def status_lines(status: StatusReply, endpoint: str, style: Style | None = None) -> list[str]:
    """`azs status`."""
    style = style or Style()
    lines = [
        f"azsd {status.version} (protocol {status.protocol}), pid {status.pid}, "
        f"up {format_duration(int(status.uptime_s * 1000))}",
        f"endpoint {endpoint}",
        f"open stores: {len(status.stores)}",
        *(f"  {root}" for root in status.stores),
    ]
    if status.follows:
        active = sum(1 for v in status.follows if v.active)
        waiting = sum(1 for v in status.follows if v.active and v.state in ("waiting", "retrying"))
        lines.append(
            f"follows: {len(status.follows)} ({active} active" + (f", {waiting} waiting)" if waiting else ")")
        )
        lines += follow_rows(status.follows, style)
    return lines


def follow_line(view: FollowView, style: Style) -> str:
    """`azs follow`: what the daemon now follows, and from where.

    >>> v = FollowView(root="/p", session=3, path="/t/a.jsonl", format="", offset=0, lines=0,
    ...     skipped=0, active=True, last_activity="")
    >>> follow_line(v, Style())
    'following /t/a.jsonl into S3 (format: detected once it has a line), from its start'
    """
    state = "" if view.active else style.dim(" — already ended" + (f" ({view.ended})" if view.ended else ""))
    start = f"from byte {view.offset}" if view.offset else "from its start"
    fmt = f"as {view.format}" if view.format else "(format: detected once it has a line)"
    return f"following {view.path} into S{view.session} {fmt}, {start}{state}"


def ingest_lines(session: int, reply: IngestReply) -> list[str]:
    """`azs ingest`: what was read, stored, and skipped."""
    lines = [
        f"S{session}: {reply.format}: {reply.lines} lines, {reply.parsed} events parsed, "
        f"{reply.appended} stored, {reply.duplicates} already there"
    ]
    if reply.skipped:
        lines.append("skipped: " + ", ".join(f"{why} {n}" for why, n in sorted(reply.skipped.items())))
    if reply.events:
        lines.append("events: " + ", ".join(f"{kind} {n}" for kind, n in sorted(reply.events.items())))
    return lines
