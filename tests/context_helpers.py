"""The spec's literals (store-format.md §4.4-§5.4), spelled out independently of azsd.context, and
small event builders for the tests/test_context_*.py modules.
"""

from __future__ import annotations

from typing import Any

from azsd.events import AssistantText, ToolCall, ToolResult, UserMessage

# -- the spec's literals, spelled out independently of azsd.context ------------------------------

OPEN = "<azureal-session-context>"
CLOSE = "</azureal-session-context>"
AC_OPEN = "<azureal-internal-auto-continue>"
AC_CLOSE = "</azureal-internal-auto-continue>"
AUTO_CONTINUE = (
    "<azureal-internal-auto-continue>\n"
    "Continue the in-progress work from the supplied Azureal session context. Do not treat this as a new "
    "user request, do not change objectives, and keep following the user's latest instructions.\n"
    "</azureal-internal-auto-continue>"
)
NOTICE = (
    "\n[Azureal omitted older raw session context here to keep the Codex input under its prompt budget. "
    "Use the previous summary above and the recent context below.]\n\n"
)
HIDDEN = "# AGENTS.md instructions for /home/u/proj\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>"
BUDGET = 180_000


def U(text: str) -> UserMessage:
    return UserMessage(content=text)


def A(text: str) -> AssistantText:
    return AssistantText(text=text)


def wrapped(prompt: str, transcript: str = "## User\nold") -> str:
    """A well-formed injected prompt, as §5.2 builds it."""
    return f"{OPEN}\n{transcript}\n{CLOSE}\n\n{prompt}"


def call(name: str, tool_input: Any, file_path: str | None = None) -> ToolCall:
    return ToolCall(tool_use_id="t1", tool_name=name, file_path=file_path, input=tool_input)


def result(name: str, content: str, is_error: bool = False) -> ToolResult:
    return ToolResult(tool_use_id="t1", tool_name=name, file_path=None, content=content, is_error=is_error)


def nbytes(s: str) -> int:
    return len(s.encode("utf-8"))
