"""Which input parameter says what a tool call does: the one table, for context, export and the CLI.

AZUREAL's transcript (spec §5.2) shows one parameter per call, chosen by :data:`CONTEXT_KEYS`; the
context prompt must match it byte for byte, so :func:`context_param` applies exactly that rule.
Views for people (export, ``azs show``) know more tools (:data:`DISPLAY_KEYS`, a superset) and fall
back to the first of :data:`FALLBACK_KEYS` the input holds (:func:`display_key`).

>>> context_param("Bash", {"command": "ls"})
'ls'
>>> display_key("MultiEdit", {"file_path": "/a.py", "edits": []})
'file_path'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["CONTEXT_KEYS", "DISPLAY_KEYS", "FALLBACK_KEYS", "context_param", "display_key"]

#: Spec §5.2: the lower-cased tool name → the parameter the transcript shows (else `file_path`).
CONTEXT_KEYS: Final[Mapping[str, str]] = {
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
#: The names §5.2 matches besides their lower-cased forms (any other capitalisation is unknown).
_CONTEXT_NAMES: Final = frozenset(
    {"Bash", "Read", "Edit", "Write", "Glob", "Grep", "WebFetch", "WebSearch", "Agent", "Task", "LSP"}
)
#: What views for people show: the spec's table and the tools it leaves out.
DISPLAY_KEYS: Final[Mapping[str, str]] = {
    **CONTEXT_KEYS,
    "shell": "command",
    "multiedit": "file_path",
    "notebookedit": "notebook_path",
    "exitplanmode": "plan",
}
#: Tried in order when a tool is unknown or lacks its own parameter.
FALLBACK_KEYS: Final = ("file_path", "path", "command", "cmd", "pattern", "url", "query", "description")


def context_param(tool_name: str, tool_input: Any) -> str:
    """The parameter AZUREAL's transcript shows for a call (spec §5.2), or ``""``."""
    if tool_name in _CONTEXT_NAMES or tool_name in CONTEXT_KEYS:
        key = CONTEXT_KEYS[tool_name.lower()]
    else:
        key = "file_path"
    if not isinstance(tool_input, dict):
        return ""
    value = tool_input[key] if key in tool_input else tool_input.get("path")
    return value if isinstance(value, str) else ""


def display_key(tool_name: str, tool_input: Mapping[str, Any]) -> str | None:
    """The input key a view shows for a call: the tool's own when it holds a string, else the first
    fallback that does; None when no key holds a string."""
    key = DISPLAY_KEYS.get(tool_name.lower())
    if key is not None and isinstance(tool_input.get(key), str):
        return key
    return next((k for k in FALLBACK_KEYS if isinstance(tool_input.get(k), str)), None)
