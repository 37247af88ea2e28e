"""Human output of what happens in sessions: stored events (`azs show`, `tail`, `run`) and notifications
(`azs watch`).

Pure functions from protocol values to lines of text.
"""

from __future__ import annotations

from collections.abc import Callable
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
from azsd.ipc.protocol import EventsAppended, Notification, SessionChanged, SessionCreated, WireEvent
from azsd.tools import display_key

from .sessions import badge
from .text import LINE_MAX, Cell, Style, format_cost, format_duration, one_line

__all__ = ["event_lines", "key_param", "notification_line"]

_RESULT_LINES: Final = 3


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
    took = f" in {format_duration(e.duration_ms)}" if e.duration_ms else ""  # 0: not measured
    if e.success:
        return [s.green(f"✓ completed{took}{cost}")]
    return [s.red(f"✗ failed{took.replace(' in ', ' after ')}{cost}")]


def _init_text(e: Init) -> str:
    """`session started: model M, cwd C`, leaving out a field the agent left empty."""
    facts = [f"{name} {value}" for name, value in (("model", e.model), ("cwd", e.cwd)) if value.strip()]
    return "session started" + (": " + ", ".join(facts) if facts else "")


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
    Init: lambda e, s: [s.dim(f"  · {_init_text(e)}")],
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
