"""Golden tests of the Codex line-mapping rules (spec/store-format.md §4.3-§4.4, agent-formats.md §3-§5):
rollout files: prompts, texts and their dedup, turn events; each rule pinned by hand-written lines.
"""

from __future__ import annotations

from typing import Any

import pytest

from azsd.context import AUTO_CONTINUE_PROMPT, CONTEXT_OPEN
from azsd.events import AssistantText, Compacted, Complete, Init, ToolCall, UserMessage
from azsd.ingest.parsers.base import Usage
from azsd.ingest.parsers.codex_rollout import CodexRolloutParser
from tests.codex_helpers import (
    AGENTS_MD,
    WRAPPED,
    assistant_item,
    envelope,
    event,
    feed,
    fn_call,
    fn_output,
    item,
    prompts,
    reasonings,
    result,
    rollout,
    texts,
    user_item,
)

# == rollouts ========================================================================================


def test_session_meta_gives_init_with_the_codex_placeholder_model_once() -> None:
    p = CodexRolloutParser()
    meta = envelope("session_meta", id="abc-123", cwd="/home/user/project", originator="codex_cli")
    assert feed(p, meta) == []  # held until the turn's model is known, or something else is said
    assert feed(p, envelope("session_meta", id="other", cwd="/x")) == []
    assert p.finish() == [Init(cwd="/home/user/project", model="codex")]
    assert p.report.agent_session_id == "abc-123"


def test_the_init_names_the_model_of_the_first_turn_context() -> None:
    """Issue 33: AZUREAL's Init says `codex` although the turn context names the model."""
    p = CodexRolloutParser()
    assert feed(p, envelope("session_meta", id="abc", cwd="/p")) == []
    assert feed(p, envelope("turn_context", cwd="/p", model="gpt-5.5")) == []
    assert feed(p, event(type="user_message", message="hi")) == [
        Init(cwd="/p", model="gpt-5.5"),
        UserMessage(content="hi"),
    ]


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
    assert reasonings(events) == ["**A**", "**B**", "**C**"] and texts(events) == []
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
