"""Golden tests of the Codex line-mapping rules (spec/store-format.md §4.3-§4.4, agent-formats.md §3-§5):
`codex exec`'s legacy generation (before 0.44), each rule pinned by hand-written lines.
"""

from __future__ import annotations

from typing import Any

import pytest

from azsd.context import AUTO_CONTINUE_PROMPT, CONTEXT_OPEN
from azsd.events import AssistantText, Complete, Event, Hook, Init, ToolCall, UserMessage
from azsd.ingest.parsers.base import Usage
from azsd.ingest.parsers.codex_exec import CodexExecParser
from tests.codex_helpers import AGENTS_MD, WRAPPED, bash_call, feed, result

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
    assert events == [
        Hook(name="reasoning", output="**Inspecting**"),
        AssistantText(text="Hello, I'll help."),
    ]
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
