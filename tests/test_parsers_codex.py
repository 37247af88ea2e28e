"""Golden tests of the Codex line-mapping rules (spec/store-format.md §4.3-§4.4, agent-formats.md §3-§5).

Hand-written lines pin each rule. The corpus tests derive what each real file must give (tool call
ids and names, assistant texts, prompts, completion, usage) from the file itself, independently of
the parser.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from azsd.context import AUTO_CONTINUE_PROMPT, CONTEXT_CLOSE, CONTEXT_OPEN, sanitize
from azsd.events import (
    AssistantText,
    Compacted,
    Complete,
    Event,
    Init,
    ToolCall,
    ToolResult,
    UserMessage,
)
from azsd.ingest.parsers.base import LineParser, Usage
from azsd.ingest.parsers.codex_exec import CodexExecParser
from azsd.ingest.parsers.codex_rollout import CodexRolloutParser
from azsd.model import Cost
from azsd.pricing import default_table
from tests.conftest import corpus_files, requires_corpus

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


def prompts(events: Iterable[Event]) -> list[str]:
    return [e.content for e in events if isinstance(e, UserMessage)]


def bash_call(call_id: str, command: str) -> ToolCall:
    return ToolCall(tool_use_id=call_id, tool_name="Bash", file_path=None, input={"command": command})


def result(
    call_id: str, name: str, content: str, is_error: bool = False, path: str | None = None
) -> ToolResult:
    return ToolResult(tool_use_id=call_id, tool_name=name, file_path=path, content=content, is_error=is_error)


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
    assert events == [AssistantText(text="**Thinking**"), AssistantText(text=""), AssistantText(text="Done.")]


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
    assert feed(p, {"type": "turn.failed", "error": {"message": "boom"}}) == [
        Complete(success=False, duration_ms=0, cost_usd=0.0),
        AssistantText(text="Error: boom"),
    ]
    assert feed(p, {"type": "turn.failed"})[1] == AssistantText(text="Error: Turn failed")
    assert p.report.cost_usd is None


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
        AssistantText(text="**Plan**"),
        AssistantText(text="Created note.txt."),
        Complete(success=True, duration_ms=0, cost_usd=(10 * 1.25 + 5 * 10) / 1e6),  # gpt-5's prices
    ]
    assert p.report.agent_session_id == "019e2bf1-7d75"
    assert not p.report.skipped


# == codex exec: legacy generation (before 0.44) ======================================================

CONFIG = {
    "sandbox": "danger-full-access",
    "reasoning summaries": "auto",
    "approval": "Never",
    "provider": "openai",
    "reasoning effort": "medium",
    "workdir": "/tmp/w",
    "model": "codex-mini-latest",
}


def legacy(**msg: Any) -> dict[str, Any]:
    return {"id": "1", "msg": msg}


def test_legacy_config_line_gives_init_and_the_model() -> None:
    p = CodexExecParser()
    assert feed(p, CONFIG) == [Init(cwd="/tmp/w", model="codex-mini-latest")]
    assert p.report.model == "codex-mini-latest"
    assert feed(p, legacy(type="task_started")) == []


def test_legacy_config_line_prefers_the_selected_model_for_init() -> None:
    p = CodexExecParser(model="o3")
    assert feed(p, CONFIG) == [Init(cwd="/tmp/w", model="o3")]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("describe this repo", [UserMessage(content="describe this repo")]),
        (WRAPPED, [UserMessage(content="the real prompt")]),
        (AUTO_CONTINUE_PROMPT, []),
        (f"{CONTEXT_OPEN}\nnever closed", []),
        (AGENTS_MD, []),
        ("", []),
    ],
)
def test_legacy_prompt_line_is_a_sanitized_user_message(prompt: str, expected: list[Event]) -> None:
    assert feed(CodexExecParser(), {"prompt": prompt}) == expected


def test_legacy_exec_command_begin_and_end() -> None:
    p = CodexExecParser()
    begin = legacy(type="exec_command_begin", call_id="call_1", command=["bash", "-lc", "ls -1"], cwd="/w")
    end = legacy(
        type="exec_command_end", call_id="call_1", stdout="AGENT.md\nREADME.md\n", stderr="", exit_code=0
    )
    assert feed(p, begin, end) == [
        bash_call("call_1", "bash -lc 'ls -1'"),
        result("call_1", "Bash", "AGENT.md\nREADME.md\n"),
    ]


def test_legacy_exec_end_without_begin_and_with_stderr() -> None:
    p = CodexExecParser()
    end = legacy(
        type="exec_command_end", call_id="call_2", stdout="partial", stderr="fatal: no\n", exit_code=128
    )
    assert feed(p, end) == [bash_call("call_2", ""), result("call_2", "Bash", "partial\nfatal: no\n", True)]
    quiet = legacy(type="exec_command_end", call_id="call_3", stdout="", stderr="", exit_code=2)
    assert feed(p, quiet)[-1] == result("call_3", "Bash", "Exit code: 2", True)


def test_legacy_patch_apply_begin_and_end() -> None:
    p = CodexExecParser()
    changes = {
        "/w/README.md": {"update": {"unified_diff": "@@ -1 +1 @@\n-a\n+b", "move_path": None}},
        "/w/new.txt": {"add": {"content": "hello\n"}},
        "/w/old.txt": "delete",
    }
    begin = legacy(type="patch_apply_begin", call_id="call_p", auto_approved=True, changes=changes)
    assert feed(p, begin) == [
        ToolCall(
            tool_use_id="call_p-/w/README.md",
            tool_name="Edit",
            file_path="/w/README.md",
            input={"file_path": "/w/README.md", "kind": "update", "unified_diff": "@@ -1 +1 @@\n-a\n+b"},
        ),
        ToolCall(
            tool_use_id="call_p-/w/new.txt",
            tool_name="Edit",
            file_path="/w/new.txt",
            input={"file_path": "/w/new.txt", "kind": "add"},
        ),
        ToolCall(
            tool_use_id="call_p-/w/old.txt",
            tool_name="Edit",
            file_path="/w/old.txt",
            input={"file_path": "/w/old.txt", "kind": "delete"},
        ),
    ]
    end = legacy(type="patch_apply_end", call_id="call_p", stdout="Success.", stderr="", success=True)
    assert feed(p, end) == [
        result("call_p-/w/README.md", "Edit", "File update: /w/README.md", path="/w/README.md"),
        result("call_p-/w/new.txt", "Edit", "File add: /w/new.txt", path="/w/new.txt"),
        result("call_p-/w/old.txt", "Edit", "File delete: /w/old.txt", path="/w/old.txt"),
    ]


def test_legacy_failed_patch_gives_error_results() -> None:
    p = CodexExecParser()
    changes = {"/w/a.rs": {"update": {"unified_diff": "", "move_path": "/w/b.rs"}}}
    feed(p, legacy(type="patch_apply_begin", call_id="c", changes=changes))
    end = legacy(type="patch_apply_end", call_id="c", stdout="", stderr="hunk failed", success=False)
    assert feed(p, end) == [result("c-/w/a.rs", "Edit", "hunk failed", True, "/w/a.rs")]
    assert feed(p, legacy(type="patch_apply_end", call_id="never-begun", success=True)) == []


def test_legacy_mcp_tool_call_begin_and_end() -> None:
    p = CodexExecParser()
    invocation = {"server": "vibe_kanban", "tool": "list_projects", "arguments": {}}
    ok = {"Ok": {"content": [{"text": "Projects listed"}], "isError": False}}
    events = feed(
        p,
        legacy(type="mcp_tool_call_begin", call_id="m1", invocation=invocation),
        legacy(type="mcp_tool_call_end", call_id="m1", invocation=invocation, result=ok),
        legacy(type="mcp_tool_call_end", call_id="m2", invocation=invocation, result={"Err": "timed out"}),
    )
    name = "vibe_kanban:list_projects"
    assert events == [
        ToolCall(tool_use_id="m1", tool_name=name, file_path=None, input={}),
        result("m1", name, "Projects listed"),
        ToolCall(tool_use_id="m2", tool_name=name, file_path=None, input={}),
        result("m2", name, "timed out", True),
    ]


def test_legacy_text_reasoning_and_deltas() -> None:
    p = CodexExecParser()
    events = feed(
        p,
        legacy(type="agent_reasoning_delta", delta="thi"),
        legacy(type="agent_reasoning", text="**Inspecting**"),
        legacy(type="agent_reasoning", text=""),
        legacy(type="agent_message_delta", delta="Hel"),
        legacy(type="exec_command_output_delta", call_id="c", chunk="aGk="),
        legacy(type="agent_message", message="Hello, I'll help."),
    )
    assert events == [AssistantText(text="**Inspecting**"), AssistantText(text="Hello, I'll help.")]
    assert not p.report.skipped


def test_legacy_token_count_replaces_usage_and_prices_task_complete() -> None:
    p = CodexExecParser(model="gpt-5")
    flat = {
        "input_tokens": 1674,
        "cached_input_tokens": 1627,
        "output_tokens": 384,
        "reasoning_output_tokens": 384,
    }
    total = {"input_tokens": 2000, "cached_input_tokens": 1700, "output_tokens": 400}
    feed(p, legacy(type="token_count", **flat))
    assert p.report.usage == Usage(input=47, cache_read=1627, output=384, reasoning=384)
    feed(
        p,
        legacy(type="token_count", info={"total_token_usage": total}),
        legacy(type="token_count", info=None),
    )
    assert p.report.usage == Usage(input=300, cache_read=1700, output=400)
    cost = (300 * 1.25 + 1700 * 0.125 + 400 * 10) / 1e6  # gpt-5's prices
    [done] = feed(p, legacy(type="task_complete", last_agent_message="Done"))
    assert isinstance(done, Complete) and done.cost_usd == pytest.approx(cost)
    assert p.report.cost_usd is not None and p.report.cost_usd.source == "estimated"
    assert p.report.cost_usd.usd == pytest.approx(cost)


def test_legacy_task_complete_without_usage_costs_nothing() -> None:
    p = CodexExecParser()
    assert feed(p, legacy(type="task_complete")) == [Complete(success=True, duration_ms=0, cost_usd=0.0)]
    assert p.report.cost_usd is None


def test_legacy_error_turn_aborted_and_session_configured() -> None:
    p = CodexExecParser()
    events = feed(
        p,
        legacy(type="session_configured", session_id="3cdcc4df", model="codex-mini-latest"),
        legacy(type="error", message="Missing environment variable: `OPENAI_API_KEY`."),
        legacy(type="error"),
        legacy(type="turn_aborted", reason="interrupted"),
    )
    assert events == [
        Init(cwd="", model="codex-mini-latest"),
        AssistantText(text="Error: Missing environment variable: `OPENAI_API_KEY`."),
        AssistantText(text="Error: Unknown error"),
        Complete(success=False, duration_ms=0, cost_usd=0.0),
    ]
    assert (p.report.agent_session_id, p.report.model) == ("3cdcc4df", "codex-mini-latest")


# == rollouts ========================================================================================


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


def test_session_meta_gives_init_with_the_codex_placeholder_model_once() -> None:
    p = CodexRolloutParser()
    meta = envelope("session_meta", id="abc-123", cwd="/home/user/project", originator="codex_cli")
    assert feed(p, meta) == [Init(cwd="/home/user/project", model="codex")]
    assert feed(p, envelope("session_meta", id="other", cwd="/x")) == []
    assert p.report.agent_session_id == "abc-123"


def test_turn_context_sets_the_model_and_emits_nothing() -> None:
    p = CodexRolloutParser()
    ctx = [
        envelope("turn_context", model="gpt-5.4", cwd="/tmp"),
        envelope("turn_context", model="gpt-5.3-codex"),
    ]
    assert feed(p, *ctx) == []
    assert p.report.model == "gpt-5.3-codex"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("hello world", ["hello world"]),
        (
            [{"type": "input_text", "text": "fix the bug"}, {"type": "input_text", "text": "in main.rs"}],
            ["fix the bug\nin main.rs"],
        ),
        ([{"type": "input_image", "image_url": "data:..."}, {"type": "input_text", "text": "see"}], ["see"]),
        ("", []),
        ([], []),
        (WRAPPED, ["the real prompt"]),
        (f"{CONTEXT_OPEN}\nnever closed", []),
        (AUTO_CONTINUE_PROMPT, []),
        (AGENTS_MD, []),
        ("<environment_context>\n  <cwd>/w</cwd>\n  <shell>zsh</shell>\n</environment_context>", []),
        ("  <user_instructions>\nbe nice\n</user_instructions>\n", []),
        ("# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nx\n</INSTRUCTIONS>", []),
        ("what does <environment_context> mean?", ["what does <environment_context> mean?"]),
    ],
)
def test_user_items(content: Any, expected: list[str]) -> None:
    assert prompts(rollout(user_item(content))) == expected


def test_developer_and_system_messages_are_ignored() -> None:
    assert (
        rollout(
            item(type="message", role="developer", content="rules"),
            item(type="message", role="system", content=[{"type": "input_text", "text": "sys"}]),
        )
        == []
    )


def test_the_prompt_written_twice_is_kept_once() -> None:
    assert prompts(rollout(user_item("what?"), event(type="user_message", message="what?"))) == ["what?"]
    wrapped_then_clean = rollout(user_item(WRAPPED), event(type="user_message", message="the real prompt"))
    assert prompts(wrapped_then_clean) == ["the real prompt"]


def test_user_dedup_looks_past_tool_events_but_stops_at_assistant_text() -> None:
    call = fn_call("update_plan", "c1", {})
    assert prompts(rollout(user_item("q"), call, event(type="user_message", message="q"))) == ["q"]
    assert prompts(rollout(user_item("q"), assistant_item("a"), user_item("q"))) == ["q", "q"]
    done = event(type="task_complete", turn_id="t")
    assert prompts(rollout(user_item("q"), done, user_item("q"))) == ["q", "q"]


def test_user_dedup_compares_the_latest_prompt_only() -> None:
    assert prompts(rollout(user_item("q1"), user_item("q2"), user_item("q1"))) == ["q1", "q2", "q1"]


@pytest.mark.parametrize(("between", "kept"), [(11, 1), (12, 2)])
def test_user_dedup_window_is_twelve_events(between: int, kept: int) -> None:
    calls = [fn_call("update_plan", f"c{i}", {}) for i in range(between)]
    assert len(prompts(rollout(user_item("q"), *calls, user_item("q")))) == kept


def test_assistant_text_written_twice_is_kept_once() -> None:
    events = rollout(assistant_item("I'll fix that."), event(type="agent_message", message="I'll fix that."))
    assert texts(events) == ["I'll fix that."]
    events = rollout(
        event(type="agent_message", message="x"), fn_call("update_plan", "c", {}), assistant_item("x")
    )
    assert texts(events) == ["x"]


def test_assistant_dedup_stops_at_a_prompt_or_a_completion() -> None:
    assert texts(rollout(assistant_item("a"), user_item("q"), assistant_item("a"))) == ["a", "a"]
    done = event(type="task_complete")
    assert texts(rollout(assistant_item("a"), done, assistant_item("a"))) == ["a", "a"]


def test_assistant_dedup_matches_any_text_of_the_window() -> None:
    # AZUREAL compares the latest text only; see CodexRolloutParser.
    assert texts(rollout(assistant_item("a"), assistant_item("b"), assistant_item("a"))) == ["a", "b"]


@pytest.mark.parametrize(("between", "kept"), [(19, 1), (20, 2)])
def test_assistant_dedup_window_is_twenty_events(between: int, kept: int) -> None:
    calls = [fn_call("update_plan", f"c{i}", {}) for i in range(between)]
    assert len(texts(rollout(assistant_item("a"), *calls, assistant_item("a")))) == kept


def test_reasoning_gives_a_text_per_summary_part_without_repeating_the_events() -> None:
    parts = [{"type": "summary_text", "text": t} for t in ("**A**", "**B**", "", "**C**")]
    events = rollout(
        event(type="agent_reasoning", text="**A**"),
        event(type="agent_reasoning", text="**B**"),
        envelope("event_msg", type="token_count", info=None, rate_limits={}),
        item(type="reasoning", summary=parts, content=None, encrypted_content="gAAA"),
    )
    assert texts(events) == ["**A**", "**B**", "**C**"]
    assert rollout(item(type="reasoning", summary=[], content="enc"), item(type="reasoning")) == []


def test_empty_agent_texts_are_dropped() -> None:
    assert (
        rollout(
            event(type="agent_message", message=""),
            event(type="agent_reasoning", text=""),
            assistant_item(""),
        )
        == []
    )


# -- rollout tool calls -------------------------------------------------------------------------------


def test_shell_command_is_bash_with_workdir_and_parsed_args() -> None:
    call = only_call(rollout(fn_call("shell_command", "call_abc", {"command": "ls", "workdir": "/tmp"})))
    assert call == ToolCall(
        tool_use_id="call_abc", tool_name="Bash", file_path="/tmp", input={"command": "ls", "workdir": "/tmp"}
    )


def test_function_call_without_a_name_is_a_shell_command() -> None:
    call = only_call(rollout(item(type="function_call", call_id="c", arguments='{"command":"pwd"}')))
    assert (call.tool_name, call.input) == ("Bash", {"command": "pwd"})


def test_shell_argv_is_joined_into_one_command() -> None:
    args = {"command": ["bash", "-lc", "sed -n '1,5p' a.ts"], "workdir": ".", "timeout_ms": 120000}
    call = only_call(rollout(fn_call("shell", "call_1", args)))
    assert call == ToolCall(
        tool_use_id="call_1",
        tool_name="Bash",
        file_path=".",
        input={"command": "bash -lc 'sed -n '\"'\"'1,5p'\"'\"' a.ts'", "workdir": ".", "timeout_ms": 120000},
    )
    assert only_call(rollout(fn_call("shell", "c2", {"command": ["ls"]}))).input == {"command": "ls"}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"cmd": "pwd", "workdir": "/tmp"}, {"cmd": "pwd", "workdir": "/tmp", "command": "pwd"}),
        ({"command": "ls -a", "yield_time_ms": 10}, {"command": "ls -a", "yield_time_ms": 10}),
        ({"command": ["ls"], "cmd": "pwd"}, {"command": "", "cmd": "pwd"}),
        ({}, {"command": ""}),
        ([1, 2], {"command": ""}),
        ("not json", {"command": ""}),
    ],
)
def test_exec_command_is_bash_with_a_command_field(args: Any, expected: dict[str, Any]) -> None:
    arguments = "not json" if args == "not json" else json.dumps(args)
    call = only_call(
        rollout(item(type="function_call", name="exec_command", call_id="c", arguments=arguments))
    )
    assert (call.tool_name, call.file_path, call.input) == ("Bash", None, expected)


@pytest.mark.parametrize(
    ("args", "command"),
    [
        ({"session_id": 98333, "chars": "", "yield_time_ms": 1000}, "poll session 98333"),
        ({"session_id": "s-1"}, "poll session s-1"),
        ({}, "poll session"),
        ({"session_id": True, "chars": ""}, "poll session"),
        ({"session_id": 7, "chars": "\u0003"}, "send Ctrl-C to session 7"),
        ({"session_id": 7, "chars": "ls -la\n"}, 'send "ls -la\\n" to session 7'),
        ({"session_id": 7, "chars": "say \"hi\"\t'x'\\"}, 'send "say \\"hi\\"\\t\\\'x\\\'\\\\" to session 7'),
        ({"session_id": 7, "chars": "é\r\x1b"}, 'send "\\u{e9}\\r\\u{1b}" to session 7'),
        ({"session_id": 7, "chars": "a" * 32}, f'send "{"a" * 32}" to session 7'),
        ({"session_id": 7, "chars": "a" * 33}, f'send "{"a" * 29}..." to session 7'),
        ({"session_id": 7, "chars": "\n" * 17}, 'send "' + "\\n" * 14 + '\\..." to session 7'),
    ],
)
def test_write_stdin_is_bash_described_as_an_action(args: dict[str, Any], command: str) -> None:
    call = only_call(rollout(fn_call("write_stdin", "c", args)))
    assert (call.tool_name, call.file_path) == ("Bash", None)
    assert call.input == {**args, "command": command}


PATCH = (
    "*** Begin Patch\n*** Update File:  /src/main.rs \n@@\n-old\n+new\n"
    "*** Add File: /src/new.rs\n*** End Patch"
)


@pytest.mark.parametrize(
    ("patch", "path"),
    [
        (PATCH, "/src/main.rs"),
        ("*** Begin Patch\r\n*** Add File: /src/new.rs\r\n+x\r\n*** End Patch", "/src/new.rs"),
        ("*** Begin Patch\n*** Delete File: /src/gone.rs\n*** End Patch", None),
        ("", None),
    ],
)
def test_apply_patch_is_an_edit_of_the_first_updated_or_added_file(patch: str, path: str | None) -> None:
    custom = item(type="custom_tool_call", name="apply_patch", call_id="p", input=patch, status="completed")
    assert only_call(rollout(custom)) == ToolCall(
        tool_use_id="p", tool_name="Edit", file_path=path, input={"patch": patch}
    )


def test_apply_patch_as_a_function_call_reads_its_patch() -> None:
    as_text = only_call(rollout(fn_call("apply_patch", "p1", PATCH)))
    assert (as_text.file_path, as_text.input) == ("/src/main.rs", {"patch": PATCH})
    as_json = only_call(rollout(fn_call("apply_patch", "p2", {"input": PATCH})))
    assert (as_json.file_path, as_json.input) == ("/src/main.rs", {"patch": PATCH})


def test_other_tools_keep_their_name_and_parsed_arguments() -> None:
    plan = {"plan": [{"step": "a", "status": "pending"}]}
    assert only_call(rollout(fn_call("update_plan", "u", plan))) == ToolCall(
        tool_use_id="u", tool_name="update_plan", file_path=None, input=plan
    )
    mcp = only_call(rollout(fn_call("mcp__github__search", "m", {"q": "x"})))
    assert (mcp.tool_name, mcp.input) == ("mcp__github__search", {"q": "x"})
    broken = only_call(rollout(fn_call("update_plan", "b", "{not json")))
    assert broken.input == {}
    freeform = only_call(
        rollout(item(type="custom_tool_call", name="my_tool", call_id="f", input="free text"))
    )
    assert (freeform.tool_name, freeform.input) == ("my_tool", {})
    unnamed = only_call(rollout(item(type="custom_tool_call", call_id="n", input="{}")))
    assert unnamed.tool_name == "custom_tool"


def test_local_shell_call_is_bash() -> None:
    action = {"type": "exec", "command": ["bash", "-lc", "ls src"], "working_directory": "/w"}
    call = only_call(rollout(item(type="local_shell_call", call_id="l", status="completed", action=action)))
    assert call == ToolCall(
        tool_use_id="l", tool_name="Bash", file_path="/w", input={"command": "bash -lc 'ls src'"}
    )


# -- rollout tool outputs -----------------------------------------------------------------------------

BASH_CALL = fn_call("shell_command", "c", {"command": "ls", "workdir": "/w"})


@pytest.mark.parametrize(
    ("output", "content", "is_error"),
    [
        ('{"output":"hi\\n","metadata":{"exit_code":0,"duration_seconds":0.1}}', "hi\n", False),
        ('{"output":"boom\\n","metadata":{"exit_code":1}}', "boom\n", False),
        ('{"output":"","metadata":{"exit_code":0}}', "", False),
        ('{"output":" \\n","metadata":{"exit_code":3}}', "Exit code: 3", True),
        ('{"output":""}', '{"output":""}', False),
        ('{"output":5,"metadata":{"exit_code":0}}', '{"output":5,"metadata":{"exit_code":0}}', False),
        (
            "Chunk ID: 6bf9d8\nWall time: 0.0000 seconds\nProcess exited with code 0\n"
            "Original token count: 7\nOutput:\n/Users/me/AZUREAL\n\n",
            "/Users/me/AZUREAL",
            False,
        ),
        ("Chunk ID: a\nProcess exited with code 0\nOutput:\n\n", "", False),
        ("Chunk ID: a\nProcess exited with code 2 \nOutput:\n", "Exit code: 2", True),
        (
            "Chunk ID: a\nProcess running with session ID 77 \nOutput:\n",
            "Process running with session ID 77",
            False,
        ),
        ("Chunk ID: a\nno markers", "Chunk ID: a\nno markers", False),
        ("Exit code: 0\nhi\n", "Exit code: 0\nhi\n", False),
        ("Exit code: 1\ncommand failed", "Exit code: 1\ncommand failed", True),
        ("Error: permission denied", "Error: permission denied", True),
        ("write_stdin failed: session closed", "write_stdin failed: session closed", True),
        ("exec_command failed: spawn", "exec_command failed: spawn", True),
        ("exit code: 1", "exit code: 1", False),
        ([{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "x"}], "a", False),
        (None, "", False),
    ],
)
def test_bash_outputs_are_normalized(output: Any, content: str, is_error: bool) -> None:
    events = rollout(BASH_CALL, fn_output("c", output))
    assert events[1] == result("c", "Bash", content, is_error, "/w")


def test_chunk_reports_are_only_unwrapped_for_bash() -> None:
    chunk = "Chunk ID: a\nProcess exited with code 0\nOutput:\nx\n"
    events = rollout(fn_call("update_plan", "u", {}), fn_output("u", chunk))
    assert events[1] == result("u", "update_plan", chunk)


@pytest.mark.parametrize(
    ("output", "content", "is_error"),
    [
        (
            '{"output":"Success. Updated the following files:\\nM /tmp/demo.txt\\n",'
            '"metadata":{"exit_code":0}}',
            "Success. Updated the following files:\nM /tmp/demo.txt\n",
            False,
        ),
        ("Error: patch rejected", "Error: patch rejected", True),
        ("Exit code: 1", "Exit code: 1", False),
        ("write_stdin failed: x", "write_stdin failed: x", False),
    ],
)
def test_custom_tool_outputs_are_errors_only_on_the_error_prefix(
    output: str, content: str, is_error: bool
) -> None:
    patch = "*** Begin Patch\n*** Update File: /tmp/demo.txt\n*** End Patch"
    events = rollout(
        item(type="custom_tool_call", name="apply_patch", call_id="p", input=patch),
        item(type="custom_tool_call_output", call_id="p", output=output),
    )
    assert events[1] == result("p", "Edit", content, is_error, "/tmp/demo.txt")


def test_outputs_of_unknown_calls_are_named_by_their_kind() -> None:
    events = rollout(
        fn_output("ghost", "Exit code: 2"), item(type="custom_tool_call_output", call_id="g2", output="ok")
    )
    assert events == [result("ghost", "unknown", "Exit code: 2", True), result("g2", "custom_tool", "ok")]


def test_event_msg_function_call_output_is_a_shell_command_result() -> None:
    events = rollout(
        event(type="function_call_output", call_id="e1", output="Exit code: 127\nnot found"),
        event(type="function_call_output", call_id="", output="orphan"),
    )
    assert events == [result("e1", "shell_command", "Exit code: 127\nnot found", True)]


# -- rollout turn events ------------------------------------------------------------------------------


def test_task_complete_and_turn_aborted() -> None:
    events = rollout(
        event(type="task_complete", turn_id="t", last_agent_message=None),
        event(type="task_complete", turn_id="t", duration_ms=6074, completed_at=1780635506),
        event(type="task_complete", duration_ms=-5),
        event(type="turn_aborted", reason="interrupted"),
    )
    assert events == [
        Complete(success=True, duration_ms=0, cost_usd=0.0),
        Complete(success=True, duration_ms=6074, cost_usd=0.0),
        Complete(success=True, duration_ms=0, cost_usd=0.0),
        Complete(success=False, duration_ms=0, cost_usd=0.0),
    ]


def test_token_count_replaces_usage_from_the_total_and_tolerates_null_info() -> None:
    p = CodexRolloutParser()
    first = {
        "input_tokens": 2899,
        "cached_input_tokens": 2560,
        "output_tokens": 100,
        "reasoning_output_tokens": 64,
    }
    second = {
        "input_tokens": 5994,
        "cached_input_tokens": 5120,
        "output_tokens": 137,
        "reasoning_output_tokens": 64,
    }
    last = {"input_tokens": 3095, "cached_input_tokens": 2560, "output_tokens": 37}
    assert (
        feed(p, event(type="token_count", info={"total_token_usage": first, "last_token_usage": first})) == []
    )
    feed(p, event(type="token_count", info={"total_token_usage": second, "last_token_usage": last}))
    feed(p, event(type="token_count", info=None, rate_limits={"primary_used_percent": 0.0}))
    assert p.report.usage == Usage(input=874, cache_read=5120, output=137, reasoning=64)
    assert p.report.cost_usd is None


def test_compacted_known_ignored_and_unknown_kinds() -> None:
    p = CodexRolloutParser()
    known = [
        envelope("compacted", message="", replacement_history=[]),
        event(type="task_started", turn_id="t"),
        event(type="context_compacted"),
        item(type="ghost_snapshot", ghost_commit={"id": "abc"}),
        item(type="web_search_call", status="completed", action={"type": "search", "query": "q"}),
    ]
    assert feed(p, *known) == [Compacted()]
    feed(p, envelope("mystery", x=1), event(type="mystery"), item(type="mystery"), {"what": 1}, [1, 2])
    assert p.report.skipped == {"unknown_type": 4, "not_an_object": 1}


def test_pre_envelope_files_map_like_response_items() -> None:
    p = CodexRolloutParser()
    events = feed(
        p,
        {"id": "0198-abc", "timestamp": "2025-07-01T10:00:00.000Z", "instructions": None, "git": {}},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
        {"type": "function_call", "name": "shell", "call_id": "c1", "arguments": '{"command":["ls"]}'},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": '{"output":"a\\n","metadata":{"exit_code":0}}',
        },
        {"record_type": "state"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "One file."}]},
    )
    assert events == [
        Init(cwd="", model="codex"),
        UserMessage(content="list files"),
        ToolCall(tool_use_id="c1", tool_name="Bash", file_path=None, input={"command": "ls"}),
        result("c1", "Bash", "a\n"),
        AssistantText(text="One file."),
    ]
    assert p.report.agent_session_id == "0198-abc"
    assert not p.report.skipped


def test_spec_example_rollout() -> None:
    p = CodexRolloutParser()
    events = feed(
        p,
        envelope(
            "session_meta",
            id="sess-1",
            cwd="/home/user/project",
            originator="codex_cli",
            cli_version="0.77.0",
        ),
        user_item("fix the tests"),
        envelope("turn_context", model="gpt-5.4", cwd="/home/user/project"),
        fn_call("shell_command", "call_1", {"command": "cargo test", "workdir": "/home/user/project"}),
        fn_output("call_1", "Exit code: 0\ntest result: ok. 5 passed"),
        assistant_item("All tests pass."),
        event(type="task_complete", turn_id="turn_1", last_agent_message=None),
    )
    assert events == [
        Init(cwd="/home/user/project", model="codex"),
        UserMessage(content="fix the tests"),
        ToolCall(
            tool_use_id="call_1",
            tool_name="Bash",
            file_path="/home/user/project",
            input={"command": "cargo test", "workdir": "/home/user/project"},
        ),
        result("call_1", "Bash", "Exit code: 0\ntest result: ok. 5 passed", path="/home/user/project"),
        AssistantText(text="All tests pass."),
        Complete(success=True, duration_ms=0, cost_usd=0.0),
    ]
    assert (p.report.model, p.report.agent_session_id) == ("gpt-5.4", "sess-1")


# == the real corpus =================================================================================

EXEC_FILES = corpus_files("codex-exec-json")
ROLLOUT_FILES = corpus_files("codex-rollout")
ROLLOUT_BASH = frozenset({"shell", "shell_command", "exec_command", "write_stdin"})


def objects(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]


def parse(parser: LineParser, path: Path) -> list[Event]:
    events = parser.feed_all(path.read_bytes().splitlines())
    assert not parser.report.skipped, parser.report.summary()
    return events


def tools_of(events: list[Event]) -> tuple[dict[str, str], dict[str, str]]:
    calls = {e.tool_use_id: e.tool_name for e in events if isinstance(e, ToolCall)}
    results = {e.tool_use_id: e.tool_name for e in events if isinstance(e, ToolResult)}
    return calls, results


def normalized(raw: dict[str, Any]) -> Usage:
    cached = raw.get("cached_input_tokens") or 0
    return Usage(
        input=raw["input_tokens"] - cached,
        cache_read=cached,
        cache_write=raw.get("cache_write_input_tokens") or 0,
        output=raw["output_tokens"],
        reasoning=raw.get("reasoning_output_tokens") or 0,
    )


def exec_expected_tools(objs: list[dict[str, Any]]) -> dict[str, str]:
    """tool_use id -> tool name of every tool item the file completes (§4.3 naming)."""
    expected: dict[str, str] = {}
    for obj in objs:
        it = obj.get("item") or {}
        kind = it.get("type") or it.get("item_type")
        if obj.get("type") != "item.completed":
            continue
        if kind == "command_execution":
            expected[it["id"]] = "Bash"
        elif kind == "file_change":
            expected.update({f"{it['id']}-{change['path']}": "Edit" for change in it["changes"]})
        elif kind == "mcp_tool_call":
            expected[it["id"]] = f"{it['server']}:{it['tool']}"
    return expected


@requires_corpus
@pytest.mark.corpus
def test_the_corpus_has_files_of_both_codex_formats() -> None:
    assert EXEC_FILES and ROLLOUT_FILES


@requires_corpus
@pytest.mark.corpus
@pytest.mark.parametrize("path", EXEC_FILES, ids=lambda p: p.name)
def test_corpus_exec_file(path: Path) -> None:
    objs = objects(path)
    events = parse(parser := CodexExecParser(model="gpt-5"), path)

    calls, results = tools_of(events)
    for tool_id, name in exec_expected_tools(objs).items():
        assert (calls.get(tool_id), results.get(tool_id)) == (name, name), tool_id

    said = texts(events)
    for obj in objs:
        it = obj.get("item") or {}
        if obj.get("type") == "item.completed" and (it.get("type") or it.get("item_type")) == "agent_message":
            assert it["text"] in said

    threads = [obj["thread_id"] for obj in objs if obj.get("type") == "thread.started"]
    assert events[0] == Init(cwd="", model="gpt-5")
    assert parser.report.agent_session_id == threads[0]

    turns = [obj["usage"] for obj in objs if obj.get("type") == "turn.completed"]
    if objs[-1].get("type") == "turn.completed":
        usage = turns[-1]
        cost = PRICES.estimate("gpt-5", normalized(usage))
        assert cost is not None  # gpt-5 is priced: the cost is an estimate, and says so
        assert events[-1] == Complete(success=True, duration_ms=0, cost_usd=cost)
        assert (parser.report.usage, parser.report.cost_usd) == (normalized(usage), Cost(cost, "estimated"))
    if any(obj.get("type") == "turn.failed" for obj in objs):
        assert Complete(success=False, duration_ms=0, cost_usd=0.0) in events
    if not turns and not any(obj.get("type") == "turn.failed" for obj in objs):
        assert not any(isinstance(e, Complete) for e in events)

    assert not any(CONTEXT_OPEN in e.content for e in events if isinstance(e, UserMessage))


@requires_corpus
@pytest.mark.corpus
@pytest.mark.parametrize("path", ROLLOUT_FILES, ids=lambda p: p.name)
def test_corpus_rollout_file(path: Path) -> None:
    objs = objects(path)
    payloads = [(obj.get("type"), obj.get("payload") or {}) for obj in objs]
    events = parse(parser := CodexRolloutParser(), path)

    calls, results = tools_of(events)
    for kind, p in payloads:
        if kind == "response_item" and p.get("type") in ("function_call", "custom_tool_call"):
            name = (
                "Bash" if p["name"] in ROLLOUT_BASH else "Edit" if p["name"] == "apply_patch" else p["name"]
            )
            assert calls.get(p["call_id"]) == name, p["call_id"]
    for kind, p in payloads:
        if kind == "response_item" and p.get("type") in ("function_call_output", "custom_tool_call_output"):
            assert results.get(p["call_id"]) == calls.get(p["call_id"]), p["call_id"]

    # Each prompt, assistant text and reasoning summary is written twice, and kept once.
    said = texts(events)
    for kind, p in payloads:
        if kind == "event_msg" and p.get("type") == "agent_message":
            assert said.count(p["message"]) == 1
        if kind == "event_msg" and p.get("type") == "agent_reasoning":
            assert said.count(p["text"]) == 1
        if kind == "response_item" and p.get("type") == "reasoning":
            assert all(said.count(part["text"]) == 1 for part in p.get("summary") or [])
    typed = [
        sanitize(p["message"])
        for kind, p in payloads
        if kind == "event_msg" and p.get("type") == "user_message"
    ]
    assert prompts(events) == [t for t in typed if t]

    metas = [p for kind, p in payloads if kind == "session_meta"]
    inits = [e for e in events if isinstance(e, Init)]
    assert inits == ([Init(cwd=metas[0]["cwd"], model="codex")] if metas else [])
    assert parser.report.agent_session_id == (metas[0]["id"] if metas else None)
    models = [p["model"] for kind, p in payloads if kind == "turn_context"]
    assert parser.report.model == (models[-1] if models else None)

    totals = [
        p["info"]["total_token_usage"]
        for kind, p in payloads
        if kind == "event_msg" and p.get("type") == "token_count" and p.get("info")
    ]
    assert parser.report.usage == (normalized(totals[-1]) if totals else Usage())

    done = [e for e in events if isinstance(e, Complete)]
    ends = [
        p
        for kind, p in payloads
        if kind == "event_msg" and p.get("type") in ("task_complete", "turn_aborted")
    ]
    assert [e.success for e in done] == [p["type"] == "task_complete" for p in ends]
    for complete, end in zip(done, ends, strict=True):
        if end.get("duration_ms"):  # as Codex measured it; else from the line timestamps
            assert complete.duration_ms == end["duration_ms"]
    if done and done[-1].success:  # Codex reports no cost: the last turn is priced from the usage so far
        assert done[-1].cost_usd == (PRICES.estimate(parser.report.model, parser.report.usage) or 0.0)

    assert not any(CONTEXT_OPEN in e.content for e in events if isinstance(e, UserMessage))
