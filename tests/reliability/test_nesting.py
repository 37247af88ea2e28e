"""Deeply nested JSON never reaches a place that cannot decode it (issue 2/7): tool input nested
~960 deep made the search indexer raise RecursionError. A client's event nested deeper than
`MAX_NESTING` is refused with `bad_request`; an agent line nested that deep is skipped and counted;
events at the limit are stored, indexed and found."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
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


def test_a_format_less_ingest_passes_over_a_deep_first_line(
    daemon_and_session: tuple[DaemonProc, Path, int],
) -> None:
    """Detection reads past a first line too deep to decode; the line is skipped and counted."""
    d, root, sid = daemon_and_session
    transcript = root / "agent.jsonl"
    lines = [claude_line(5000, "deepword"), claude_line(10, "shallowword")]
    transcript.write_text("".join(line + "\n" for line in lines))
    reply = d.request(p.IngestFile(root=str(root), session=sid, path=str(transcript)))
    assert isinstance(reply, p.IngestReply), reply
    assert reply.format == "claude-stream-json" and reply.skipped == {"nested_too_deeply": 1}, reply
    found = d.request(p.Search(root=str(root), query="shallowword"))
    assert isinstance(found, p.SearchReply) and len(found.hits) == 1


def test_a_follow_goes_on_past_a_deep_first_line(daemon_and_session: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = daemon_and_session
    transcript = root / "agent.jsonl"
    transcript.write_text(claude_line(5000, "deepword") + "\n" + claude_line(10, "firstword") + "\n")
    reply = d.request(p.Follow(root=str(root), session=sid, path=str(transcript)))
    assert isinstance(reply, p.FollowReply), reply
    wait_for(lambda: len(events(d, root, sid)) == 1, "the line after the deep one stored")
    with transcript.open("a") as f:
        f.write(claude_line(10, "laterword") + "\n")
    wait_for(lambda: len(events(d, root, sid)) == 2, "a line appended later stored")
    status = d.request(p.Status())
    assert isinstance(status, p.StatusReply)
    [follow] = [f for f in status.follows if f.path == str(transcript)]
    assert follow.state == "following" and follow.skipped == 1, follow


def events(d: DaemonProc, root: Path, sid: int) -> list[p.WireEvent]:
    page = d.request(p.GetEvents(root=str(root), session=sid))
    assert isinstance(page, p.EventsPage)
    return page.events


def wait_for(done: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"not in {timeout} s: {what}"
        time.sleep(0.05)
