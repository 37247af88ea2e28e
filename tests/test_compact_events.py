"""`compact_event` of the other variants (spec §3), `char_len` (§2.4), compacting twice (§3) and
`prepare_for_store` (§2.5 step 2).

Every expected value here is worked out by hand from the spec's rules, not copied from a run.
"""

from __future__ import annotations

from typing import Any

import pytest

from azsd import events as ev
from azsd.compact import char_len, compact_event, prepare_for_store
from azsd.events import encode_event
from tests.compact_helpers import (
    AUTO_CONTINUE,
    CLOSE,
    HIDDEN_CODEX,
    OPEN,
    call_input,
    dumps,
    result,
    same_json,
)

# -- UserMessage --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("plain prompt", "plain prompt"),
        ("", ""),
        ("   ", "   "),
        (f"{OPEN}\n## User\nhi\n{CLOSE}\n\nnext step", "next step"),
        (f"junk{CLOSE}\n\n\nhello", "hello"),  # a close tag without an open tag still strips
        (f"{OPEN}\nx\n{CLOSE}\n \nhello", " \nhello"),  # only leading \n go
        (f"{OPEN}\nx\n{CLOSE}\r\nhello", "\r\nhello"),
        (f"{OPEN}\na\n{CLOSE}\n\nb{CLOSE}c", f"b{CLOSE}c"),  # cut at the first close
        (f"{OPEN}\nunterminated", ""),  # malformed wrapper
        (f"{OPEN}\nctx\n{CLOSE}\n\n", ""),
        (f"{OPEN}\nctx\n{CLOSE}", ""),
        (HIDDEN_CODEX, ""),
        (" \n\t" + HIDDEN_CODEX, ""),
        ("# AGENTS.md instructions for /repo\nno marker", "# AGENTS.md instructions for /repo\nno marker"),
        (
            "see <INSTRUCTIONS> and # AGENTS.md instructions for x",
            "see <INSTRUCTIONS> and # AGENTS.md instructions for x",
        ),
        (AUTO_CONTINUE, ""),
        (f"{OPEN}\nctx\n{CLOSE}\n\n{AUTO_CONTINUE}", ""),
        (f"{OPEN}\nctx\n{CLOSE}\n\n  {AUTO_CONTINUE}\n", ""),
        (
            "hi <system-reminder>keep me</system-reminder> there",
            "hi <system-reminder>keep me</system-reminder> there",
        ),
        ("é中😀\n", "é中😀\n"),  # no trimming of user text
    ],
)
def test_user_message_sanitized(content: str, expected: str) -> None:
    out = compact_event(ev.UserMessage(content=content))
    assert out == ev.UserMessage(content=expected)


# -- other variants pass through ----------------------------------------------------------------

PASS_THROUGH: list[ev.Event] = [
    ev.Init(cwd="/w", model="opus"),
    ev.Hook(name="PreToolUse", output="a\nb\nc\nd\ne\n<system-reminder>x"),
    ev.Command(name="/compact"),
    ev.Compacting(),
    ev.Compacted(),
    ev.MayBeCompacting(),
    ev.Plan(name="p", content="1\n2\n3\n4\n5\n6\n7"),
    ev.AssistantText(text=f"{OPEN}\nnot stripped\n{CLOSE}\n<system-reminder>x\n\n"),
    ev.Complete(success=True, duration_ms=10, cost_usd=0.5),
    ev.ModelSwitch(model="m"),
    ev.Filtered(),
]


@pytest.mark.parametrize("event", PASS_THROUGH, ids=[type(e).__name__ for e in PASS_THROUGH])
def test_other_variants_unchanged(event: ev.Event) -> None:
    assert compact_event(event) == event
    assert encode_event(compact_event(event)) == encode_event(event)


# -- char_len (§2.4) ----------------------------------------------------------------------------

READ_MARKER_3 = "a\n  (3 lines)\nc"


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (ev.UserMessage(content="héllo"), 6),
        (ev.UserMessage(content=""), 0),
        (ev.UserMessage(content=f"{OPEN}\nlong context here\n{CLOSE}\n\nhé"), 3),  # counted after sanitizing
        (ev.UserMessage(content=HIDDEN_CODEX), 0),
        (ev.AssistantText(text="中文"), 6),
        (ev.AssistantText(text="😀"), 4),
        (ev.ToolResult(tool_use_id="t", tool_name="Bash", content="é\nb", is_error=False), 4),
        (ev.ToolResult(tool_use_id="t", tool_name="Read", content="a\nb\nc", is_error=False), 15),
        (ev.ToolResult(tool_use_id="t", tool_name="Glob", content="x\ny\nz\n" * 4, is_error=False), 8),
        (
            ev.ToolResult(
                tool_use_id="a-long-id", tool_name="LongToolName", file_path="/x/y", content="", is_error=True
            ),
            0,
        ),
        (ev.Plan(name="a long plan name", content="ü"), 2),
        (ev.Hook(name="PreToolUse", output="ok"), 2),
        (ev.Hook(name="H", output="€"), 3),
        (ev.Command(name="/compact"), 8),
        (ev.Init(cwd="/some/where", model="opus"), 0),
        (ev.Complete(success=True, duration_ms=123, cost_usd=4.5), 0),
        (ev.Compacting(), 0),
        (ev.Compacted(), 0),
        (ev.ModelSwitch(model="gpt-5"), 0),
        # ToolCall: len(tool_name) + compact JSON of the compacted input
        (ev.ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "ls", "description": "x"}), 4 + 16),
        (ev.ToolCall(tool_use_id="t", tool_name="Edit", input=None), 4 + 4),
        (ev.ToolCall(tool_use_id="t", tool_name="Read", input=None), 4 + 2),  # null -> {} -> 2
        (ev.ToolCall(tool_use_id="t", tool_name="TodoWrite", input={"todos": [1, 2, 3]}), 9 + 2),
        (ev.ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "é"}), 4 + 16),
        (
            ev.ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "a\tb\x00"}),
            4 + len('{"command":"a\\tb\\u0000"}'),
        ),
        (
            ev.ToolCall(tool_use_id="t", tool_name="tööl", file_path="/ignored/path", input={"query": "q"}),
            6 + 13,
        ),
        (ev.ToolCall(tool_use_id="t", tool_name="Glob", input={"pattern": "**/*.rs", "path": "/x"}), 4 + 21),
        (ev.ToolCall(tool_use_id="t", tool_name="Edit", input="raw"), 4 + 5),
    ],
)
def test_char_len_of_compacted_event(event: ev.Event, expected: int) -> None:
    assert char_len(compact_event(event)) == expected


def test_char_len_read_marker_hand_count() -> None:
    assert len(READ_MARKER_3.encode()) == 15
    assert result("Read", "a\nb\nc") == READ_MARKER_3


@pytest.mark.parametrize(
    "tool_input",
    [
        {"file_path": "/é.py", "content": "# hé\nx"},
        {"path": "/p/中.rs", "content": "// ü\n"},
    ],
)
def test_char_len_write_counts_the_summary_json(tool_input: dict[str, Any]) -> None:
    summary = {"file_path": tool_input.get("file_path", tool_input.get("path"))}
    content = tool_input["content"]
    summary["_lines"] = len(content.rstrip("\n").split("\n"))
    summary["_purpose"] = content.split("\n")[0]
    event = ev.ToolCall(tool_use_id="t", tool_name="Write", input=tool_input)
    assert char_len(compact_event(event)) == len(b"Write") + len(dumps(summary).encode())


def test_char_len_edit_counts_whole_input_with_serde_escaping() -> None:
    tool_input = {"file_path": "/a/b.py", "old_string": 'é\u2028\n\x01/"', "new_string": "😀\t\x7f\\"}
    expected = len(b"Edit") + len(dumps(tool_input).encode())
    # by hand: the JSON keeps é (2), U+2028 (3), 😀 (4), \x7f (1) and / raw; escapes \n \u0001 \" \t \\
    assert '"old_string":"é\u2028\\n\\u0001/\\""' in dumps(tool_input)
    assert (
        char_len(compact_event(ev.ToolCall(tool_use_id="t", tool_name="Edit", input=tool_input))) == expected
    )


def test_char_len_counts_bytes_not_code_points() -> None:
    text = "😀" * 10
    assert len(text) == 10
    assert char_len(ev.AssistantText(text=text)) == 40
    assert char_len(ev.UserMessage(content="ü" * 3)) == 6


# -- non-idempotence (§3) -----------------------------------------------------------------------


def twice(tool: str, content: str) -> tuple[str, str]:
    once = result(tool, content)
    return once, result(tool, once)


def test_read_is_not_idempotent() -> None:
    assert twice("Read", "a\nb\nc\nd") == ("a\n  (4 lines)\nd", "a\n  (3 lines)\nd")
    assert twice("Read", "first\n" + "x\n" * 98 + "last") == (
        "first\n  (100 lines)\nlast",
        "first\n  (3 lines)\nlast",
    )


def test_glob_is_not_idempotent() -> None:
    assert twice("Glob", "a\nb\nc") == ("3 files", "1 files")
    assert twice("Glob", "") == ("0 files", "1 files")


def test_grep_default_task_get_a_new_more_marker() -> None:
    assert twice("Grep", "1\n2\n3\n4\n5") == ("1\n2\n3\n  (+2 more)", "1\n2\n3\n  (+1 more)")
    assert twice("mcp__s__t", "1\n2\n3\n4\n5\n6") == ("1\n2\n3\n  (+3 more)", "1\n2\n3\n  (+1 more)")
    assert twice("Task", "1\n2\n3\n4\n5\n6\n7") == (
        "1\n2\n3\n4\n5\n  (+2 more lines)",
        "1\n2\n3\n4\n5\n  (+1 more lines)",
    )


def test_write_loses_lines_and_purpose_when_compacted_again() -> None:
    once = call_input("Write", {"file_path": "/a", "content": "# x\ny"})
    assert same_json(once, {"file_path": "/a", "_lines": 2, "_purpose": "# x"})
    again = call_input("Write", once)
    assert same_json(again, {"file_path": "/a"})


def test_compacting_a_stored_row_changes_it() -> None:
    stored = compact_event(
        ev.ToolResult(tool_use_id="t", tool_name="Read", content="a\nb\nc\nd\ne", is_error=False)
    )
    assert compact_event(stored) != stored


def test_rules_that_are_stable_when_compacted_again() -> None:
    # Bash keeps <=2 non-blank lines, short results are kept as is, Edit is kept whole.
    assert twice("Bash", "a\nb\nc\n\nd") == ("c\nd", "c\nd")
    assert twice("Read", "a\nb") == ("a\nb", "a\nb")
    edit = {"patch": "*** Begin Patch\n"}
    assert call_input("Edit", call_input("Edit", edit)) == edit
    bash = call_input("Bash", {"command": "ls", "timeout": 1})
    assert call_input("Bash", bash) == bash


# -- prepare_for_store (§2.5 step 2) ------------------------------------------------------------


def test_prepare_drops_unstored_kinds_and_compacts_in_order() -> None:
    events: list[ev.Event] = [
        ev.Init(cwd="/w", model="m"),
        ev.Filtered(),
        ev.UserMessage(content=f"{OPEN}\nctx\n{CLOSE}\n\nhi"),
        ev.MayBeCompacting(),
        ev.ToolCall(tool_use_id="t1", tool_name="Bash", input={"command": "ls", "description": "d"}),
        ev.ToolResult(tool_use_id="t1", tool_name="Glob", content="a\nb", is_error=False),
        ev.Compacting(),
        ev.Complete(success=True, duration_ms=5, cost_usd=0.0),
    ]
    assert prepare_for_store(events) == [
        ev.Init(cwd="/w", model="m"),
        ev.UserMessage(content="hi"),
        ev.ToolCall(tool_use_id="t1", tool_name="Bash", input={"command": "ls"}),
        ev.ToolResult(tool_use_id="t1", tool_name="Glob", content="2 files", is_error=False),
        ev.Compacting(),
        ev.Complete(success=True, duration_ms=5, cost_usd=0.0),
    ]


@pytest.mark.parametrize(
    "content",
    [
        f"{OPEN}\nctx\n{CLOSE}",
        f"{OPEN}\nctx\n{CLOSE}\n\n",
        f"{OPEN}\nmalformed, never closed",
        f"stray{CLOSE}",
        f"{OPEN}\nctx\n{CLOSE}\n\n{AUTO_CONTINUE}",
        HIDDEN_CODEX,
        "\n  " + HIDDEN_CODEX,
    ],
)
def test_prepare_drops_injected_only_prompts(content: str) -> None:
    assert prepare_for_store([ev.UserMessage(content=content)]) == []
    assert prepare_for_store(
        [ev.AssistantText(text="a"), ev.UserMessage(content=content), ev.AssistantText(text="b")]
    ) == [
        ev.AssistantText(text="a"),
        ev.AssistantText(text="b"),
    ]


@pytest.mark.parametrize(
    ("content", "stored"),
    [
        ("", ""),  # a genuinely empty prompt is kept
        ("   ", "   "),
        (AUTO_CONTINUE, ""),  # untagged auto-continue: sanitize gives None -> "", but no tag, so kept (§4.4)
        (f"{OPEN}\nctx\n{CLOSE}\n\nreal prompt", "real prompt"),
        (f"{OPEN}\nctx\n{CLOSE}\n\n\u3000", "\u3000"),
        ("# AGENTS.md instructions for /r (no marker)", "# AGENTS.md instructions for /r (no marker)"),
    ],
)
def test_prepare_keeps_real_prompts(content: str, stored: str) -> None:
    assert prepare_for_store([ev.UserMessage(content=content)]) == [ev.UserMessage(content=stored)]


def test_prepare_empty_and_only_skipped() -> None:
    assert prepare_for_store([]) == []
    assert prepare_for_store([ev.Filtered(), ev.MayBeCompacting()]) == []


def test_prepare_accepts_any_iterable() -> None:
    events: list[ev.Event] = [ev.Filtered(), ev.Command(name="/x")]
    assert prepare_for_store(iter(events)) == [ev.Command(name="/x")]
