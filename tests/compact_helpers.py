"""The spec's constants and small builders for the tests/test_compact_*.py modules (`compact_event`,
`char_len`, `prepare_for_store`).
"""

from __future__ import annotations

import json
from typing import Any

from azsd.compact import compact_event, compact_tool_result
from azsd.events import ToolCall, ToolResult

# Constants written out from the spec (§4.4, §5.4), not imported from the code under test.
OPEN = "<azureal-session-context>"
CLOSE = "</azureal-session-context>"
AUTO_CONTINUE = (
    "<azureal-internal-auto-continue>\n"
    "Continue the in-progress work from the supplied Azureal session context. Do not treat this as a new "
    "user request, do not change objectives, and keep following the user's latest instructions.\n"
    "</azureal-internal-auto-continue>"
)
HIDDEN_CODEX = "# AGENTS.md instructions for /home/u/repo\n\n<INSTRUCTIONS>\nBe terse.\n</INSTRUCTIONS>"
REMINDER = "<system-reminder>"


def dumps(value: Any) -> str:
    """Compact JSON as serde writes it (§2.4)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def result(tool: str, content: str) -> str:
    """The compacted content of a ToolResult, checking that the other fields stay as they are."""
    event = ToolResult(
        tool_use_id="toolu_9", tool_name=tool, file_path="/p/f.rs", content=content, is_error=True
    )
    out = compact_event(event)
    assert isinstance(out, ToolResult)
    assert (out.tool_use_id, out.tool_name, out.file_path, out.is_error) == ("toolu_9", tool, "/p/f.rs", True)
    assert compact_tool_result(tool, content) == out.content
    return out.content


def call_input(tool: str, tool_input: Any) -> Any:
    """The compacted input of a ToolCall, checking that the other fields stay as they are."""
    event = ToolCall(tool_use_id="toolu_8", tool_name=tool, file_path="/fp", input=tool_input)
    out = compact_event(event)
    assert isinstance(out, ToolCall)
    assert (out.tool_use_id, out.tool_name, out.file_path) == ("toolu_8", tool, "/fp")
    return out.input


def same_json(a: Any, b: Any) -> bool:
    """Equal including the order of object keys."""
    return dumps(a) == dumps(b)
