"""Golden tests of the Codex line-mapping rules (spec/store-format.md §4.3-§4.4, agent-formats.md §3-§5):
`codex exec --json`, current (0.44+) and experimental (0.41-0.43) generations, each rule pinned by
hand-written lines.
"""

from __future__ import annotations

from typing import Any

import pytest

from azsd.events import AssistantText, Complete, Hook, Init, ToolCall
from azsd.ingest.parsers.base import Usage
from azsd.ingest.parsers.codex_exec import CodexExecParser
from azsd.model import Cost
from tests.codex_helpers import bash_call, feed, result

# == codex exec --json: current generation (0.44+) ===================================================


def completed(**item: Any) -> dict[str, Any]:
    return {"type": "item.completed", "item": item}


def started(**item: Any) -> dict[str, Any]:
    return {"type": "item.started", "item": item}


def command(item_id: str, cmd: str, output: str = "", exit_code: Any = 0, **extra: Any) -> dict[str, Any]:
    fields = {"id": item_id, "type": "command_execution", "command": cmd, "aggregated_output": output}
    return {**fields, "exit_code": exit_code, "status": "completed", **extra}


def test_thread_started_gives_one_init_with_the_selected_model() -> None:
    p = CodexExecParser(model="gpt-5.4")
    assert feed(p, {"type": "thread.started", "thread_id": "abc-123"}) == [Init(cwd="", model="gpt-5.4")]
    assert feed(p, {"type": "thread.started", "thread_id": "abc-123"}) == []
    assert (p.report.agent_session_id, p.report.model) == ("abc-123", "gpt-5.4")


def test_without_a_model_init_has_an_empty_one() -> None:
    p = CodexExecParser()
    assert feed(p, {"type": "thread.started", "thread_id": "t"}) == [Init(cwd="", model="")]
    assert p.report.model is None


def test_turn_started_and_item_updated_are_known_and_give_nothing() -> None:
    p = CodexExecParser()
    todo = {"id": "item_9", "type": "todo_list", "items": []}
    assert feed(p, {"type": "turn.started"}, {"type": "item.updated", "item": todo}) == []
    assert not p.report.skipped and p.report.lines == 2


def test_started_command_then_completed_gives_call_then_result() -> None:
    p = CodexExecParser()
    start = {"id": "item_1", "type": "command_execution", "command": "ls", "aggregated_output": ""}
    assert feed(p, started(**start, exit_code=None, status="in_progress")) == [bash_call("item_1", "ls")]
    assert feed(p, completed(**command("item_1", "ls", "file1\nfile2\n"))) == [
        result("item_1", "Bash", "file1\nfile2\n")
    ]


def test_a_command_completed_without_a_start_gets_its_call_too() -> None:
    p = CodexExecParser()
    assert feed(p, completed(**command("item_1", "ls", "a\n"))) == [
        bash_call("item_1", "ls"),
        result("item_1", "Bash", "a\n"),
    ]


@pytest.mark.parametrize(
    ("exit_code", "content", "is_error"),
    [
        (42, "Exit code: 42", True),
        (0, "Exit code: 0", False),
        (None, "Exit code: 0", False),
        (-1, "Exit code: -1", True),
    ],
)
def test_empty_command_output_becomes_the_exit_code(exit_code: Any, content: str, is_error: bool) -> None:
    p = CodexExecParser()
    events = feed(p, completed(**command("item_2", "exit 42", "", exit_code)))
    assert events[-1] == result("item_2", "Bash", content, is_error)


def test_non_zero_exit_with_output_keeps_the_output_and_is_an_error() -> None:
    p = CodexExecParser()
    events = feed(p, completed(**command("item_2", "false", "boom\n", 1, status="failed")))
    assert events[-1] == result("item_2", "Bash", "boom\n", True)


def test_agent_message_even_empty_and_reasoning_only_when_non_empty() -> None:
    p = CodexExecParser()
    events = feed(
        p,
        completed(id="item_0", type="reasoning", text=""),
        completed(id="item_1", type="reasoning", text="**Thinking**"),
        completed(id="item_2", type="agent_message", text=""),
        completed(id="item_3", type="agent_message", text="Done."),
    )
    # reasoning is kept as what it is (issue 33: AZUREAL's assistant text was fed back as the answer)
    assert events == [
        Hook(name="reasoning", output="**Thinking**"),
        AssistantText(text=""),
        AssistantText(text="Done."),
    ]


def test_file_change_gives_an_edit_call_and_result_per_change() -> None:
    p = CodexExecParser()
    changes = [
        {"path": "/w/a.txt", "kind": "add"},
        {"path": "/w/b.rs", "kind": "update", "move_path": "/w/c.rs", "unified_diff": "@@ -1 +1 @@\n-a\n+b"},
        {"path": "/w/d.txt"},
    ]
    events = feed(p, completed(id="item_3", type="file_change", changes=changes, status="completed"))
    assert events == [
        ToolCall(
            tool_use_id="item_3-/w/a.txt",
            tool_name="Edit",
            file_path="/w/a.txt",
            input={"file_path": "/w/a.txt", "kind": "add"},
        ),
        result("item_3-/w/a.txt", "Edit", "File add: /w/a.txt", path="/w/a.txt"),
        ToolCall(
            tool_use_id="item_3-/w/b.rs",
            tool_name="Edit",
            file_path="/w/b.rs",
            input={
                "file_path": "/w/b.rs",
                "kind": "update",
                "move_path": "/w/c.rs",
                "unified_diff": "@@ -1 +1 @@\n-a\n+b",
            },
        ),
        result("item_3-/w/b.rs", "Edit", "File update: /w/b.rs -> /w/c.rs", path="/w/b.rs"),
        ToolCall(
            tool_use_id="item_3-/w/d.txt",
            tool_name="Edit",
            file_path="/w/d.txt",
            input={"file_path": "/w/d.txt", "kind": "update"},
        ),
        result("item_3-/w/d.txt", "Edit", "File update: /w/d.txt", path="/w/d.txt"),
    ]


def test_a_failed_file_change_gives_error_results() -> None:
    p = CodexExecParser()
    change = {"path": "/w/a.txt", "kind": "delete"}
    events = feed(p, completed(id="item_4", type="file_change", changes=[change], status="failed"))
    assert events[-1] == result("item_4-/w/a.txt", "Edit", "File delete: /w/a.txt", True, "/w/a.txt")


@pytest.mark.parametrize(
    ("outcome", "content", "is_error"),
    [
        (
            {"result": {"content": [{"type": "text", "text": "r1"}, {"type": "text", "text": "r2"}]}},
            "r1\nr2",
            False,
        ),
        ({"result": {"content": [], "structured_content": {"n": 1}}}, '{"n":1}', False),
        ({"result": "plain"}, "plain", False),
        ({"result": None, "error": {"message": "server down"}}, "server down", True),
        ({"error": "bad args"}, "bad args", True),
        ({}, "", False),
    ],
)
def test_mcp_tool_call_is_named_server_colon_tool(
    outcome: dict[str, Any], content: str, is_error: bool
) -> None:
    p = CodexExecParser()
    item = {"id": "item_5", "type": "mcp_tool_call", "server": "srv", "tool": "search", "arguments": {"q": 1}}
    assert feed(p, completed(**item, **outcome, status="completed")) == [
        ToolCall(tool_use_id="item_5", tool_name="srv:search", file_path=None, input={"q": 1}),
        result("item_5", "srv:search", content, is_error),
    ]


def test_mcp_tool_call_defaults() -> None:
    p = CodexExecParser()
    events = feed(p, completed(id="item_6", type="mcp_tool_call"))
    assert events[0] == ToolCall(tool_use_id="item_6", tool_name="mcp:unknown", file_path=None, input=None)


def test_web_search_todo_list_and_collab_items() -> None:
    p = CodexExecParser()
    todos = [{"text": "triage", "completed": True}, {"text": "fix", "completed": False}]
    collab = {"tool": "spawn_agent", "prompt": "go", "receiver_thread_ids": ["t2"], "status": "failed"}
    events = feed(
        p,
        started(id="item_7", type="web_search", query="rust lines"),
        completed(id="item_7", type="web_search", query="rust lines"),
        completed(id="item_8", type="todo_list", items=todos),
        completed(id="item_9", type="collab_tool_call", **collab),
    )
    plan = [{"step": "triage", "status": "completed"}, {"step": "fix", "status": "pending"}]
    assert events == [
        ToolCall(tool_use_id="item_7", tool_name="WebSearch", file_path=None, input={"query": "rust lines"}),
        result("item_7", "WebSearch", ""),
        ToolCall(tool_use_id="item_8", tool_name="update_plan", file_path=None, input={"plan": plan}),
        result("item_8", "update_plan", "Plan updated"),
        ToolCall(
            tool_use_id="item_9",
            tool_name="spawn_agent",
            file_path=None,
            input={"prompt": "go", "receiver_thread_ids": ["t2"]},
        ),
        result("item_9", "spawn_agent", "failed", True),
    ]


def test_error_items_are_warnings_and_are_dropped() -> None:
    p = CodexExecParser()
    assert feed(p, completed(id="item_0", type="error", message="Model metadata not found")) == []
    assert not p.report.skipped


def test_turn_completed_gives_complete_with_an_estimated_cost_and_usage() -> None:
    p = CodexExecParser(model="gpt-5-codex")
    usage = {"input_tokens": 32607, "cached_input_tokens": 32384, "output_tokens": 87}
    cost = (223 * 1.25 + 32384 * 0.125 + 87 * 10) / 1e6  # gpt-5-codex's prices (azsd/data/pricing.json)
    assert feed(p, {"type": "turn.completed", "usage": usage}) == [
        Complete(success=True, duration_ms=0, cost_usd=cost)
    ]
    assert p.report.usage == Usage(input=223, cache_read=32384, output=87)
    assert p.report.cost_usd == Cost(pytest.approx(cost), "estimated")  # type: ignore[arg-type]


def test_a_turn_of_an_unknown_model_gets_no_estimate() -> None:
    p = CodexExecParser()  # exec JSON names no model, and none was given
    usage = {"input_tokens": 100, "output_tokens": 10}
    assert feed(p, {"type": "turn.completed", "usage": usage}) == [
        Complete(success=True, duration_ms=0, cost_usd=0.0)
    ]
    assert p.report.cost_usd is None


def test_turn_usage_is_a_running_total_so_it_replaces() -> None:
    p = CodexExecParser(model="gpt-5")
    first = {"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 10}
    second = {
        "input_tokens": 250,
        "cached_input_tokens": 90,
        "output_tokens": 30,
        "reasoning_output_tokens": 12,
        "cache_write_input_tokens": 5,
    }
    feed(p, {"type": "turn.completed", "usage": first}, {"type": "turn.completed", "usage": second})
    assert p.report.usage == Usage(input=160, cache_read=90, cache_write=5, output=30, reasoning=12)
    assert p.report.cost_usd is not None
    assert p.report.cost_usd.usd == pytest.approx((160 * 1.25 + 90 * 0.125 + 30 * 10) / 1e6)


def test_turn_failed_gives_a_failed_complete_and_the_error_text() -> None:
    p = CodexExecParser()
    # the error first, the end last: text after a Complete takes the session's failed badge away
    assert feed(p, {"type": "turn.failed", "error": {"message": "boom"}}) == [
        AssistantText(text="Error: boom"),
        Complete(success=False, duration_ms=0, cost_usd=0.0),
    ]
    assert feed(p, {"type": "turn.failed"})[0] == AssistantText(text="Error: Turn failed")
    # the fatal `error` line before it said it already: said once
    said = feed(
        p, {"type": "error", "message": "gone"}, {"type": "turn.failed", "error": {"message": "gone"}}
    )
    assert said == [AssistantText(text="Error: gone"), Complete(success=False, duration_ms=0, cost_usd=0.0)]
    assert p.report.cost_usd is None


def test_retry_notices_are_hooks_not_answers() -> None:
    notice = "Reconnecting... 1/5 (stream disconnected before completion: stream closed)"
    events = feed(CodexExecParser(), {"type": "error", "message": notice})
    assert events == [Hook(name="retry", output=notice)]


def test_top_level_error_is_assistant_text() -> None:
    p = CodexExecParser()
    assert feed(p, {"type": "error", "message": "rate limited"}) == [
        AssistantText(text="Error: rate limited")
    ]
    assert feed(p, {"type": "error"}) == [AssistantText(text="Error: Unknown error")]


def test_unknown_lines_are_skipped_as_unknown() -> None:
    p = CodexExecParser()
    feed(
        p,
        {"type": "thread.renamed"},
        completed(id="x", type="hologram"),
        {"foo": 1},
        {"msg": {"type": "nope"}},
    )
    assert p.report.skipped == {"unknown_type": 4}


# == codex exec: experimental generation (--experimental-json, 0.41-0.43) ============================


def test_experimental_generation_maps_like_the_current_one() -> None:
    p = CodexExecParser(model="gpt-5")
    cmd = {"id": "item_0", "item_type": "command_execution", "command": "bash -lc 'cat note.txt'"}
    events = feed(
        p,
        {"type": "session.created", "session_id": "019e2bf1-7d75"},
        started(**cmd, aggregated_output="", status="in_progress"),
        completed(**cmd, aggregated_output="PING\n", exit_code=0, status="completed"),
        completed(id="item_1", item_type="reasoning", text="**Plan**"),
        completed(id="item_2", item_type="assistant_message", text="Created note.txt."),
        {"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 5}},
    )
    assert events == [
        Init(cwd="", model="gpt-5"),
        bash_call("item_0", "bash -lc 'cat note.txt'"),
        result("item_0", "Bash", "PING\n"),
        Hook(name="reasoning", output="**Plan**"),
        AssistantText(text="Created note.txt."),
        Complete(success=True, duration_ms=0, cost_usd=(10 * 1.25 + 5 * 10) / 1e6),  # gpt-5's prices
    ]
    assert p.report.agent_session_id == "019e2bf1-7d75"
    assert not p.report.skipped
