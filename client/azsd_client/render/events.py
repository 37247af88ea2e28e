"""Human output of what happens in sessions: stored events (`azs show`, `tail`, `run`) and notifications
(`azs watch`).

Pure functions from protocol values to lines of text. An event is one plain string (its colours as
ANSI codes, :class:`~.text.AnsiStyle`), so that a transcript of 100 000 events streams as fast as its
JSON: no rich object per event. Text an agent wrote is hostile: its control characters (escape
sequences, carriage returns, bells) are shown as visible symbols, never sent to the terminal.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import msgspec

from azsd.errors import ProtocolError
from azsd.events import (
    NOTICE_HOOKS,
    REASONING_HOOKS,
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
from azsd.ipc.protocol import EventsAppended, Notification, SessionChanged, SessionCreated, WireEvent
from azsd.tools import display_key

from . import full as full_rows
from .sessions import badge
from .text import (
    LINE_MAX,
    Ansi,
    AnsiStyle,
    Cell,
    Line,
    Style,
    format_cost,
    format_duration,
    join,
    one_line,
    plural,
    wrap_ansi,
)
from .turns import ERROR_PREFIX

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["event_lines", "event_text", "full_event_lines", "harmless", "key_param", "notification_line"]

_RESULT_LINES: Final = 3
_Piece: TypeAlias = "str | Text"


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
    lines = [one_line(line) if len(line) > LINE_MAX else line for line in cut.splitlines()]
    if len(lines) > _RESULT_LINES:
        more = len(lines) - _RESULT_LINES
        return [*lines[:_RESULT_LINES], f"… (+{plural(more, 'more line', 'more lines')})"]
    return lines or ["(no output)"]


def _user(e: UserMessage, s: Style) -> list[_Piece]:
    return [s.bold(line) for line in _indented(e.content, "» ", "  ")]


def _assistant(e: AssistantText, s: Style) -> list[_Piece]:
    if e.text.startswith(ERROR_PREFIX):  # how a turn failed (stored by `azs run`, or by AZUREAL)
        return [s.red(line) for line in _indented(e.text, "✗ ", "  ")]
    return list(_indented(e.text, "  ", "  "))


def _hook(e: Hook, s: Style) -> list[_Piece]:
    """A hook's name; a model's reasoning (∴) and an agent program's own notice (·) with their text."""
    if e.name in REASONING_HOOKS:
        return [s.dim(line) for line in _indented(e.output, "  ∴ ", "    ")]
    if e.name in NOTICE_HOOKS:
        return [s.dim(line) for line in _indented(e.output, f"  · {e.name}: ", "    ")]
    return [s.dim(f"  · hook {e.name}")]


def _tool_call(e: ToolCall, s: Style) -> list[_Piece]:
    param = one_line(key_param(e), 120)
    return [join("  ⚙ ", s.cyan(e.tool_name), *((" ", s.dim(param)) if param else ()))]


def _tool_result(e: ToolResult, s: Style) -> list[_Piece]:
    lines = _shorten(e.content)
    mark, paint = ("✗", s.red) if e.is_error else ("↳", s.dim)
    return [paint(f"    {mark} {lines[0]}"), *(paint(f"      {line}") for line in lines[1:])]


def _complete(e: Complete, s: Style) -> list[_Piece]:
    cost = f" · {format_cost(e.cost_usd)}" if e.cost_usd else ""
    took = f" in {format_duration(e.duration_ms)}" if e.duration_ms else ""  # 0: not measured
    if e.success:
        return [s.green(f"✓ completed{took}{cost}")]
    return [s.red(f"✗ failed{took.replace(' in ', ' after ')}{cost}")]


def _init_text(e: Init) -> str:
    """`session started: model M, cwd C`, leaving out a field the agent left empty."""
    facts = [f"{name} {value}" for name, value in (("model", e.model), ("cwd", e.cwd)) if value.strip()]
    return "session started" + (": " + ", ".join(facts) if facts else "")


def _plan(e: Plan, s: Style) -> list[_Piece]:
    return [join("  ▤ plan ", s.bold(e.name)), *(f"    {line}" for line in _shorten(e.content))]


def _note(text: str) -> Callable[[Any, Style], list[_Piece]]:
    return lambda e, s: [s.dim(f"  · {text.format(e=e)}")]


_RENDERERS: Final[dict[type[Any], Callable[[Any, Style], list[_Piece]]]] = {
    UserMessage: _user,
    AssistantText: _assistant,
    ToolCall: _tool_call,
    ToolResult: _tool_result,
    Complete: _complete,
    Plan: _plan,
    Command: lambda e, s: [join("  ▸ ", s.cyan(e.name))],
    Init: lambda e, s: [s.dim(f"  · {_init_text(e)}")],
    Hook: _hook,
    ModelSwitch: _note("model → {e.model}"),
    Compacting: _note("compacting…"),
    Compacted: _note("compacted"),
    MayBeCompacting: _note("may be compacting"),
    Filtered: _note("filtered"),
}


def event_pieces(event: WireEvent, style: Style, *, full: bool = False) -> list[_Piece]:
    """The lines of one stored event, without its seq (its text's control characters made visible);
    `full`: an event of the full record, its tool calls and results shown whole."""
    try:
        decoded = decode_event(_harmless_json(event.data))
    except EventDecodeError as exc:
        return [style.dim(f"  ? {event.kind} (unreadable: {exc})")]
    if full and isinstance(decoded, ToolCall):
        return _tool_call(decoded, style) + [_row(row, style) for row in full_rows.body(decoded)]
    if full and isinstance(decoded, ToolResult):
        mark, paint = ("✗", style.red) if decoded.is_error else ("↳", style.dim)
        lines = full_rows.result_rows(decoded.content)
        return [paint(f"    {mark} {lines[0]}"), *(paint(f"      {line}") for line in lines[1:])]
    return _RENDERERS[type(decoded)](decoded, style)


def _row(row: full_rows.Row, s: Style) -> _Piece:
    kind, text = row
    paint = {"+": s.green, "-": s.red, "@": s.cyan, " ": s.dim}.get(kind)
    line = f"    {kind} {text}" if kind != "=" else f"      {text}"
    return paint(line) if paint is not None else line


#: C0 controls but tab and newline, DEL, and the C1 controls: each as a visible symbol (the C0 ones
#: as Unicode's control pictures, ␛ for escape).
_CONTROLS: Final = {
    **{c: chr(0x2400 + c) for c in range(0x20) if chr(c) not in "\t\n"},
    0x7F: "\u2421",
    **{c: "\ufffd" for c in range(0x80, 0xA0)},
}
#: How JSON text escapes a control character (or may: ``\\u`` is any escape), and the C1 controls,
#: which it holds as they are.
_ESCAPES: Final = ("\\u", "\\r", "\\b", "\\f")
_C1: Final = re.compile("[\x80-\x9f]")


def harmless(text: str) -> str:
    r"""`text` with nothing a terminal would act on: CR LF becomes LF, every other control character a
    visible symbol.

    >>> harmless("red \x1b[31m! \r\n\x07")
    'red ␛[31m! \n␇'
    """
    return text.replace("\r\n", "\n").translate(_CONTROLS)


def _harmless_json(data: str) -> str:
    """An event's JSON with every string made :func:`harmless` (as it is when none needs it: most)."""
    if not any(escape in data for escape in _ESCAPES) and (data.isascii() or not _C1.search(data)):
        return data
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return data  # decode_event says what is wrong with it
    return msgspec.json.encode(_harmless_value(value)).decode()


def _harmless_value(value: Any) -> Any:
    if isinstance(value, str):
        return harmless(value)
    if isinstance(value, dict):
        return {harmless(k): _harmless_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_harmless_value(v) for v in value]
    return value


#: The width of the margin the seq is shown in.
_GUTTER: Final = 5


def event_text(event: WireEvent, style: Style, *, mark: str = " ", full: bool = False) -> str:
    """How `show`, `tail` and `run` print one stored event: its lines beside its seq, dim, in a left
    margin (the seq `fork --at` and search hits name), `mark` before the seq (``>``: a search hit);
    a prompt starts a new paragraph. One string, its colours as ANSI codes when `style` has colour.
    """
    ansi = _ansi(style.color, style.relative)
    event, size = folded(event, FULL_FOLD_CHARS if full else FOLD_CHARS)
    pieces = event_pieces(event, ansi, full=full)
    if size:
        pieces.append(ansi.dim(f"… folded: {size:,} characters in all (`azs show --json` gives every one)"))
    if isinstance(event.subagent, str):  # a sub-agent's work, nested under the Task call that began it
        pieces = [join(ansi.cyan("│ "), piece) for piece in pieces]
    label = f"{event.seq}".rjust(_GUTTER - 1)
    first = f"{ansi.dim(mark + label)} "
    rest = " " * (max(_GUTTER, len(label) + 1) + 1)
    body = [first + str(pieces[0]), *(rest + str(piece) for piece in pieces[1:])]
    if style.width is not None:  # a terminal: long lines wrap beside the margin, not under the seq
        body = [wrap_ansi(line, style.width, rest) for line in body]
    return ("\n" if event.kind == "UserMessage" else "") + "\n".join(line.rstrip() for line in body)


#: The most characters of one event `show` prints (an agent's 10 MB line is a screenful, not ten
#: million characters); `--json` gives all of it.
FOLD_CHARS: Final = 20_000
#: The same for `show --full`, which is asked for whole files and outputs.
FULL_FOLD_CHARS: Final = 1_000_000


def folded(event: WireEvent, most: int = FOLD_CHARS) -> tuple[WireEvent, int]:
    """`event` with each of its texts cut to `most` characters (and the size of its JSON), or the
    event itself (and 0) when it is shorter than that."""
    if len(event.data) <= most:
        return event, 0
    try:
        value = msgspec.json.decode(event.data)
    except msgspec.DecodeError:
        return msgspec.structs.replace(event, data=event.data[:most]), len(event.data)
    cut = msgspec.json.encode(_cut(value, most)).decode()
    return msgspec.structs.replace(event, data=cut), len(event.data)


def _cut(value: Any, most: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= most else value[:most] + "…"
    if isinstance(value, list):
        return [_cut(v, most) for v in value]
    if isinstance(value, dict):
        return {k: _cut(v, most) for k, v in value.items()}
    return value


@functools.lru_cache(maxsize=4)
def _ansi(color: bool, relative: bool) -> AnsiStyle:
    return AnsiStyle(color=color, relative=relative)


def event_lines(event: WireEvent, style: Style) -> list[Line]:
    """:func:`event_text` as a line of output (written as it is)."""
    return [Ansi(event_text(event, style))]


def full_event_lines(event: WireEvent, style: Style) -> list[Line]:
    """:func:`event_lines` of an event of the full record (tool calls and results whole)."""
    return [Ansi(event_text(event, style, full=True))]


def notification_line(note: Notification, style: Style) -> str | Text:
    """`azs watch`: one line per notification."""
    match note:
        case SessionCreated(session=v):
            where = f" (branch {v.worktree})" if v.worktree else ""
            name = ": " + one_line(v.name, 80) if v.name else ""
            return join(style.green("+"), f" S{v.id} created{name}{where}")
        case SessionChanged(session_id=sid, change="deleted"):
            return join(style.red("-"), f" S{sid} deleted")
        case SessionChanged(session_id=sid, change="renamed", session=v):
            return join(
                style.cyan("~"), f" S{sid} renamed to {one_line(v.name, 80) if v and v.name else f'S{sid}'}"
            )
        case SessionChanged(session_id=sid, change=change, session=v):
            mark = badge(v.state, style) if v else Cell("?")
            return join(mark.paint(mark.text), f" S{sid} {change}" + (f" ({v.state})" if v else ""))
        case EventsAppended(session_id=sid, events=events):
            kinds = ", ".join(dict.fromkeys(e.kind for e in events))
            return join(style.dim("·"), f" S{sid} +{plural(len(events), 'event')}: {kinds}")
    raise ProtocolError(f"unknown notification {type(note).__name__}")
