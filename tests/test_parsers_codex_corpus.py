"""The Codex parser on the real corpus: what each file must give (tool call ids and names, assistant
texts, prompts, completion, usage) is derived from the file itself, independently of the parser.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from azsd.context import CONTEXT_OPEN, sanitize
from azsd.events import Complete, Event, Init, ToolCall, ToolResult, UserMessage
from azsd.ingest.parsers.base import LineParser, Usage
from azsd.ingest.parsers.codex_exec import CodexExecParser
from azsd.ingest.parsers.codex_rollout import CodexRolloutParser
from azsd.model import Cost
from tests.codex_helpers import PRICES, prompts, reasonings, texts
from tests.conftest import corpus_files, requires_corpus

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

    # Each prompt, assistant text and reasoning summary is written twice, and kept once; reasoning
    # as what it is, never as the agent's answer (issue 33).
    said, thought = texts(events), reasonings(events)
    for kind, p in payloads:
        if kind == "event_msg" and p.get("type") == "agent_message":
            assert said.count(p["message"]) == 1
        if kind == "event_msg" and p.get("type") == "agent_reasoning" and p["text"].strip():
            assert (thought.count(p["text"]), said.count(p["text"])) == (1, 0)
        if kind == "response_item" and p.get("type") == "reasoning":
            parts = [part["text"] for part in p.get("summary") or [] if part["text"].strip()]
            assert all((thought.count(t), said.count(t)) == (1, 0) for t in parts)
    typed = [
        sanitize(p["message"])
        for kind, p in payloads
        if kind == "event_msg" and p.get("type") == "user_message"
    ]
    assert prompts(events) == [t for t in typed if t]

    metas = [p for kind, p in payloads if kind == "session_meta"]
    inits = [e for e in events if isinstance(e, Init)]
    # the Init names the first turn context's model when it comes before anything is said (0.16x)
    first_model = next((p["model"] for kind, p in payloads if kind == "turn_context"), "codex")
    assert len(inits) == (1 if metas else 0)
    assert all(i.cwd == metas[0]["cwd"] and i.model in (first_model, "codex") for i in inits)
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
