"""Deeply nested JSON never reaches a place that cannot decode it (issue 2/7): tool input nested
~960 deep made the search indexer raise RecursionError. A client's event nested deeper than
`MAX_NESTING` is refused with `bad_request`; an agent line nested that deep is skipped and counted;
events at the limit are stored, indexed and found."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.events import MAX_NESTING, ToolCall
from azsd.ipc import protocol as p
from azsd.search import search_text
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir


def nested(depth: int, leaf: str) -> object:
    value: object = leaf
    for _ in range(depth):
        value = [value]
    return value


def nested_json(depth: int, leaf: str) -> str:
    """`leaf` inside `depth` lists, as JSON text (encoders recurse, so it is written out)."""
    return "[" * depth + json.dumps(leaf) + "]" * depth


def tool_call(depth: int, leaf: str) -> str:
    return (
        '{"ToolCall":{"tool_use_id":"t","tool_name":"Edit","input":{"a":' + nested_json(depth, leaf) + "}}}"
    )


def claude_line(depth: int, leaf: str) -> str:
    content = '[{"type":"tool_use","id":"t","name":"Edit","input":{"a":' + nested_json(depth, leaf) + "}}]"
    return '{"type":"assistant","session_id":"s","message":{"id":"m","content":' + content + "}}"


@pytest.fixture
def daemon_and_session() -> Iterator[tuple[DaemonProc, Path, int]]:
    with daemon_in_tmpdir() as d:
        root = d.runtime_dir.parent / "w"
        root.mkdir()
        reply = d.request(p.CreateSession(root=str(root)))
        assert isinstance(reply, p.SessionReply)
        yield d, root, reply.session.id


def test_the_indexer_reads_any_depth_without_recursing() -> None:
    event = ToolCall(tool_use_id="t", tool_name="Bash", input={"a": nested(5000, "deepword"), "b": "after"})
    assert search_text(event) == "Bash deepword after"


@pytest.mark.parametrize("depth", [960, 5000])
def test_an_appended_event_nested_too_deep_is_refused(
    daemon_and_session: tuple[DaemonProc, Path, int], depth: int
) -> None:
    d, root, sid = daemon_and_session
    reply = d.request(p.AppendEvents(root=str(root), session=sid, events=[tool_call(depth, "deepword")]))
    assert isinstance(reply, p.ErrorReply) and reply.code == "bad_request", reply
    assert "nested" in reply.message
    page = d.request(p.GetEvents(root=str(root), session=sid))
    assert isinstance(page, p.EventsPage) and page.events == []


def test_an_event_at_the_limit_is_stored_indexed_and_found(
    daemon_and_session: tuple[DaemonProc, Path, int],
) -> None:
    d, root, sid = daemon_and_session
    reply = d.request(
        p.AppendEvents(root=str(root), session=sid, events=[tool_call(MAX_NESTING - 3, "limitword")])
    )
    assert isinstance(reply, p.AppendReply), reply
    found = d.request(p.Search(root=str(root), query="limitword"))
    assert isinstance(found, p.SearchReply) and [h.seq for h in found.hits] == [1]


def test_an_agent_line_nested_too_deep_is_skipped_and_the_rest_stored(
    daemon_and_session: tuple[DaemonProc, Path, int],
) -> None:
    d, root, sid = daemon_and_session
    transcript = root / "agent.jsonl"
    lines = [claude_line(960, "deepword"), claude_line(10, "shallowword")]
    transcript.write_text("".join(line + "\n" for line in lines))
    reply = d.request(
        p.IngestFile(root=str(root), session=sid, path=str(transcript), format="claude-stream-json")
    )
    assert isinstance(reply, p.IngestReply), reply
    assert reply.skipped.get("nested_too_deeply") == 1, reply
    assert isinstance(d.request(p.Search(root=str(root), query="deepword")), p.SearchReply)
    found = d.request(p.Search(root=str(root), query="shallowword"))
    assert isinstance(found, p.SearchReply) and len(found.hits) == 1
