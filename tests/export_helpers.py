"""A hand-built session to export, and independent readers of the three export formats, for the
tests/test_export_*.py modules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from html.parser import HTMLParser
from typing import Any

from azsd.events import (
    AssistantText,
    Command,
    Compacted,
    Compacting,
    Complete,
    Event,
    Hook,
    Init,
    ModelSwitch,
    Plan,
    ToolCall,
    ToolResult,
    UserMessage,
    decode_event,
    encode_event,
    event_kind,
)
from azsd.export import render_page
from azsd.model import SessionInfo, StoredEvent


def session(**changes: Any) -> SessionInfo:
    fields: dict[str, Any] = {
        "id": 12,
        "name": "fix parser",
        "worktree": "/home/me/proj",
        "created": "2025-05-06T07:08:09Z",
        "event_count": 0,
        "message_count": 0,
        "completed": None,
        "duration_ms": None,
        "cost_usd": None,
    }
    fields.update(changes)
    return SessionInfo(**fields)


def numbered(events: Sequence[Event], start: int = 1) -> list[StoredEvent]:
    return [StoredEvent(start + i, e) for i, e in enumerate(events)]


EVENTS: list[Event] = [
    Init(cwd="/home/me/proj", model="claude-sonnet-4"),
    UserMessage(content="The parser panics on empty input. Fix it and add a test."),
    AssistantText(text="Let me look at the parser first."),
    ToolCall(
        tool_use_id="t1",
        tool_name="Bash",
        input={"command": "grep -n 'fn parse' src/parser.rs", "description": "Find the parser"},
    ),
    ToolResult(
        tool_use_id="t1", tool_name="Bash", content="12:pub fn parse(input: &str) -> Ast {", is_error=False
    ),
    ToolCall(
        tool_use_id="t2",
        tool_name="Edit",
        file_path="src/parser.rs",
        input={
            "file_path": "src/parser.rs",
            "old_string": "let first = input[0];",
            "new_string": "let first = input.first()?;",
        },
    ),
    ToolResult(tool_use_id="t2", tool_name="Edit", content="String not found in file", is_error=True),
    Plan(name="fix", content="1. Guard against empty input\n2. Add a regression test"),
    Command(name="/compact"),
    Compacting(),
    Compacted(),
    ModelSwitch(model="claude-opus-4"),
    Hook(name="PostToolUse", output="formatted 1 file"),
    Complete(success=True, duration_ms=83_400, cost_usd=0.1234),
]


INFO = session(event_count=14, message_count=2, completed=True, duration_ms=83_400, cost_usd=0.1234)


# -- helpers: independent readers of the three formats ---------------------------------------------

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")


def md_outside_fences(text: str) -> list[str]:
    """The lines of a Markdown document that are outside fenced code blocks (CommonMark rules);
    fails when a fence is left open."""
    outside: list[str] = []
    opened: str | None = None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if opened is None:
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                opened = m.group(1)
            else:
                outside.append(line)
        elif m and m.group(1)[0] == opened[0] and len(m.group(1)) >= len(opened) and not m.group(2).strip():
            opened = None
    assert opened is None, "a fenced block is left open"
    return outside


def md_seqs(text: str) -> list[int]:
    """The seq of each event marker line outside the fenced blocks."""
    return [int(m.group(1)) for line in md_outside_fences(text) if (m := re.search(r" · seq (\d+)$", line))]


class TagChecker(HTMLParser):
    """Checks that start and end tags nest properly and records every tag seen."""

    VOID = frozenset({"meta", "br", "hr", "img", "link", "input", "wbr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: set[str] = set()
        self.doctype = ""
        self.ids: list[str] = []
        self.text: list[str] = []

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.ids += [v for k, v in attrs if k == "id" and v]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack, f"</{tag}> closes nothing"
        assert self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1]}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def check_html(page: str) -> TagChecker:
    checker = TagChecker()
    checker.feed(page)
    checker.close()
    assert checker.doctype.lower() == "doctype html"
    assert checker.stack == [], f"unclosed: {checker.stack}"
    assert "script" not in checker.tags
    return checker


def check_jsonl(text: str, events: Sequence[StoredEvent]) -> None:
    assert text.endswith("\n") or not events
    lines = text.split("\n")
    assert lines.pop() == ""
    assert len(lines) == len(events)
    for line, stored in zip(lines, events, strict=True):
        obj = json.loads(line)
        assert list(obj) == ["seq", "kind", "event"]
        assert obj["seq"] == stored.seq
        assert obj["kind"] == event_kind(stored.event)
        assert decode_event(json.dumps(obj["event"])) == stored.event
        expected = b'{"seq":%d,"kind":"%s","event":' % (stored.seq, obj["kind"].encode())
        assert line.encode() == expected + encode_event(stored.event) + b"}"


def paged(
    fmt: str, info: SessionInfo, events: Sequence[StoredEvent], size: int, *, empty_tail: bool = False
) -> str:
    """The export made page by page, `size` events a page (and an empty last page when asked)."""
    pages = [events[i : i + size] for i in range(0, len(events), size)] or [[]]
    if empty_tail:
        pages.append([])
    return "".join(
        render_page(fmt, info, page, first=i == 0, last=i == len(pages) - 1) for i, page in enumerate(pages)
    )
