"""Feeding hand-written Codex lines to the parser, for the tests/test_parsers_codex_*.py modules:
`codex exec --json` lines and rollout items.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from azsd.context import CONTEXT_CLOSE, CONTEXT_OPEN
from azsd.events import AssistantText, Event, Hook, ToolCall, ToolResult, UserMessage
from azsd.ingest.parsers.base import LineParser
from azsd.ingest.parsers.codex_rollout import CodexRolloutParser
from azsd.pricing import default_table

PRICES = default_table()

WRAPPED = f"{CONTEXT_OPEN}\n## User\nold prompt\n{CONTEXT_CLOSE}\n\nthe real prompt"
AGENTS_MD = "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nbe terse\n</INSTRUCTIONS>"


def line(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def feed(parser: LineParser, *objs: Any) -> list[Event]:
    out: list[Event] = []
    for obj in objs:
        out.extend(parser.feed(line(obj)))
    return out


def texts(events: Iterable[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, AssistantText)]


def reasonings(events: Iterable[Event]) -> list[str]:
    """The reasoning kept: Hooks ``reasoning``, never assistant text."""
    return [e.output for e in events if isinstance(e, Hook) and e.name == "reasoning"]


def prompts(events: Iterable[Event]) -> list[str]:
    return [e.content for e in events if isinstance(e, UserMessage)]


def bash_call(call_id: str, command: str) -> ToolCall:
    return ToolCall(tool_use_id=call_id, tool_name="Bash", file_path=None, input={"command": command})


def result(
    call_id: str, name: str, content: str, is_error: bool = False, path: str | None = None
) -> ToolResult:
    return ToolResult(tool_use_id=call_id, tool_name=name, file_path=path, content=content, is_error=is_error)


def envelope(kind: str, **payload: Any) -> dict[str, Any]:
    return {"timestamp": "2026-01-01T00:00:00.000Z", "type": kind, "payload": payload}


def item(**payload: Any) -> dict[str, Any]:
    return envelope("response_item", **payload)


def event(**payload: Any) -> dict[str, Any]:
    return envelope("event_msg", **payload)


def user_item(content: Any) -> dict[str, Any]:
    return item(type="message", role="user", content=content)


def assistant_item(text: str) -> dict[str, Any]:
    return item(type="message", role="assistant", content=[{"type": "output_text", "text": text}])


def fn_call(name: str, call_id: str, arguments: Any) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return item(type="function_call", name=name, call_id=call_id, arguments=args)


def fn_output(call_id: str, output: Any) -> dict[str, Any]:
    return item(type="function_call_output", call_id=call_id, output=output)


def rollout(*objs: Any) -> list[Event]:
    return feed(CodexRolloutParser(), *objs)


def only_call(events: list[Event]) -> ToolCall:
    (call,) = events
    assert isinstance(call, ToolCall)
    return call
