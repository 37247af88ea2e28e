"""How `azs` renders for humans: every event kind, key params, badges and colour, wide characters in
tables, notification lines.
"""

from __future__ import annotations

import io
import typing
from typing import Any

from azsd import events as ev
from azsd.events import encode_event, event_kind
from azsd.ipc import protocol as p
from azsd_client.render.events import event_lines, key_param, notification_line
from azsd_client.render.sessions import badge
from azsd_client.render.term import console, plain_lines, write
from azsd_client.render.text import Cell, Style, table
from tests.test_cli import _view

# -- rendering --------------------------------------------------------------------------------------

ALL_EVENTS: list[ev.Event] = [
    ev.Init(cwd="/src", model="opus"),
    ev.Hook(name="SessionStart", output="ok"),
    ev.UserMessage(content="fix the parser\nplease"),
    ev.Command(name="/compact"),
    ev.Compacting(),
    ev.Compacted(),
    ev.MayBeCompacting(),
    ev.Plan(name="plan-1", content="step 1\nstep 2"),
    ev.AssistantText(text="on it"),
    ev.ToolCall(tool_use_id="t1", tool_name="Bash", input={"command": "cargo test"}),
    ev.ToolResult(
        tool_use_id="t1", tool_name="Bash", content="\n".join(f"l{i}" for i in range(9)), is_error=False
    ),
    ev.ToolResult(tool_use_id="t2", tool_name="Read", content="denied", is_error=True),
    ev.Complete(success=True, duration_ms=1500, cost_usd=0.25),
    ev.Complete(success=False, duration_ms=90_000, cost_usd=0.0),
    ev.ModelSwitch(model="sonnet"),
    ev.Filtered(),
]
EXPECTED_FIRST_LINES = [
    "  · session started: model opus, cwd /src",
    "  · hook SessionStart",
    "",
    "  ▸ /compact",
    "  · compacting…",
    "  · compacted",
    "  · may be compacting",
    "  ▤ plan plan-1",
    "  on it",
    "  ⚙ Bash cargo test",
    "    ↳ l0",
    "    ✗ denied",
    "✓ completed in 1.5s · $0.2500",
    "✗ failed after 1m30s",
    "  · model → sonnet",
    "  · filtered",
]


def _shown(event: p.WireEvent) -> list[str]:
    """An event as `show` prints it, less its seq's margin (`    1 `)."""
    lines = plain_lines(event_lines(event, Style()))
    assert all(line[:6].strip() in ("", str(event.seq)) for line in lines), lines
    return [line[6:] for line in lines]


def test_every_event_kind_renders_for_humans() -> None:
    assert {type(e) for e in ALL_EVENTS} == set(typing.get_args(ev.Event))
    for event, first in zip(ALL_EVENTS, EXPECTED_FIRST_LINES, strict=True):
        wire = p.WireEvent(seq=1, kind=event_kind(event), data=encode_event(event).decode())
        assert _shown(wire)[0] == first, event
    prompt = p.WireEvent(seq=1, kind="UserMessage", data=encode_event(ALL_EVENTS[2]).decode())
    assert _shown(prompt) == ["", "» fix the parser", "  please"]
    assert plain_lines(event_lines(prompt, Style()))[1] == "    1 » fix the parser"  # the seq, in a margin
    result = p.WireEvent(seq=1, kind="ToolResult", data=encode_event(ALL_EVENTS[10]).decode())
    assert _shown(result)[1:] == ["      l1", "      l2", "      … (+6 more lines)"]
    one_more = ev.ToolResult(tool_use_id="t", tool_name="Bash", content="a\nb\nc\nd", is_error=False)
    wire = p.WireEvent(seq=2, kind="ToolResult", data=encode_event(one_more).decode())
    assert _shown(wire)[-1] == "      … (+1 more line)"
    broken = p.WireEvent(seq=4, kind="Mystery", data='{"Mystery":{}}')
    assert _shown(broken)[0].startswith("  ? Mystery (unreadable")


def test_key_params() -> None:
    def call(name: str, data: Any, path: str | None = None) -> str:
        return key_param(ev.ToolCall(tool_use_id="t", tool_name=name, input=data, file_path=path))

    assert call("grep", {"pattern": "x+", "path": "/a"}) == "x+"
    assert call("WebFetch", {"url": "https://e"}) == "https://e"
    assert call("Task", {"description": "look"}) == "look"
    assert call("Read", {"path": "/p"}) == "/p"
    assert call("mcp:tool", None, "/fp") == "/fp"
    assert call("Edit", {"file_path": 3}) == ""


def test_badges_and_colour() -> None:
    states = ("succeeded", "failed", "running", "ended", "new")
    assert [badge(s, Style()).text for s in states] == ["✓", "✗", "●", "○", "new"]
    assert badge("failed", Style()).paint("✗") == "✗"  # no colour: plain text, rich not needed
    rows = [[badge("failed", Style(color=True)), Cell("S1")]]
    out = io.StringIO()
    write(console(out, {}, color=True), table(rows)[0])
    assert out.getvalue() == "\x1b[31m✗\x1b[0m  S1\n"
    assert plain_lines(table(rows)) == ["✗  S1"]


def test_table_aligns_wide_characters() -> None:
    lines = plain_lines(table([[Cell("修正"), Cell("a")], [Cell("abc"), Cell("b")]]))
    assert lines == ["修正  a", "abc   b"]


def test_notification_lines() -> None:
    view = _view(id=4, name="x", worktree="main", event_count=1, state="failed")
    style = Style()
    assert notification_line(p.SessionCreated(root="/r", seq=1, session=view), style) == (
        "+ S4 created: x (branch main)"
    )
    changed = p.SessionChanged(root="/r", seq=2, session_id=4, change="renamed", session=view)
    assert notification_line(changed, style) == "~ S4 renamed to x"
    done = p.SessionChanged(root="/r", seq=3, session_id=4, change="completed", session=view)
    assert notification_line(done, style) == "✗ S4 completed (failed)"
    gone = p.SessionChanged(root="/r", seq=4, session_id=4, change="deleted")
    assert notification_line(gone, style) == "- S4 deleted"
    wire = [p.WireEvent(seq=1, kind="UserMessage", data=""), p.WireEvent(seq=2, kind="UserMessage", data="")]
    appended = p.EventsAppended(root="/r", seq=5, session_id=4, events=wire)
    assert notification_line(appended, style) == "· S4 +2 events: UserMessage"
