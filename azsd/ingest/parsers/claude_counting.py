"""A Claude transcript read for its usage alone: what `azs usage --all` needs of a file no store holds.

Most of a transcript's bytes are tool results (file contents, command output), tool inputs and the
program's own bookkeeping, and none of them is usage. :class:`ClaudeCountingParser` passes such a
line by with a byte test, and decodes an assistant line into the few fields usage needs (its
message's id, model and usage, the line's request id, cost and time), never into its content.
Every other line is parsed as :class:`ClaudeSessionParser` parses it, and so is every line that
the turns depend on: a sub-agent's call and its result (a prompt given to a sub-agent is no turn)
and prompts. The usage rules are the same code fed the same values, so the report (usage, costs,
message keys, time slots, turns) is the one the whole parse makes (tests/test_usage_counting.py
compares the two on every corpus file); its events are not all made, and are dropped.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from azsd.events import MAX_NESTING, Event
from azsd.ingest.parsers.base import MAX_LINE_BYTES, TOO_LONG
from azsd.ingest.parsers.claude import ClaudeSessionParser

__all__ = ["ClaudeCountingParser"]


class _Message(msgspec.Struct):
    id: Any = msgspec.UNSET
    model: Any = None
    usage: Any = None


class _Assistant(msgspec.Struct):
    """An assistant line's fields that usage needs (its message's content is never decoded)."""

    type: Any = None
    message: _Message | None = None
    requestId: Any = None
    costUSD: Any = None
    timestamp: Any = None
    sessionId: Any = None


_DECODER: Final = msgspec.json.Decoder(_Assistant)


class ClaudeCountingParser(ClaudeSessionParser):
    """:class:`ClaudeSessionParser` for the usage report alone (see the module docstring)."""

    def feed(self, line: bytes) -> list[Event]:
        # (byte tests written out: this runs for every line of every file `usage --all` reads)
        if line is TOO_LONG or len(line) > MAX_LINE_BYTES:
            return super().feed(line)
        if b'"usage"' not in line and b'"cost-state"' not in line and b'"result"' not in line:
            if not self._open_subagents and (
                b'"tool_result"' in line
                or b'"file-history-snapshot"' in line
                or b'"queue-operation"' in line
                or b'"attachment"' in line
            ):
                self.report.lines += 1
                return []
            return super().feed(line)
        if (
            b'"assistant"' not in line
            or b'"Task"' in line
            or b'"Agent"' in line
            or b'"task"' in line
            or b'"agent"' in line
            or line.count(b"[") + line.count(b"{") > MAX_NESTING
        ):
            return super().feed(line)
        try:
            obj = _DECODER.decode(line)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            return super().feed(line)  # (a line of another shape: the whole parse says what it is)
        if obj.type != "assistant" or obj.message is None:
            return super().feed(line)
        report = self.report
        report.lines += 1
        if isinstance(obj.sessionId, str):
            report.agent_session_id = obj.sessionId
        found = obj.message
        message: dict[str, Any] = {"model": found.model, "usage": found.usage}
        if found.id is not msgspec.UNSET:
            message["id"] = found.id
        self._usage.note(message, obj.requestId, obj.costUSD, obj.timestamp)
        if report.usage is not report.tally.seen:
            report.tally.follow(report.usage, report.model, obj.timestamp, report.priced)
        return []
