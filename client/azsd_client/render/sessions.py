"""Human output of sessions: their badges, `azs ls` rows, the `azs show` header, token summaries.

Pure functions from protocol values to lines of text.
"""

from __future__ import annotations

from collections.abc import Sequence

from azsd.ipc.protocol import SessionView, UsageView

from .text import Cell, Style, format_cost, format_duration, format_tokens, one_line, table

__all__ = ["badge", "lineage", "session_header", "session_rows", "usage_summary"]


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


def session_rows(views: Sequence[SessionView], style: Style, *, worktree: bool = False) -> list[str]:
    """`azs ls`: one aligned line per session, badge first."""
    rows = []
    for v in views:
        count = f"{v.event_count} event" + ("" if v.event_count == 1 else "s")
        cost = v.cost_usd if v.cost_usd else v.usage.cost_usd if v.usage else None
        row = [
            badge(v.state, style),
            Cell(f"S{v.id}", style.bold),
            Cell(one_line(v.name, 60)),
            Cell(count, style.dim),
            Cell(format_duration(v.duration_ms)),
            Cell(format_cost(cost, v.cost_source)),
            Cell(usage_summary(v.usage), style.dim),
            Cell(v.created, style.dim),
            Cell(lineage(v), style.cyan),
            Cell("archived" if v.archived else "", style.yellow),
        ]
        if worktree:
            row.append(Cell(v.worktree or "-", style.cyan))
        rows.append(row)
    return table(rows, right=frozenset({1, 3, 4, 5}))


def session_header(view: SessionView, style: Style, *, threshold: int | None = None) -> list[str]:
    """`azs show`: who the session is, where it comes from, where it stands, what it cost, and (with
    its `context_chars` and the `threshold`) how full its context is."""
    mark = badge(view.state, style)
    title = f"{mark.paint(mark.text)} {style.bold(f'S{view.id}')}"
    if view.name:
        title += f"  {style.bold(one_line(view.name, 100))}"
    if view.archived:
        title += f"  {style.yellow('(archived)')}"
    facts = [f"{view.state}", f"worktree {view.worktree or '-'}", f"created {view.created}"]
    facts.append(f"{view.event_count} events, {view.message_count} messages")
    if view.duration_ms is not None:
        facts.append(format_duration(view.duration_ms))
    if view.cost_usd:
        facts.append(format_cost(view.cost_usd, view.cost_source))
    lines = [title, style.dim(" · ".join(facts))]
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
            f"{u.input} in, {u.output} out, {u.cache_read} cache read, {u.cache_write} cache write, "
            f"{u.reasoning} reasoning"
        )
        cost = f" · {format_cost(u.cost_usd, u.cost_source)}" if u.cost_usd else ""
        lines.append(style.dim(f"tokens: {tokens}{cost}"))
    if view.context_chars is not None and threshold:
        lines.append(context_meter_line(view.id, view.context_chars, threshold, style))
    return lines


def context_meter_line(session: int, chars: int, threshold: int, style: Style) -> str:
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
