"""Human output of `azs`: badges, aligned columns, events as a reader wants to see them.

Pure functions from protocol values to lines of text; colour only when a :class:`Style` says so
(a terminal, and no ``NO_COLOR``). Machine output (`--json`) does not come through here.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from azsd.errors import ProtocolError
from azsd.events import (
    AssistantText,
    Command,
    Compacted,
    Compacting,
    Complete,
    EventDecodeError,
    Filtered,
    Hook,
    Init,
    MayBeCompacting,
    ModelSwitch,
    Plan,
    ToolCall,
    ToolResult,
    UserMessage,
    decode_event,
)
from azsd.ipc.protocol import (
    EventsAppended,
    Notification,
    SessionChanged,
    SessionCreated,
    SessionView,
    UsageView,
    WireEvent,
)
from azsd.tools import display_key

__all__ = [
    "Cell",
    "Style",
    "badge",
    "display_width",
    "event_lines",
    "format_cost",
    "format_duration",
    "format_tokens",
    "key_param",
    "lineage",
    "notification_line",
    "one_line",
    "session_header",
    "session_rows",
    "table",
    "usage_summary",
]

_LINE_MAX: Final = 160
_RESULT_LINES: Final = 3


@dataclass(frozen=True)
class Style:
    """ANSI colour, or none at all."""

    color: bool = False

    def _sgr(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def bold(self, text: str) -> str:
        return self._sgr("1", text)

    def dim(self, text: str) -> str:
        return self._sgr("2", text)

    def red(self, text: str) -> str:
        return self._sgr("31", text)

    def green(self, text: str) -> str:
        return self._sgr("32", text)

    def yellow(self, text: str) -> str:
        return self._sgr("33", text)

    def cyan(self, text: str) -> str:
        return self._sgr("36", text)


def _plain(text: str) -> str:
    return text


@dataclass(frozen=True)
class Cell:
    """A table cell: its text (which sets the width) and how to paint it once padded."""

    text: str
    paint: Callable[[str], str] = _plain


def display_width(text: str) -> int:
    """Terminal columns of `text`: wide East Asian characters take two, combining marks none.

    >>> display_width("S3"), display_width("修正"), display_width("e\\u0301")
    (2, 4, 1)
    """
    if text.isascii():  # one column each: no ASCII character is wide or combining
        return len(text)
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def table(rows: Sequence[Sequence[Cell]], right: frozenset[int] = frozenset()) -> list[str]:
    """Rows aligned in columns two spaces apart; columns in `right` are right-aligned.

    >>> table([[Cell("S3"), Cell("x")], [Cell("S12"), Cell("yy")]], right=frozenset({0}))
    [' S3  x', 'S12  yy']
    """
    cell_widths = [[display_width(cell.text) for cell in row] for row in rows]
    widths: dict[int, int] = {}
    for row_widths in cell_widths:
        for i, width in enumerate(row_widths):
            widths[i] = max(widths.get(i, 0), width)
    lines = []
    for row, row_widths in zip(rows, cell_widths, strict=True):
        parts = []
        for i, (cell, width) in enumerate(zip(row, row_widths, strict=True)):
            pad = " " * (widths[i] - width)
            parts.append(pad + cell.paint(cell.text) if i in right else cell.paint(cell.text) + pad)
        lines.append("  ".join(parts).rstrip())
    return lines


# -- sessions ---------------------------------------------------------------------------------------


def badge(state: str, style: Style) -> Cell:
    """✓ succeeded, ✗ failed, ● running, `new` for a session without events."""
    match state:
        case "succeeded":
            return Cell("✓", style.green)
        case "failed":
            return Cell("✗", style.red)
        case "running":
            return Cell("●", style.yellow)
        case "new":
            return Cell("new", style.dim)
    return Cell("?", style.dim)


def format_duration(ms: int | None) -> str:
    """A short human duration.

    >>> format_duration(1234), format_duration(75_000), format_duration(None)
    ('1.2s', '1m15s', '')
    """
    if ms is None:
        return ""
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_cost(cost: float | None) -> str:
    """`$0.1234`, or "" for no cost."""
    return f"${cost:.4f}" if cost else ""


def one_line(text: str, limit: int = _LINE_MAX) -> str:
    """`text` on one line (line breaks shown as ⏎), cut to `limit` characters."""
    flat = " ⏎ ".join(part.strip() for part in text.strip().splitlines()) if "\n" in text else text.strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_tokens(n: int) -> str:
    """A token count in a few characters.

    >>> format_tokens(950), format_tokens(12_345), format_tokens(4_100_000)
    ('950', '12.3k', '4.1M')
    """
    for limit, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= limit:
            return f"{n / limit:.1f}{unit}"
    return str(n)


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
        row = [
            badge(v.state, style),
            Cell(f"S{v.id}", style.bold),
            Cell(one_line(v.name, 60)),
            Cell(count, style.dim),
            Cell(format_duration(v.duration_ms)),
            Cell(format_cost(v.cost_usd if v.cost_usd else v.usage.cost_usd if v.usage else None)),
            Cell(usage_summary(v.usage), style.dim),
            Cell(v.created, style.dim),
            Cell(lineage(v), style.cyan),
            Cell("archived" if v.archived else "", style.yellow),
        ]
        if worktree:
            row.append(Cell(v.worktree or "-", style.cyan))
        rows.append(row)
    return table(rows, right=frozenset({1, 3, 4, 5}))


def session_header(view: SessionView, style: Style) -> list[str]:
    """`azs show`: who the session is, where it comes from, where it stands, what it cost."""
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
        facts.append(format_cost(view.cost_usd))
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
        lines.append(style.dim(f"tokens: {tokens}" + (f" · {format_cost(u.cost_usd)}" if u.cost_usd else "")))
    return lines


# -- events -----------------------------------------------------------------------------------------


def key_param(call: ToolCall) -> str:
    """The one parameter that says what a tool call does (AZUREAL's choice, then sensible fallbacks).

    >>> key_param(ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "ls -la"}))
    'ls -la'
    """
    data: dict[str, Any] = call.input if isinstance(call.input, dict) else {}
    key = display_key(call.tool_name, data)
    return (data[key] if key is not None else "") or call.file_path or ""


def _indented(text: str, prefix: str, rest: str) -> list[str]:
    lines = text.rstrip().splitlines() or [""]
    return [prefix + lines[0], *(rest + line for line in lines[1:])]


def _shorten(content: str) -> list[str]:
    cut = content.split("<system-reminder>", 1)[0].rstrip()
    lines = [one_line(line) if len(line) > _LINE_MAX else line for line in cut.splitlines()]
    if len(lines) > _RESULT_LINES:
        return [*lines[:_RESULT_LINES], f"… (+{len(lines) - _RESULT_LINES} more lines)"]
    return lines or ["(no output)"]


def _user(e: UserMessage, s: Style) -> list[str]:
    return ["", *(s.bold(line) for line in _indented(e.content, "» ", "  "))]


def _assistant(e: AssistantText, s: Style) -> list[str]:
    return _indented(e.text, "  ", "  ")


def _tool_call(e: ToolCall, s: Style) -> list[str]:
    param = one_line(key_param(e), 120)
    return [f"  ⚙ {s.cyan(e.tool_name)}" + (f" {s.dim(param)}" if param else "")]


def _tool_result(e: ToolResult, s: Style) -> list[str]:
    lines = _shorten(e.content)
    mark, paint = ("✗", s.red) if e.is_error else ("↳", s.dim)
    return [paint(f"    {mark} {lines[0]}"), *(paint(f"      {line}") for line in lines[1:])]


def _complete(e: Complete, s: Style) -> list[str]:
    cost = f" · {format_cost(e.cost_usd)}" if e.cost_usd else ""
    if e.success:
        return [s.green(f"✓ completed in {format_duration(e.duration_ms)}{cost}")]
    return [s.red(f"✗ failed after {format_duration(e.duration_ms)}{cost}")]


def _plan(e: Plan, s: Style) -> list[str]:
    return [f"  ▤ plan {s.bold(e.name)}", *(f"    {line}" for line in _shorten(e.content))]


def _note(text: str) -> Callable[[Any, Style], list[str]]:
    return lambda e, s: [s.dim(f"  · {text.format(e=e)}")]


_RENDERERS: Final[dict[type[Any], Callable[[Any, Style], list[str]]]] = {
    UserMessage: _user,
    AssistantText: _assistant,
    ToolCall: _tool_call,
    ToolResult: _tool_result,
    Complete: _complete,
    Plan: _plan,
    Command: lambda e, s: [f"  ▸ {s.cyan(e.name)}"],
    Init: _note("session started: model {e.model}, cwd {e.cwd}"),
    Hook: _note("hook {e.name}"),
    ModelSwitch: _note("model → {e.model}"),
    Compacting: _note("compacting…"),
    Compacted: _note("compacted"),
    MayBeCompacting: _note("may be compacting"),
    Filtered: _note("filtered"),
}


def event_lines(event: WireEvent, style: Style) -> list[str]:
    """How `show` and `tail` print one stored event."""
    try:
        decoded = decode_event(event.data)
    except EventDecodeError as exc:
        return [style.dim(f"  ? {event.kind} #{event.seq} (unreadable: {exc})")]
    return _RENDERERS[type(decoded)](decoded, style)


# -- other commands ---------------------------------------------------------------------------------


def notification_line(note: Notification, style: Style) -> str:
    """`azs watch`: one line per notification."""
    match note:
        case SessionCreated(session=v):
            where = f" (worktree {v.worktree})" if v.worktree else ""
            return f"{style.green('+')} S{v.id} created{': ' + one_line(v.name, 80) if v.name else ''}{where}"
        case SessionChanged(session_id=sid, change="deleted"):
            return f"{style.red('-')} S{sid} deleted"
        case SessionChanged(session_id=sid, change="renamed", session=v):
            return (
                f"{style.cyan('~')} S{sid} renamed to {one_line(v.name, 80) if v and v.name else f'S{sid}'}"
            )
        case SessionChanged(session_id=sid, change=change, session=v):
            mark = badge(v.state, style) if v else Cell("?")
            return f"{mark.paint(mark.text)} S{sid} {change}" + (f" ({v.state})" if v else "")
        case EventsAppended(session_id=sid, events=events):
            kinds = ", ".join(dict.fromkeys(e.kind for e in events))
            return f"{style.dim('·')} S{sid} +{len(events)} event{'s' if len(events) != 1 else ''}: {kinds}"
    raise ProtocolError(f"unknown notification {type(note).__name__}")
