"""Every real file of ../shared/corpus: detected, parsed, ingested, re-ingested.

Expectations are derived from each file here, independently of the parsers: the tool calls and
results a file holds, whether it has assistant text, and how its run ended.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from azsd.context import CONTEXT_CLOSE, CONTEXT_OPEN
from azsd.events import AssistantText, Complete, ToolCall, ToolResult, UserMessage
from azsd.ingest.file import ingest_file, parse_file
from azsd.ingest.parsers import detect_format, iter_lines
from azsd.ingest.usage import turns_of
from azsd.store import Store
from tests.conftest import corpus_files, requires_corpus

FILES = corpus_files()
pytestmark = [requires_corpus, pytest.mark.corpus]


def objects(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_bytes().splitlines():
        if line.strip():
            obj = json.loads(line)
            if isinstance(obj, dict):
                out.append(obj)
    return out


def claude_tools(objs: list[dict[str, Any]]) -> tuple[dict[str, str], set[str]]:
    """tool_use id -> name, and the ids that got a tool_result, from the raw lines."""
    calls: dict[str, str] = {}
    results: set[str] = set()
    for obj in objs:
        content = (obj.get("message") or {}).get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if obj.get("type") == "assistant" and block.get("type") == "tool_use":
                calls[block["id"]] = block["name"]
            if obj.get("type") == "user" and block.get("type") == "tool_result":
                results.add(block["tool_use_id"])
    return calls, results


def codex_exec_tools(objs: list[dict[str, Any]]) -> tuple[dict[str, str], set[str]]:
    calls: dict[str, str] = {}
    results: set[str] = set()
    for obj in objs:
        item = obj.get("item")
        if not isinstance(item, dict) or obj.get("type") != "item.completed":
            continue
        if item.get("type") == "command_execution":
            calls[item["id"]] = "Bash"
            results.add(item["id"])
        elif item.get("type") == "file_change":
            for change in item["changes"]:
                calls[f"{item['id']}-{change['path']}"] = "Edit"
                results.add(f"{item['id']}-{change['path']}")
        elif item.get("type") == "mcp_tool_call":
            calls[item["id"]] = f"{item['server']}:{item['tool']}"
            results.add(item["id"])
    return calls, results


def rollout_tools(objs: list[dict[str, Any]]) -> tuple[dict[str, str], set[str]]:
    calls: dict[str, str] = {}
    results: set[str] = set()
    for obj in objs:
        payload = obj.get("payload")
        if obj.get("type") != "response_item" or not isinstance(payload, dict):
            continue
        if payload.get("type") in ("function_call", "custom_tool_call"):
            calls[payload["call_id"]] = payload["name"]
        elif payload.get("type") in ("function_call_output", "custom_tool_call_output"):
            results.add(payload["call_id"])
    return calls, results


def expected_tools(fmt: str, objs: list[dict[str, Any]]) -> tuple[dict[str, str], set[str]]:
    if fmt.startswith("claude"):
        return claude_tools(objs)
    if fmt == "codex-exec-json":
        return codex_exec_tools(objs)
    return rollout_tools(objs)


def has_assistant_text(fmt: str, objs: list[dict[str, Any]]) -> bool:
    for obj in objs:
        if fmt.startswith("claude") and obj.get("type") == "assistant":
            blocks = obj["message"].get("content") or []
            if any(b.get("type") == "text" for b in blocks):
                return True
        item = obj.get("item") or {}
        if item.get("type") == "agent_message":
            return True
        payload = obj.get("payload") or {}
        if payload.get("type") == "agent_message" or payload.get("role") == "assistant":
            return True
    return False


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_corpus_file(path: Path, tmp_path: Path) -> None:
    fmt = path.parent.name
    with open(path, "rb") as stream:
        assert detect_format(iter_lines(stream)) == fmt

    events, report = parse_file(path)
    objs = objects(path)
    assert report.format == fmt
    assert report.lines == len(path.read_bytes().splitlines()) - path.read_bytes().count(b"\n\n")
    assert report.skipped_total == 0, report.skipped

    calls = {e.tool_use_id: e.tool_name for e in events if isinstance(e, ToolCall)}
    results = {e.tool_use_id: e.tool_name for e in events if isinstance(e, ToolResult)}
    want_calls, want_results = expected_tools(fmt, objs)
    assert set(calls) == set(want_calls)
    if fmt != "codex-rollout":  # rollouts rename tools (shell_command -> Bash), checked below
        assert calls == want_calls
    for tool_id in want_results:
        assert tool_id in results, f"no ToolResult for {tool_id}"
        if tool_id in calls:
            assert results[tool_id] == calls[tool_id]

    if has_assistant_text(fmt, objs):
        assert any(isinstance(e, AssistantText) for e in events)

    last = objs[-1] if objs else {}
    completes = [e for e in events if isinstance(e, Complete)]
    if last.get("type") == "result":
        assert completes, "a run ending in `result` yields a Complete"
        done = completes[-1]
        assert done.duration_ms == last["duration_ms"]
        assert done.cost_usd == pytest.approx(last.get("total_cost_usd", last.get("cost_usd", 0.0)))
        assert done.success == (not last["is_error"] and last.get("subtype") == "success")
    if last.get("type") in ("turn.completed", "turn.failed"):
        assert completes and completes[-1].success == (last["type"] == "turn.completed")

    # Ingest into a real store, then again: the second adds nothing.
    root = tmp_path / "wt"
    root.mkdir()
    with Store.open(root) as store:
        sid = store.create_session(worktree="main").id
        first = ingest_file(store, sid, path)
        assert first.appended == first.parsed
        stored = store.load_events(sid)
        assert stored.skipped == 0
        assert len(stored.events) == first.appended
        for e in stored.plain():
            if isinstance(e, UserMessage):
                assert CONTEXT_OPEN not in e.content and CONTEXT_CLOSE not in e.content
        second = ingest_file(store, sid, path)
        assert second.appended == 0
        assert store.load_events(sid).plain() == stored.plain()
        usage = store.session_usage(sid)
        assert usage.usage == report.usage
        # ingested twice, still one run: its turns (prompts) once
        assert usage.turns == (0 if report.usage.is_zero and report.cost_usd is None else turns_of(report))
