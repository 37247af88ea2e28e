"""OpenCode's messages and parts (the shapes of OpenCode's MessageV2, see tests/opencode_fixture.py)
mapped to events, usage and reported cost."""

from __future__ import annotations

import json
from typing import Any

import pytest

from azsd.events import AssistantText, Complete, Hook, Init, ToolCall, ToolResult, UserMessage
from azsd.ingest.parsers.opencode import OpenCodeParser
from azsd.ingest.usage import usage_record
from azsd.model import Usage
from tests.opencode_fixture import conversation


def test_a_turn_maps_to_claude_shaped_events_with_usage_at_the_reported_cost() -> None:
    parser = OpenCodeParser()
    events = [
        e for info, parts in conversation(1) + conversation(2) for e in parser.feed_message(info, parts)
    ]
    assert sum(isinstance(e, Init) for e in events) == 1  # the model did not change
    assert events[2] == Hook(name="reasoning", output="Thinking about turn 1.")
    assert isinstance(events[3], AssistantText) and events[3].text == "I will fix main.py (turn 1)."
    assert [e.tool_name for e in events if isinstance(e, ToolCall)] == ["Read", "Edit", "Bash"] * 2
    assert sum(isinstance(e, ToolResult) and e.is_error for e in events) == 2
    report = parser.report
    assert report.usage == Usage(input=2400, output=680, cache_read=10000, cache_write=1600, reasoning=40)
    assert report.cost_usd is not None and report.cost_usd.usd == pytest.approx(0.0246)
    record = usage_record(report, "/d/opencode.db#ses")
    assert record is not None
    assert [(p.model, p.cost.source if p.cost else None) for p in record.parts] == [
        ("anthropic/claude-sonnet-4-5", "reported")
    ]
    assert sum(p.cost.usd for p in record.parts if p.cost) == pytest.approx(0.0246)
    assert not report.skipped


def test_step_finish_usage_errors_unknown_parts_and_bad_records() -> None:
    parser = OpenCodeParser()
    reply = {"role": "assistant", "modelID": "gpt-5", "providerID": "openai",
             "time": {"created": 10, "completed": 30},
             "error": {"name": "APIError", "data": {"message": "rate limited"}}}  # fmt: skip
    parts: list[dict[str, Any]] = [
        {
            "type": "step-finish",
            "cost": 0.5,
            "tokens": {"input": 7, "output": 3, "cache": {"read": 2, "write": 0}},
        },
        {"type": "hologram", "text": "?"},
        {"type": "text", "text": "synthetic", "synthetic": True},
    ]
    events = parser.feed_message(reply, parts)
    assert events == [
        Init(cwd="", model="openai/gpt-5"),
        AssistantText(text="Error: rate limited"),
        Complete(success=False, duration_ms=20, cost_usd=0.5),
    ]
    assert parser.report.usage == Usage(input=7, output=3, cache_read=2)
    assert parser.feed_message({"role": "system"}, []) == []
    assert parser.feed_message({"role": "user"}, [{"type": "text", "text": "x", "synthetic": True}]) == []
    line = json.dumps({"info": {"role": "user"}, "parts": [{"type": "text", "text": "as a line"}]}).encode()
    assert parser.feed(line) == [UserMessage(content="as a line")]
    assert parser.feed(b'{"info": 3}') == []
    assert parser.report.skipped == {"unknown_part": 1, "unknown_type": 2}
