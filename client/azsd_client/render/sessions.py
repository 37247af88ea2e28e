"""Human output of sessions: their badges, `azs ls` rows, the `azs show` header, token summaries.

Pure functions from protocol values to lines of text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from azsd.ipc.protocol import SessionView, UsageView

if TYPE_CHECKING:
    from rich.text import Text

from .text import (
    Cell,
    Line,
    Style,
    count,
    format_cost,
    format_duration,
    format_time,
    format_tokens,
    join,
    one_line,
    plural,
    table,
)

__all__ = ["badge", "by_latest", "lineage", "session_header", "session_rows", "usage_summary"]


def badge(state: str, style: Style) -> Cell:
    """✓ succeeded, ✗ failed, ● running (a follow is active into it), ○ ended (events, but no
    completion marker and nothing following it), `new` for a session without events."""
    match state:
        case "succeeded":
            return Cell("✓", style.green)
        case "failed":
            return Cell("✗", style.red)
        case "running":
            return Cell("●", style.yellow)
        case "ended":
            return Cell("○", style.dim)
        case "new":
            return Cell("new", style.dim)
    return Cell("?", style.dim)


def usage_summary(usage: UsageView | None) -> str:
    """`12.3k in · 4.1k out`, and `· 1.2M cache` for cache reads and writes; "" without any tokens.

    >>> usage_summary(UsageView(input=12_345, output=4_100, cache_read=1_000_000, cache_write=200_000))
    '12.3k in · 4.1k out · 1.2M cache'
    """
    if usage is None or not (usage.input or usage.output or usage.cache_read or usage.cache_write):
        return ""
    text = f"{format_tokens(usage.input)} in · {format_tokens(usage.output)} out"
    cache = usage.cache_read + usage.cache_write
    return text + (f" · {format_tokens(cache)} cache" if cache else "")


def lineage(view: SessionView) -> str:
    """`⑂S3@12` for a fork of S3 made at its seq 12, else ""."""
    return f"⑂S{view.parent}@{view.fork_seq}" if view.parent is not None else ""


def by_latest(views: Sequence[SessionView]) -> list[SessionView]:
    """`azs ls`'s order: the sessions without events yet first, newest first (making one is its latest
    activity), then the daemon's order, latest activity first (the last event stored).

    The store keeps no time for its events, so the order cannot be by a time shown; this puts what a
    person just did at the top either way: the session just made, or the one that just ran.

    >>> def v(i, n): return SessionView(id=i, name="", display_name="", worktree="", created="",
    ...     event_count=n, message_count=0, state="new")
    >>> [x.id for x in by_latest([v(3, 5), v(1, 9), v(4, 0), v(2, 0)])]
    [4, 2, 3, 1]
    """
    empty = sorted((v for v in views if not v.event_count), key=lambda v: (v.created, v.id), reverse=True)
    return [*empty, *(v for v in views if v.event_count)]


_LS_HEADER: Final = ("", "id", "name", "events", "took", "cost", "tokens", "active", "", "", "branch")
#: `azs ls`'s columns, in the order they are left out on a narrow terminal (the name is cut last).
_LS_OPTIONAL: Final = (6, 4, 8, 5, 10, 3, 7, 9)


def session_rows(views: Sequence[SessionView], style: Style, *, worktree: bool = False) -> list[Line]:
    """`azs ls`: one row per session, badge first, fitted to the terminal (a header on a terminal)."""
    rows = []
    for v in views:
        # the whole session's cost beside the whole session's tokens (the badge's cost is its last turn's)
        u = v.usage
        cost, source = (u.cost_usd, u.cost_source) if u and u.cost_usd else (v.cost_usd, v.cost_source)
        row = [
            badge(v.state, style),
            Cell(f"S{v.id}", style.bold),
            Cell(one_line(v.name, 200)),
            Cell(plural(v.event_count, "event"), style.dim),
            Cell(format_duration(v.duration_ms or None)),  # 0: not measured (codex exec --json)
            Cell(format_cost(cost, source)),
            Cell(usage_summary(v.usage), style.dim),
            Cell(format_time(v.last_activity or v.created, relative=style.relative), style.dim),
            Cell(lineage(v), style.cyan),
            Cell("archived" if v.archived else "", style.yellow),
        ]
        if worktree:
            row.append(Cell(v.worktree or "-", style.cyan))
        rows.append(row)
    header = [Cell(name, style.dim) for name in _LS_HEADER[: 11 if worktree else 10]]
    return table(
        rows,
        right=frozenset({1, 3, 4, 5}),
        flex=2,
        optional=_LS_OPTIONAL,
        header=header if style.relative and rows else None,
    )


def session_header(view: SessionView, style: Style, *, threshold: int | None = None) -> list[Line]:
    """`azs show`: who the session is, where it comes from, where it stands, what it cost, and (with
    its `context_chars` and the `threshold`) how full its context is."""
    mark = badge(view.state, style)
    title: list[str | Text] = [mark.paint(mark.text), " ", style.bold(f"S{view.id}")]
    if view.name:
        title += ["  ", style.bold(one_line(view.name, 200))]
    if view.archived:
        title += ["  ", style.yellow("(archived)")]
    facts = [
        f"{view.state}",
        f"branch {view.worktree or '-'}",
        f"created {format_time(view.created, relative=style.relative)}",
    ]
    facts.append(f"{plural(view.event_count, 'event')}, {plural(view.message_count, 'message')}")
    if view.last_activity:
        facts.append(f"active {format_time(view.last_activity, relative=style.relative)}")
    if view.duration_ms:  # 0: not measured (codex exec --json reports no duration)
        facts.append(format_duration(view.duration_ms))
    if view.cost_usd:
        facts.append(format_cost(view.cost_usd, view.cost_source))
    lines: list[Line] = [join(*title), style.dim(" · ".join(facts))]
    family = []
    if view.parent is not None:
        family.append(f"forked from S{view.parent} at seq {view.fork_seq}")
    if view.forks:
        family.append("forks: " + ", ".join(f"S{sid}" for sid in view.forks))
    if family:
        lines.append(style.cyan(" · ".join(family)))
    u = view.usage
    if u is not None and (u.input or u.output or u.cache_read or u.cache_write or u.reasoning):
        tokens = (
            f"{count(u.input)} in, {count(u.output)} out, {count(u.cache_read)} cache read, "
            f"{count(u.cache_write)} cache write, {count(u.reasoning)} reasoning"
        )
        cost = f" · {format_cost(u.cost_usd, u.cost_source)}" if u.cost_usd else ""
        lines.append(style.dim(f"tokens: {tokens}{cost}"))
    if view.context_chars is not None and threshold:
        lines.append(context_meter_line(view.id, view.context_chars, threshold, style))
    return lines


def context_meter_line(session: int, chars: int, threshold: int, style: Style) -> str | Text:
    """How full the next turn's context is, against the compaction threshold.

    >>> context_meter_line(3, 412_345, 400_000, Style())
    'context: 412,345 of 400,000 chars (103%): the next `azs run -s S3` compacts it first'
    >>> context_meter_line(3, 1_000, 400_000, Style())
    'context: 1,000 of 400,000 chars (0%)'
    """
    percent = 100 * chars // threshold
    text = f"context: {chars:,} of {threshold:,} chars ({percent}%)"
    if chars >= threshold:
        return style.yellow(f"{text}: the next `azs run -s S{session}` compacts it first")
    return style.dim(text)
