"""Write-time truncation of events (`compact_event`, spec §3) and `char_len` (§2.4).

Stored rows are already compact. The function is **not idempotent** (a Read marker counts as a
line the second time, a Write loses `_lines`), so it runs exactly once per event, at append.

>>> compact_event(ToolResult(tool_use_id="t", tool_name="Glob", content="a\\nb", is_error=False)).content
'2 files'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

from azsd.context import cut_reminder, has_context_tag, is_hidden_codex_context, sanitize
from azsd.events import (
    AssistantText,
    Command,
    Event,
    Filtered,
    Hook,
    MayBeCompacting,
    Plan,
    ToolCall,
    ToolResult,
    UserMessage,
)
from azsd.rusttext import head_lines, last_lines, line_count, rust_lines, trim

__all__ = [
    "char_len",
    "compact_event",
    "compact_tool_input",
    "compact_tool_result",
    "prepare_for_store",
]

_PURPOSE_PREFIXES: Final = ("//", "#", "/*", '"""', "///", "//!")
_ENCODER: Final = msgspec.json.Encoder()

_KEPT_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "Read": ("file_path", "path"),
    "read": ("file_path", "path"),
    "Bash": ("command",),
    "bash": ("command",),
    "Glob": ("pattern",),
    "glob": ("pattern",),
    "Grep": ("pattern",),
    "grep": ("pattern",),
    "WebFetch": ("url",),
    "webfetch": ("url",),
    "WebSearch": ("query",),
    "websearch": ("query",),
    "Agent": ("subagent_type", "description"),
    "agent": ("subagent_type", "description"),
    "Task": ("subagent_type", "description"),
    "task": ("subagent_type", "description"),
    "LSP": ("operation", "filePath"),
    "lsp": ("operation", "filePath"),
}
_DEFAULT_KEYS: Final = ("file_path", "path", "command", "query", "pattern")


def compact_tool_result(tool_name: str, content: str) -> str:
    """Truncate a tool's output by the rule for its tool (§3), reading of a long output only the
    lines the rule keeps (and counting the others)."""
    text = cut_reminder(content)
    match tool_name:
        case "Read" | "read":
            n = line_count(text)
            if n <= 2:
                return text
            last = last_lines(text, 1)
            return f"{head_lines(text, 1)[0]}\n  ({n} lines)\n{last[0] if last else ''}"
        case "Bash" | "bash":
            return "\n".join(last_lines(text, 2))
        case "Glob" | "glob":
            return f"{line_count(text)} files"
        case "Task" | "task":
            n = line_count(text)
            return text if n <= 5 else "\n".join(head_lines(text, 5)) + f"\n  (+{n - 5} more lines)"
        case _:
            n = line_count(text)
            return text if n <= 3 else "\n".join(head_lines(text, 3)) + f"\n  (+{n - 3} more)"


def _write_summary(tool_input: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not isinstance(tool_input, dict):
        return out
    if "file_path" in tool_input:
        out["file_path"] = tool_input["file_path"]
    elif "path" in tool_input:
        out["file_path"] = tool_input["path"]
    content = tool_input.get("content")
    if isinstance(content, str):
        lines = rust_lines(content)
        out["_lines"] = len(lines)
        purpose = next((line for line in lines if trim(line).startswith(_PURPOSE_PREFIXES)), None)
        if purpose is None and lines:
            purpose = lines[0]
        if purpose is not None and trim(purpose):
            out["_purpose"] = trim(purpose)
    return out


def compact_tool_input(tool_name: str, tool_input: Any) -> Any:
    """Reduce a tool call's input to the fields worth keeping (§3)."""
    if tool_name in ("Edit", "edit"):
        return tool_input
    if tool_name in ("Write", "write"):
        return _write_summary(tool_input)
    if not isinstance(tool_input, dict):
        return {}
    keys = _KEPT_KEYS.get(tool_name, _DEFAULT_KEYS)
    return {k: tool_input[k] for k in keys if k in tool_input}


def compact_event(event: Event) -> Event:
    """The event as it is stored: prompts sanitized, tool inputs and outputs truncated."""
    match event:
        case UserMessage(content=content):
            clean = sanitize(content)
            return UserMessage(content="" if clean is None else clean)
        case ToolResult():
            return msgspec.structs.replace(event, content=compact_tool_result(event.tool_name, event.content))
        case ToolCall():
            return msgspec.structs.replace(event, input=compact_tool_input(event.tool_name, event.input))
        case _:
            return event


def char_len(event: Event) -> int:
    """The `char_len` column: UTF-8 bytes of the fields that count toward the context size (§2.4)."""
    match event:
        case UserMessage(content=text) | ToolResult(content=text) | Plan(content=text):
            return len(text.encode())
        case Hook(output=text) | AssistantText(text=text) | Command(name=text):
            return len(text.encode())
        case ToolCall(tool_name=name, input=tool_input):
            return len(name.encode()) + len(_ENCODER.encode(tool_input))
        case _:
            return 0


def prepare_for_store(events: Iterable[Event]) -> list[Event]:
    """The events `append_events` stores, compacted, in order (spec §2.5 step 2).

    `Filtered` and `MayBeCompacting` are dropped, and so is a prompt that turned out to be nothing
    but injected context (its compacted content is empty and the original held a context tag or
    hidden Codex context). Callers that dedup against stored rows compare with this output.
    """
    out: list[Event] = []
    for event in events:
        if isinstance(event, Filtered | MayBeCompacting):
            continue
        compacted = compact_event(event)
        if (
            isinstance(event, UserMessage)
            and isinstance(compacted, UserMessage)
            and compacted.content == ""
            and (has_context_tag(event.content) or is_hidden_codex_context(event.content))
        ):
            continue
        out.append(compacted)
    return out
