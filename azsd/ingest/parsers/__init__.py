"""Parsers for the agent formats azsd ingests: the four JSONL formats (spec/agent-formats.md) and
Aider's Markdown chat history (docs/agents.md).

>>> detect_format([b'{"type":"thread.started","thread_id":"t"}'])
'codex-exec-json'
>>> parser = make_parser("claude-stream-json")
>>> parser.feed(b'{"type":"system","subtype":"init","session_id":"s","cwd":"/w","model":"m"}')
[Init(cwd='/w', model='m')]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any, Final, Literal, TypeVar, get_args

import msgspec

from azsd.errors import BadRequestError
from azsd.ingest.parsers.base import (
    MAX_LINE_BYTES,
    TOO_LONG,
    LineParser,
    ParseReport,
    iter_lines,
    split_lines,
)

__all__ = [
    "FORMATS",
    "JSONL_FORMATS",
    "MAX_LINE_BYTES",
    "TOO_LONG",
    "Format",
    "LineParser",
    "ParseReport",
    "UnknownFormatError",
    "detect_format",
    "head_value",
    "iter_lines",
    "make_parser",
    "split_lines",
]

Format = Literal["claude-stream-json", "claude-session", "codex-exec-json", "codex-rollout", "aider"]
FORMATS: Final[tuple[Format, ...]] = get_args(Format)
#: The formats whose lines are JSON objects (all but Aider's Markdown).
JSONL_FORMATS: Final[tuple[Format, ...]] = tuple(f for f in FORMATS if f != "aider")

#: How many lines detection looks at before giving up.
DETECT_LINES: Final = 50

_T = TypeVar("_T")

_ROLLOUT_TYPES: Final = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_SESSION_TYPES: Final = frozenset(
    {"summary", "file-history-snapshot", "queue-operation", "progress", "last-prompt", "custom-title"}
)
_DECODER: Final = msgspec.json.Decoder()


class UnknownFormatError(BadRequestError):
    """The format name is not one of :data:`FORMATS`, or a file's format could not be detected."""


def make_parser(fmt: str, model: str = "") -> LineParser:
    """A fresh incremental parser for the format `fmt`; `model` is the one the agent was started with,
    for a format that does not say (`codex exec --json`), so that its usage is priced at it."""
    if fmt not in FORMATS:
        raise UnknownFormatError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if fmt == "aider":
        from azsd.ingest.parsers.aider import AiderParser

        return AiderParser()
    if fmt.startswith("claude"):
        from azsd.ingest.parsers.claude import ClaudeSessionParser, ClaudeStreamParser

        return ClaudeStreamParser() if fmt == "claude-stream-json" else ClaudeSessionParser()
    from azsd.ingest.parsers.codex_exec import CodexExecParser
    from azsd.ingest.parsers.codex_rollout import CodexRolloutParser

    return CodexExecParser(model) if fmt == "codex-exec-json" else CodexRolloutParser()


def _vote(obj: dict[str, Any]) -> Format | None:
    """The format one decoded line belongs to, when the line says so unambiguously."""
    kind = obj.get("type")
    if "payload" in obj and kind in _ROLLOUT_TYPES:
        return "codex-rollout"
    if "record_type" in obj or ("instructions" in obj and "id" in obj and kind is None):
        return "codex-rollout"
    if isinstance(kind, str) and kind.startswith(("thread.", "turn.", "item.", "session.created")):
        return "codex-exec-json"
    if ("msg" in obj and "id" in obj) or ("prompt" in obj and len(obj) == 1):
        return "codex-exec-json"
    if kind is None and "model" in obj and ("sandbox" in obj or "approval" in obj):
        return "codex-exec-json"
    if "sessionId" in obj or kind in _SESSION_TYPES or "parentUuid" in obj:
        return "claude-session"
    if "session_id" in obj and kind in ("system", "assistant", "user", "result", "stream_event"):
        return "claude-stream-json"
    if kind in ("assistant", "user") and isinstance(obj.get("message"), dict):
        return "claude-stream-json"  # a bare message line with no envelope: the stream's shape
    return None


def detect_format(lines: Iterable[bytes]) -> Format | None:
    """The format of a file from its first lines, or None when none of them tells (an Aider chat
    history, Markdown, tells by its ``# aider chat started at`` line)."""
    head = list(islice(lines, DETECT_LINES))
    if any(line.startswith(b"# aider chat started at ") for line in head):
        return "aider"
    return head_value(head, DETECT_LINES, _vote)


def head_value(lines: Iterable[bytes], limit: int, pick: Callable[[dict[str, Any]], _T | None]) -> _T | None:
    """The first `pick(object)` that is not None among the JSON-object lines of the first `limit`
    `lines` (blank, undecodable, too deeply nested and too-long lines are passed over: the parser
    that reads them afterwards skips and counts them)."""
    for n, line in enumerate(lines):
        if n >= limit:
            break
        if line is TOO_LONG or not line.strip():
            continue
        try:
            obj = _DECODER.decode(line)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            continue
        if isinstance(obj, dict):
            value = pick(obj)
            if value is not None:
                return value
    return None
