"""Human output of the store-wide commands: search hits, usage tables, backups, imports.

Pure functions from protocol values to lines of text.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from azsd.ipc.protocol import (
    BackupReply,
    SearchHit,
    SessionUsageView,
    UsagePeriodView,
    UsageView,
    WireEvent,
    WorktreeUsageView,
)

from .events import event_text
from .text import Ansi, Cell, Line, Style, count, format_cost, format_size, join, one_line, plural, table

if TYPE_CHECKING:
    from rich.text import Text

__all__ = [
    "KIND_NAMES",
    "also_in",
    "backup_line",
    "context_lines",
    "highlighted",
    "import_summary",
    "period_lines",
    "search_row",
    "search_table",
    "usage_lines",
]

#: The short names of the kinds of event a search finds.
KIND_NAMES: Final = {
    "UserMessage": "user",
    "AssistantText": "assistant",
    "ToolCall": "call",
    "ToolResult": "result",
    "Plan": "plan",
}


def highlighted(
    text: str, ranges: Sequence[tuple[int, int]], paint: Callable[[str], str | Text]
) -> str | Text:
    """`text` on one line with each `[start, end)` range painted (whitespace runs become one space).

    >>> highlighted("a  panic\\nhere", [(3, 8)], lambda t: f"[{t}]")
    'a [panic] here'
    """
    marked = [False] * len(text)
    for start, end in ranges:
        for i in range(max(start, 0), min(end, len(text))):
            marked[i] = True
    kept: list[tuple[str, bool]] = []
    for char, mark in zip(text, marked, strict=True):
        if char.isspace():
            if kept and kept[-1][0] != " ":
                kept.append((" ", False))
        else:
            kept.append((char, mark))
    while kept and kept[-1][0] == " ":
        kept.pop()
    pieces = [
        paint(chunk) if mark else chunk
        for mark, group in itertools.groupby(kept, key=lambda pair: pair[1])
        for chunk in ["".join(char for char, _ in group)]
    ]
    return join(*pieces) if pieces else ""


#: The columns of a search hit left out on a narrow terminal, in order: the name, the fork copies,
#: the kind, the seq (the match is what the row is about: it is cut last).
_SEARCH_OPTIONAL: Final = (4, 5, 2, 1)


def also_in(hit: SearchHit) -> str:
    """`also in S13, S36` for the fork copies of a hit, else ""."""
    return "also in " + ", ".join(f"S{sid}" for sid in hit.also_in) if hit.also_in else ""


def search_row(hit: SearchHit, style: Style) -> list[Cell]:
    """`azs search`: the session, the event's seq and kind, the snippet with its hits painted, the
    name, the sessions holding a copy.

    >>> hit = SearchHit(session=3, data="", seq=12, kind="AssistantText", snippet="a panic",
    ...     highlights=[(2, 7)], session_name="fix parser", also_in=[13, 36])
    >>> [cell.text for cell in search_row(hit, Style())]
    ['S3', '12', 'assistant', 'a panic', 'fix parser', 'also in S13, S36']
    """
    plain = highlighted(hit.snippet, hit.highlights, str)
    painted = highlighted(hit.snippet, hit.highlights, style.highlight)
    name = hit.session_name if hit.session_name != f"S{hit.session}" else ""
    return [
        Cell(f"S{hit.session}", style.bold),
        Cell(str(hit.seq), style.dim),
        Cell(KIND_NAMES.get(hit.kind, hit.kind), style.cyan),
        Cell(str(plain), lambda _text: painted),
        Cell(one_line(name, 200), style.dim),
        Cell(also_in(hit), style.cyan),
    ]


def context_lines(hit: SearchHit, events: Sequence[WireEvent], style: Style, *, first: bool) -> list[Line]:
    """`azs search -C N`: a title for the hit (session, name, seq, copies), then the events around it
    as `show` prints them, the hit's seq marked with ``>``; hits apart by a ``--`` line, as grep's."""
    name = hit.session_name if hit.session_name != f"S{hit.session}" else ""
    facts = [f"S{hit.session}", *([one_line(name, 200)] if name else []), f"seq {hit.seq}"]
    title = join(style.bold(" · ".join(facts)), *((" ", style.cyan(also_in(hit))) if hit.also_in else ()))
    shown = [Ansi(event_text(e, style, mark=">" if e.seq == hit.seq else " ").lstrip("\n")) for e in events]
    return [*([] if first else [style.dim("--")]), title, *shown]


def search_table(hits: Sequence[SearchHit], style: Style) -> list[Line]:
    """`azs search`: one row per hit, fitted to the terminal (the match is cut last)."""
    header = [Cell(name, style.dim) for name in ("id", "seq", "kind", "match", "name", "")]
    return table(
        [search_row(hit, style) for hit in hits],
        right=frozenset({0, 1}),
        flex=3,
        optional=_SEARCH_OPTIONAL,
        header=header if style.relative and hits else None,
    )


# -- usage ------------------------------------------------------------------------------------------

_TOKEN_HEADERS: Final = ("in", "out", "cache read", "cache write", "reasoning", "cost")


def _token_cells(u: UsageView) -> list[Cell]:
    counts = (u.input, u.output, u.cache_read, u.cache_write, u.reasoning)
    return [*(Cell(f"{n:,}") for n in counts), Cell(format_cost(u.cost_usd, u.cost_source) or "-")]


def _headers(names: Sequence[str], style: Style) -> list[Cell]:
    return [Cell(name, style.dim) for name in names]


def usage_lines(
    sessions: Sequence[SessionUsageView],
    worktrees: Sequence[WorktreeUsageView],
    total: UsageView,
    style: Style,
) -> list[Line]:
    """`azs usage`: a table of sessions, one of branches, and the total (token counts in full)."""
    lines: list[Line] = []
    numbers = frozenset(range(2, 9))
    if sessions:
        rows = [_headers(("session", "worktree", "turns", *_TOKEN_HEADERS, "name"), style)]
        rows += [
            [
                Cell(f"S{s.session}", style.bold),
                Cell(s.worktree or "-", style.cyan),
                Cell(str(s.turns)),
                *_token_cells(s.usage),
                Cell(one_line(s.name, 50)),
            ]
            for s in sessions
        ]
        lines += table(rows, right=numbers, flex=9, optional=(7, 6, 5, 1, 2))
    if worktrees:
        rows = [_headers(("worktree", "sessions", *_TOKEN_HEADERS), style)]
        rows += [
            [Cell(w.worktree or "-", style.cyan), Cell(str(w.sessions)), *_token_cells(w.usage)]
            for w in worktrees
        ]
        lines += ["", *table(rows, right=frozenset(range(1, 8)), optional=(6, 5, 4, 1))]
    t = total
    cost = format_cost(t.cost_usd, t.cost_source) or "$0"
    lines += [
        "",
        style.bold(
            f"total: {t.input:,} in, {t.output:,} out, {t.cache_read:,} cache read, "
            f"{t.cache_write:,} cache write, {t.reasoning:,} reasoning · {cost}"
        ),
    ]
    return lines


_PERIOD_NAMES: Final = {
    "day": "day",
    "week": "week",
    "month": "month",
    "session": "session",
    "block": "block",
}


def _models(names: Sequence[str]) -> str:
    return ", ".join(name or "(unknown)" for name in names) or "-"


def period_lines(by: str, periods: Sequence[UsagePeriodView], total: UsageView, style: Style) -> list[Line]:
    """`azs usage --by …`: one row per period (and model, with `--by-model`), then the total. Narrow
    terminals lose cache write, cache read, the total and the models, in that order.

    >>> from azsd_client.render.term import plain_lines
    >>> view = UsagePeriodView(period="2025-10-02", start="", end="", models=["m"], total_tokens=7,
    ...     usage=UsageView(input=2, output=5, cost_usd=0.5, cost_source="estimated"))
    >>> plain_lines(period_lines("day", [view], view.usage, Style()))[1].split()
    ['2025-10-02', 'm', '2', '5', '0', '0', '7', '~$0.5000']
    """
    rows = [
        _headers(
            (by, "models", "in", "out", "cache read", "cache write", "total", "cost"),
            style,
        )
    ]
    for view in periods:
        u = view.usage
        name = f"  {one_line(view.name, 40)}" if view.name and view.name != view.period else ""
        rows.append(
            [
                Cell(view.period + name, style.bold),
                Cell(_models([view.model] if view.model is not None else view.models), style.cyan),
                *(
                    Cell(f"{n:,}")
                    for n in (u.input, u.output, u.cache_read, u.cache_write, view.total_tokens)
                ),
                Cell(format_cost(u.cost_usd, u.cost_source) or "-"),
            ]
        )
    t = total
    all_tokens = t.input + t.output + t.cache_read + t.cache_write
    rows.append(
        [
            Cell("total", style.bold),
            Cell(""),
            *(
                Cell(f"{n:,}", style.bold)
                for n in (t.input, t.output, t.cache_read, t.cache_write, all_tokens)
            ),
            Cell(format_cost(t.cost_usd, t.cost_source) or "$0", style.bold),
        ]
    )
    return table(rows, right=frozenset(range(2, 8)), flex=1, optional=(5, 4, 6, 1))


# -- backup and import ------------------------------------------------------------------------------


def backup_line(reply: BackupReply, style: Style) -> Line:
    """`azs backup`: what was copied where, and whether the copy checked out."""
    check = (
        style.green("integrity ok") if reply.integrity == "ok" else style.red(f"integrity {reply.integrity}")
    )
    return join(
        f"backed up {plural(reply.sessions, 'session')}, {plural(reply.events, 'event')} "
        f"({format_size(reply.bytes)}) to {reply.path} · ",
        check,
    )


def import_summary(created: int, updated: int, current: int, events: int) -> str:
    """`azs import`: how many sessions, what became of them, and how many events arrived.

    >>> import_summary(3, 2, 3, 1234)
    'imported 8 sessions (3 new, 2 updated, 3 already current), 1,234 events'
    """
    sessions = plural(created + updated + current, "session")
    return (
        f"imported {sessions} ({count(created)} new, {count(updated)} updated, {count(current)} already "
        f"current), {plural(events, 'event')}"
    )
