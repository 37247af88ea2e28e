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
    SearchHit,
    SessionChanged,
    SessionCreated,
    SessionView,
    WireEvent,
)

__all__ = [
    "Cell",
    "Style",
    "badge",
    "display_width",
    "event_lines",
    "format_duration",
    "key_param",
    "notification_line",
    "search_line",
    "session_header",
    "session_rows",
    "table",
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


def _cost(cost: float | None) -> str:
    return f"${cost:.4f}" if cost else ""


def _one_line(text: str, limit: int = _LINE_MAX) -> str:
    flat = " ⏎ ".join(part.strip() for part in text.strip().splitlines()) if "\n" in text else text.strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def session_rows(views: Sequence[SessionView], style: Style, *, worktree: bool = False) -> list[str]:
    """`azs ls`: one aligned line per session, badge first."""
    rows = []
    for v in views:
        count = f"{v.event_count} event" + ("" if v.event_count == 1 else "s")
        row = [
            badge(v.state, style),
            Cell(f"S{v.id}", style.bold),
            Cell(_one_line(v.name, 60)),
            Cell(count, style.dim),
            Cell(format_duration(v.duration_ms)),
            Cell(_cost(v.cost_usd)),
            Cell(v.created, style.dim),
        ]
        if worktree:
            row.append(Cell(v.worktree or "-", style.cyan))
        rows.append(row)
    return table(rows, right=frozenset({1, 3, 4, 5}))


def session_header(view: SessionView, style: Style) -> list[str]:
    """`azs show`: who the session is, where it stands, what it cost."""
    mark = badge(view.state, style)
    title = f"{mark.paint(mark.text)} {style.bold(f'S{view.id}')}"
    if view.name:
        title += f"  {style.bold(_one_line(view.name, 100))}"
    facts = [f"{view.state}", f"worktree {view.worktree or '-'}", f"created {view.created}"]
    facts.append(f"{view.event_count} events, {view.message_count} messages")
    if view.duration_ms is not None:
        facts.append(format_duration(view.duration_ms))
    if view.cost_usd:
        facts.append(_cost(view.cost_usd))
    lines = [title, style.dim(" · ".join(facts))]
    u = view.usage
    if u is not None and (u.input or u.output or u.cache_read or u.cache_write):
        tokens = f"{u.input} in, {u.output} out, {u.cache_read} cache read, {u.cache_write} cache write"
        lines.append(style.dim(f"tokens: {tokens}"))
    return lines


# -- events -----------------------------------------------------------------------------------------

_PARAM_KEYS: Final = {
    "bash": "command",
    "read": "file_path",
    "edit": "file_path",
    "write": "file_path",
    "glob": "pattern",
    "grep": "pattern",
    "webfetch": "url",
    "websearch": "query",
    "agent": "description",
    "task": "description",
    "lsp": "operation",
}
_FALLBACK_KEYS: Final = ("path", "file_path", "command", "query", "pattern", "url", "description")


def key_param(call: ToolCall) -> str:
    """The one parameter that says what a tool call does (AZUREAL's choice, then sensible fallbacks).

    >>> key_param(ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "ls -la"}))
    'ls -la'
    """
    data: dict[str, Any] = call.input if isinstance(call.input, dict) else {}
    keys = (_PARAM_KEYS.get(call.tool_name.lower(), "file_path"), *_FALLBACK_KEYS)
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return call.file_path or ""


def _indented(text: str, prefix: str, rest: str) -> list[str]:
    lines = text.rstrip().splitlines() or [""]
    return [prefix + lines[0], *(rest + line for line in lines[1:])]


def _shorten(content: str) -> list[str]:
    cut = content.split("<system-reminder>", 1)[0].rstrip()
    lines = [_one_line(line) if len(line) > _LINE_MAX else line for line in cut.splitlines()]
    if len(lines) > _RESULT_LINES:
        return [*lines[:_RESULT_LINES], f"… (+{len(lines) - _RESULT_LINES} more lines)"]
    return lines or ["(no output)"]


def _user(e: UserMessage, s: Style) -> list[str]:
    return ["", *(s.bold(line) for line in _indented(e.content, "» ", "  "))]


def _assistant(e: AssistantText, s: Style) -> list[str]:
    return _indented(e.text, "  ", "  ")


def _tool_call(e: ToolCall, s: Style) -> list[str]:
    param = _one_line(key_param(e), 120)
    return [f"  ⚙ {s.cyan(e.tool_name)}" + (f" {s.dim(param)}" if param else "")]


def _tool_result(e: ToolResult, s: Style) -> list[str]:
    lines = _shorten(e.content)
    mark, paint = ("✗", s.red) if e.is_error else ("↳", s.dim)
    return [paint(f"    {mark} {lines[0]}"), *(paint(f"      {line}") for line in lines[1:])]


def _complete(e: Complete, s: Style) -> list[str]:
    cost = f" · {_cost(e.cost_usd)}" if e.cost_usd else ""
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


def _hit_text(hit: SearchHit) -> tuple[str, str]:
    try:
        event = decode_event(hit.data)
    except EventDecodeError:
        return "?", hit.data
    if isinstance(event, UserMessage):
        return "»", event.content
    if isinstance(event, AssistantText):
        return " ", event.text
    return "?", hit.data


def search_line(hit: SearchHit, query: str, style: Style, width: int = 100) -> list[Cell]:
    """`azs search`: the session, who spoke, and the text around the first match."""
    who, text = _hit_text(hit)
    flat = " ".join(text.split())
    at = flat.casefold().find(query.casefold())
    start = max(0, at - width // 3) if at >= 0 else 0
    snippet = ("…" if start else "") + flat[start : start + width]
    if start + width < len(flat):
        snippet += "…"
    return [Cell(f"S{hit.session}", style.bold), Cell(who), Cell(snippet)]


def notification_line(note: Notification, style: Style) -> str:
    """`azs watch`: one line per notification."""
    match note:
        case SessionCreated(session=v):
            where = f" (worktree {v.worktree})" if v.worktree else ""
            return (
                f"{style.green('+')} S{v.id} created{': ' + _one_line(v.name, 80) if v.name else ''}{where}"
            )
        case SessionChanged(session_id=sid, change="deleted"):
            return f"{style.red('-')} S{sid} deleted"
        case SessionChanged(session_id=sid, change="renamed", session=v):
            return (
                f"{style.cyan('~')} S{sid} renamed to {_one_line(v.name, 80) if v and v.name else f'S{sid}'}"
            )
        case SessionChanged(session_id=sid, change=change, session=v):
            mark = badge(v.state, style) if v else Cell("?")
            return f"{mark.paint(mark.text)} S{sid} {change}" + (f" ({v.state})" if v else "")
        case EventsAppended(session_id=sid, events=events):
            kinds = ", ".join(dict.fromkeys(e.kind for e in events))
            return f"{style.dim('·')} S{sid} +{len(events)} event{'s' if len(events) != 1 else ''}: {kinds}"
    raise ProtocolError(f"unknown notification {type(note).__name__}")
