"""Human output of the store-wide commands: search hits, usage tables, backups, imports.

Pure functions from protocol values to lines of text.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

import msgspec

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
from .text import (
    Ansi,
    Cell,
    Line,
    Style,
    count,
    format_cost,
    format_size,
    format_tokens,
    join,
    one_line,
    plural,
    table,
)

if TYPE_CHECKING:
    from rich.text import Text

    from azsd.config import Price, PriceTable

__all__ = [
    "KIND_NAMES",
    "NO_ACTIVE_BLOCK",
    "also_in",
    "backup_line",
    "block_lines",
    "context_lines",
    "highlighted",
    "hits_beyond",
    "import_summary",
    "period_lines",
    "price_lines",
    "price_shape",
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


def hits_beyond(shown: Sequence[SearchHit], everywhere: Sequence[SearchHit]) -> int:
    """How many of `everywhere`'s hits (a search over every branch) are none of `shown`'s (the same
    search narrowed to some branches), a fork copy counting as its hit.

    >>> def h(s, seq, *copies): return SearchHit(session=s, data="", seq=seq, also_in=list(copies))
    >>> hits_beyond([h(1, 4, 2)], [h(2, 4, 1), h(3, 9), h(1, 5)])
    2
    """
    seen = {(sid, h.seq) for h in shown for sid in (h.session, *h.also_in)}
    return sum(1 for h in everywhere if not any((sid, h.seq) in seen for sid in (h.session, *h.also_in)))


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
        Cell(KIND_NAMES.get(hit.kind, hit.kind) + (" (full)" if hit.full is True else ""), style.cyan),
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
    return [*(Cell(f"{n:,}") for n in counts), Cell(_cost(u) or "-")]


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
                Cell(one_line(s.name, 50) + (" (removed)" if s.removed else "")),
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
    cost = _cost(t) or "$0"
    if t.unpriced_tokens:
        cost += f" ({t.unpriced_tokens:,} tokens of models without a price: cost incomplete)"
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
    terminals get the counts short (``12.3M``), then lose the total column and the models; never one
    kind of token, so that what a row shows always adds up to its total. By model, a last column
    gives the input with its cached part, as ccusage's Codex report counts input (`in+cached`).

    >>> from azsd_client.render.term import plain_lines
    >>> view = UsagePeriodView(period="2025-10-02", start="", end="", models=["m"], total_tokens=7,
    ...     usage=UsageView(input=2, output=5, cost_usd=0.5, cost_source="estimated"))
    >>> plain_lines(period_lines("day", [view], view.usage, Style()))[1].split()
    ['2025-10-02', 'm', '2', '5', '0', '0', '7', '~$0.5000']
    """
    t = total
    all_tokens = t.input + t.output + t.cache_read + t.cache_write
    entries: list[tuple[Cell, Cell, tuple[int, ...], Cell, bool]] = [
        (
            Cell(view.period + _named(view), style.bold),
            Cell("" if by == "model" else _models_of(view), style.cyan),
            (*_kinds(view.usage), view.total_tokens, view.usage.input + view.usage.cache_read),
            Cell(_cost(view.usage) or "-"),
            False,
        )
        for view in periods
    ]  # fmt: skip
    entries.append(
        (
            Cell("total", style.bold), Cell(""),
            (t.input, t.output, t.cache_read, t.cache_write, all_tokens, t.input + t.cache_read),
            Cell(_cost(t) or "$0", style.bold), True,
        )
    )  # fmt: skip

    with_cached = by == "model"

    def rows(number: Callable[[int], str]) -> list[list[Cell]]:
        out = []
        for period, models, counts, cost, bold in entries:
            cells = [Cell(number(n), style.bold if bold else str) for n in counts]
            out.append([period, models, *cells[:5], cost, *(cells[5:] if with_cached else [])])
        return out

    extra = ("in+cached",) if with_cached else ()
    names = (by, "models", "in", "out", "cache read", "cache write", "total", "cost", *extra)
    full = [_headers(names, style), *rows(lambda n: f"{n:,}")]
    short = rows(format_tokens)
    brief = _headers((by, "models", "in", "out", "c.read", "c.write", "total", "cost", *extra), style)
    if with_cached:  # by model: no models column, the model is the row's name
        full, short = [r[:1] + r[2:] for r in full], [r[:1] + r[2:] for r in short]
        brief = brief[:1] + brief[2:]
        return table(full, right=frozenset(range(1, 8)), optional=(5, 7), compact=[brief, *short])
    return table(full, right=frozenset(range(2, 9)), flex=1, optional=(8, 6, 1), compact=[brief, *short])


def _models_of(view: UsagePeriodView) -> str:
    return _models([view.model] if view.model is not None else view.models)


def _kinds(u: UsageView) -> tuple[int, int, int, int]:
    return u.input, u.output, u.cache_read, u.cache_write


def _named(view: UsagePeriodView) -> str:
    return f"  {one_line(view.name, 40)}" if view.name and view.name != view.period else ""


def _cost(u: UsageView) -> str:
    return format_cost(u.cost_usd, u.cost_source, u.unpriced_tokens)


#: What `azs usage --active` says when no block is going (one clear line, never nothing).
NO_ACTIVE_BLOCK: Final = "no active block: no turn in the last 5 hours"


def block_lines(blocks: Sequence[UsagePeriodView], limit: int | None, style: Style) -> list[Line]:
    """`azs usage --by block --active` (or `--token-limit`): each block with its tokens, cost and burn
    rate; one still going also with the time left and its projection to the block's end; with a
    token `limit`, how much of it the block uses (and will, at this rate).

    >>> from azsd_client.render.term import plain_lines
    >>> view = UsagePeriodView(period="2026-05-02 10:00", start="2026-05-02T10:00:00+00:00",
    ...     end="2026-05-02T15:00:00+00:00", total_tokens=1000, usage=UsageView(cost_usd=0.5),
    ...     active=True, tokens_per_minute=10, usd_per_hour=0.3, remaining_minutes=90,
    ...     projected_tokens=1900, projected_usd=0.95)
    >>> for line in plain_lines(block_lines([view], 2000, Style())): print(line)
    block 2026-05-02 10:00 to 15:00 · active, 1h 30m left
      1,000 tokens · $0.5000 · 10 tokens/min · $0.3000/h
      projected at 15:00: 1,900 tokens · $0.9500
      limit 2,000 tokens: 50% used, 95% projected
    """
    lines: list[Line] = []
    for view in blocks:
        u = view.usage
        end = view.end[11:16]
        state = f"active, {_minutes(view.remaining_minutes)} left" if view.active else "finished"
        lines.append(join(style.bold(f"block {view.period} to {end}"), style.dim(f" · {state}")))
        hourly = format_cost(view.usd_per_hour, u.cost_source) or "$0"
        rate = f"{view.tokens_per_minute:,.0f} tokens/min · {hourly}/h"
        lines.append(f"  {view.total_tokens:,} tokens · {_cost(u) or '$0'} · {rate}")
        if view.active:
            projected = format_cost(view.projected_usd, u.cost_source) or "$0"
            lines.append(f"  projected at {end}: {view.projected_tokens:,} tokens · {projected}")
        if limit:
            used, ahead = view.total_tokens / limit, view.projected_tokens / limit
            text = f"  limit {limit:,} tokens: {used:.0%} used"
            text += f", {ahead:.0%} projected" if view.active else ""
            lines.append(style.red(text) if max(used, ahead if view.active else 0) > 1 else text)
    return lines


def _minutes(minutes: float) -> str:
    hours, rest = divmod(round(minutes), 60)
    return f"{hours}h {rest}m" if hours else f"{rest}m"


def price_lines(prices: PriceTable, style: Style, guessed: Mapping[str, str] | None = None) -> list[Line]:
    """`azs usage --prices`: where the prices come from and when, then one row per model (USD per
    million tokens; the 1-hour cache write is 2x input unless listed), then the models this store
    used that the list does not name, each with the listed model it is priced as (an estimate)."""
    names = ("model", "in", "out", "cache read", "cache write", "1h write", ">200k in/out", "fast")
    rows = [_headers(names, style)]
    for model, p in sorted(prices.prices.items()):
        tier = p.above_200k
        rows.append(
            [
                Cell(model, style.bold),
                *(Cell(f"{usd:g}") for usd in (p.input, p.output, p.cache_read, p.cache_write)),
                Cell(f"{p.cache_write_1h if p.cache_write_1h is not None else 2 * p.input:g}"),
                Cell(f"{tier.input:g}/{tier.output:g}" if tier else "-"),
                Cell(f"{p.fast:g}x" if p.fast != 1 else "-"),
            ]
        )
    estimated = [
        f"~ {model}: not in the list, priced as {listed} (its family's newest): an estimate"
        for model, listed in sorted((guessed or {}).items())
    ]
    dated = [_dated(model, p) for model, p in sorted(prices.prices.items()) if p.since and p.before]
    return [
        style.dim(f"prices as of {prices.date or 'an unknown date'}, per million tokens: {prices.source}"),
        *table(rows, right=frozenset(range(1, 8)), optional=(5, 6, 7, 3)),
        *(["", *dated] if dated else []),
        *(["", *estimated] if estimated else []),
    ]


def _dated(model: str, price: Price) -> str:
    """A model whose prices changed: since when, and what applied before."""
    before = price.before
    assert before is not None
    tier = before.above_200k
    then = f"{before.input:g}/{before.output:g}" + (f", >200k {tier.input:g}/{tier.output:g}" if tier else "")
    return f"{model}: these prices since {price.since}; before, in/out {then}"


def price_shape(table: PriceTable, guessed: Mapping[str, str] | None = None) -> dict[str, object]:
    """`azs usage --prices --json`: the source, the date, every model's prices, and the models used
    here that are priced as another (`estimated`: model → the listed model)."""
    return {
        "source": table.source,
        "date": table.date,
        "unit": "USD per million tokens",
        "models": {name: msgspec.to_builtins(price) for name, price in sorted(table.prices.items())},
        "estimated": dict(sorted((guessed or {}).items())),
    }


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
