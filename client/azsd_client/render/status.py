"""Human output of what the daemon reports about its own work: status, follows, ingest reports.

Pure functions from protocol values to lines of text.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

from azsd.ipc.protocol import FollowView, IngestReply, StatusReply

from .text import Cell, Line, Style, count, format_duration, format_time, join, plural, table

__all__ = ["ENDED_SHOWN_S", "follow_line", "follow_rows", "ingest_lines", "recent_follows", "status_lines"]

#: How long `azs status` shows a follow after it ended (`--all` shows every one the daemon keeps).
ENDED_SHOWN_S: Final = 600.0


def recent_follows(follows: Sequence[FollowView], now: datetime | None = None) -> list[FollowView]:
    """The follows still going, and those that ended in the last :data:`ENDED_SHOWN_S`.

    >>> old = FollowView(root="/p", session=1, path="/a", format="", offset=0, lines=0, skipped=0,
    ...     active=False, last_activity="", ended="2025-01-01 09:00:00", state="ended")
    >>> import msgspec
    >>> new = msgspec.structs.replace(old, session=2, ended="2025-01-01 09:55:00")
    >>> [v.session for v in recent_follows([old, new], datetime(2025, 1, 1, 10, 0, tzinfo=UTC))]
    [2]
    """
    now = now or datetime.now(UTC)
    return [v for v in follows if v.active or _ended_ago(v, now) < ENDED_SHOWN_S]


def _ended_ago(view: FollowView, now: datetime) -> float:
    """Seconds since the follow ended (0 when its end time cannot be read: it is shown)."""
    try:
        ended = datetime.strptime(view.ended or "", "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return 0.0
    return (now - ended).total_seconds()


def _state(view: FollowView, style: Style) -> Cell:
    """What the follow does: `following`, `waiting`, `retrying`, `idle` or `ended` (a daemon that
    does not say gets `following` or `ended`, from `active`)."""
    state = view.state or ("following" if view.active else "ended")
    writer = f" (writer {view.writer_pid})" if view.writer_pid is not None and view.active else ""
    match state:
        case "following":
            return Cell("● following" + writer, style.yellow)
        case "waiting":
            return Cell("◐ waiting" + writer, style.yellow)
        case "retrying":
            return Cell(f"↻ retrying ({plural(view.failures, 'failure')})" + writer, style.red)
        case "idle":  # still followed, its session not running: nobody writes the file now
            return Cell("◌ idle", style.dim)
        case "ended":
            return Cell("○ ended" + (f" {view.ended}" if view.ended else ""), style.dim)
        case _:  # a state a newer daemon added
            return Cell(state + writer)


#: The follow table's columns, in the order they are left out on a narrow terminal (the path is cut last).
_FOLLOW_OPTIONAL: Final = (5, 2, 6, 4, 3)


def follow_rows(follows: Sequence[FollowView], style: Style) -> list[Line]:
    """The followed files, grouped by store root: state, session, format, progress, last activity,
    path (cut to fit); under a follow's row, why it waits, retries, idles or ended.

    >>> from azsd_client.render.term import plain_lines
    >>> v = FollowView(root="/p", session=3, path="/t/a.jsonl", format="codex-exec-json", offset=1200,
    ...     lines=2, skipped=0, active=True, last_activity="2025-01-01 10:00:00")
    >>> w = FollowView(root="/p", session=4, path="/t/b.jsonl", format="", offset=0, lines=0, skipped=0,
    ...     active=True, last_activity="", state="waiting", reason="its store is busy")
    >>> for line in plain_lines(follow_rows([v, w], Style())): print(line)
      /p
        ● following  S3  codex-exec-json  2 lines  0 skipped  1,200 bytes  2025-01-01 10:00  /t/a.jsonl
        ◐ waiting    S4                   0 lines  0 skipped      0 bytes                    /t/b.jsonl
          ↳ its store is busy
    """
    ordered = sorted(follows, key=lambda v: (v.root, not v.active, v.session, v.path))
    out: list[Line] = []
    for root, group in itertools.groupby(ordered, key=lambda v: v.root):
        views = list(group)
        rows = [
            [
                _state(v, style),
                Cell(f"S{v.session}", style.bold),
                Cell(v.format, style.cyan),
                Cell(plural(v.lines, "line")),
                Cell(f"{count(v.skipped)} skipped", style.red if v.skipped else style.dim),
                Cell(f"{count(v.offset)} bytes", style.dim),
                Cell(
                    format_time(v.last_activity, relative=style.relative) if v.last_activity else "",
                    style.dim,
                ),
                Cell(v.path),
            ]
            for v in views
        ]
        notes = [style.dim(f"  ↳ {v.reason}") if v.reason else None for v in views]
        out.append(f"  {root}")
        out += table(
            rows, right=frozenset({1, 3, 4, 5}), flex=7, optional=_FOLLOW_OPTIONAL, indent=4, notes=notes
        )
    return out


def status_lines(
    status: StatusReply, endpoint: str, style: Style | None = None, *, hidden: int = 0
) -> list[Line]:
    """`azs status` (`hidden`: the follows that ended longer ago, left out of `status.follows`)."""
    style = style or Style()
    lines: list[Line] = [
        f"azsd {status.version} (protocol {status.protocol}), pid {status.pid}, "
        f"up {format_duration(int(status.uptime_s * 1000))}",
        f"endpoint {endpoint}",
        f"open stores: {count(len(status.stores))}",
        *(f"  {root}" for root in status.stores),
    ]
    if status.follows:
        states = [v.state or ("following" if v.active else "ended") for v in status.follows]
        said = ", ".join(
            f"{count(states.count(state))} {state}"
            for state in ("following", "waiting", "retrying", "idle", "ended")
            if state in states
        )
        lines.append(f"follows: {count(len(status.follows))} ({said})")
        lines += follow_rows(status.follows, style)
    if hidden:
        lines.append(style.dim(f"{plural(hidden, 'follow')} ended earlier: `azs status --all` shows them"))
    return lines


def follow_line(view: FollowView, style: Style) -> Line:
    """`azs follow`: what the daemon now follows, and from where.

    >>> v = FollowView(root="/p", session=3, path="/t/a.jsonl", format="", offset=0, lines=0,
    ...     skipped=0, active=True, last_activity="")
    >>> follow_line(v, Style())
    'following /t/a.jsonl into S3 (format: detected once it has a line), from its start'
    """
    state = "" if view.active else style.dim(" — already ended" + (f" ({view.ended})" if view.ended else ""))
    if view.active and view.state in ("waiting", "idle") and view.reason:
        state = style.dim(f" — {view.state}: {view.reason}")
    start = f"from byte {count(view.offset)}" if view.offset else "from its start"
    fmt = f"as {view.format}" if view.format else "(format: detected once it has a line)"
    return join(f"following {view.path} into S{view.session} {fmt}, {start}", state)


def ingest_lines(session: int, reply: IngestReply) -> list[str]:
    """`azs ingest`: what was read, stored, and skipped."""
    lines = [
        f"S{session}: {reply.format}: {plural(reply.lines, 'line')}, {plural(reply.parsed, 'event')} parsed, "
        f"{count(reply.appended)} stored, {count(reply.duplicates)} already there"
    ]
    if reply.skipped:
        lines.append("skipped: " + ", ".join(f"{why} {count(n)}" for why, n in sorted(reply.skipped.items())))
    if reply.events:
        lines.append("events: " + ", ".join(f"{kind} {count(n)}" for kind, n in sorted(reply.events.items())))
    return lines
