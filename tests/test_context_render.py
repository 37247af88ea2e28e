"""Transcript rendering and the context prompt's wrapper.

Spec: /work/shared/spec/store-format.md §5.2 (context building). Every expected string below is
written out by hand from the spec text.
"""

from __future__ import annotations

from typing import Any

import pytest

from azsd.context import ContextPayload, build_context_prompt, render_transcript
from azsd.events import (
    Command,
    Compacted,
    Compacting,
    Complete,
    Event,
    Filtered,
    Hook,
    Init,
    MayBeCompacting,
    ModelSwitch,
    Plan,
)
from tests.context_helpers import BUDGET, CLOSE, OPEN, A, U, call, result

# -- rendering (§5.2) -----------------------------------------------------------------------------


def test_render_every_kind() -> None:
    events: list[Event] = [
        U("q"),
        A("a"),
        call("Read", {"file_path": "/src/main.rs"}),
        result("Read", "fn main() {}"),
        Plan(name="p", content="step"),
        Command(name="/compact"),
        Complete(success=True, duration_ms=5000, cost_usd=0.05),
    ]
    assert render_transcript(None, events) == (
        "## User\nq\n\n"
        "## Assistant\na\n\n"
        "## Tool: Read (/src/main.rs)\n\n"
        "[Result: Read] fn main() {}\n\n"
        "## Plan: p\nstep\n\n"
        "## Command: /compact\n\n"
        "[Session complete: 5.0s, $0.0500]"
    )


def test_omitted_kinds_render_nothing() -> None:
    noise: list[Event] = [
        Init(cwd="/w", model="m"),
        Hook(name="h", output="hook output"),
        ModelSwitch(model="m2"),
        Compacting(),
        Compacted(),
        MayBeCompacting(),
        Filtered(),
    ]
    events: list[Event] = [*noise, U("q"), *noise, A("a"), *noise]
    assert render_transcript(None, events) == "## User\nq\n\n## Assistant\na"


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (U("multi\nline"), "## User\nmulti\nline\n\n## User\nend"),
        (A(""), "## Assistant\n\n\n## User\nend"),
        (call("Bash", {"command": "ls"}), "## Tool: Bash (ls)\n\n## User\nend"),
        (call("Bash", {}), "## Tool: Bash\n\n## User\nend"),
        (result("Read", ""), "[Result: Read] \n\n## User\nend"),
        (result("Bash", "boom", is_error=True), "[Error: Bash] boom\n\n## User\nend"),
        (Plan(name="n", content="c"), "## Plan: n\nc\n\n## User\nend"),
        (Command(name="/clear"), "## Command: /clear\n\n## User\nend"),
        (
            Complete(success=False, duration_ms=0, cost_usd=0.0),
            "[Session complete: 0.0s, $0.0000]\n\n## User\nend",
        ),
    ],
)
def test_each_block_ends_in_a_blank_line(event: Event, expected: str) -> None:
    assert render_transcript(None, [event, U("end")]) == expected


def test_whole_transcript_is_trim_end_ed_only() -> None:
    events: list[Event] = [A("a  \n\n"), U(" b \n\t\u3000\u2028")]
    assert render_transcript(None, events) == "## Assistant\na  \n\n\n\n## User\n b"


def test_trim_end_keeps_x1c() -> None:
    # Rust's trim_end does not treat U+001C..U+001F as whitespace (§3)
    assert render_transcript(None, [A("hi\x1c")]) == "## Assistant\nhi\x1c"


def test_summary_header() -> None:
    assert render_transcript("S", [U("q")]) == (
        "[Previous conversation summary]\nS\n\n[Conversation continues]\n\n## User\nq"
    )


def test_summary_without_events_is_trimmed() -> None:
    assert render_transcript("S", []) == "[Previous conversation summary]\nS\n\n[Conversation continues]"


def test_summary_with_only_omitted_events_still_wraps() -> None:
    payload = ContextPayload("the summary", [Init(cwd="/w", model="m")])
    assert build_context_prompt(payload, "go") == (
        f"{OPEN}\n[Previous conversation summary]\nthe summary\n\n[Conversation continues]\n{CLOSE}\n\ngo"
    )


def test_wrapper_format() -> None:
    payload = ContextPayload(None, [U("hi"), A("hello")])
    assert build_context_prompt(payload, "next") == (
        "<azureal-session-context>\n## User\nhi\n\n## Assistant\nhello\n</azureal-session-context>\n\nnext"
    )


def test_wrapper_keeps_prompt_verbatim() -> None:
    payload = ContextPayload(None, [U("hi")])
    prompt = "  spaced \n\n prompt \n\n"
    assert build_context_prompt(payload, prompt) == f"{OPEN}\n## User\nhi\n{CLOSE}\n\n{prompt}"


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(None, id="none"),
        pytest.param(ContextPayload(None, []), id="first-prompt"),
        pytest.param(
            ContextPayload(
                None, [Init(cwd="/w", model="m"), Hook(name="h", output="o"), ModelSwitch(model="x")]
            ),
            id="init-hook-modelswitch",
        ),
        pytest.param(
            ContextPayload(None, [Compacting(), Compacted(), MayBeCompacting(), Filtered()]),
            id="other-omitted",
        ),
    ],
)
@pytest.mark.parametrize("codex", [False, True])
def test_empty_transcript_returns_raw_prompt(payload: ContextPayload | None, codex: bool) -> None:
    prompt = "  raw \n prompt\n"
    assert build_context_prompt(payload, prompt, codex=codex) == prompt


def test_empty_transcript_returns_huge_raw_prompt_for_codex() -> None:
    prompt = "p" * (BUDGET + 10)
    assert build_context_prompt(None, prompt, codex=True) == prompt


# -- tool param (§5.2) ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "tool_input", "expected"),
    [
        ("Bash", {"command": "ls -la", "file_path": "/nope"}, "## Tool: Bash (ls -la)"),
        ("bash", {"command": "ls -la", "file_path": "/nope"}, "## Tool: bash (ls -la)"),
        ("Read", {"file_path": "/a.rs", "path": "/b.rs"}, "## Tool: Read (/a.rs)"),
        ("read", {"file_path": "/a.rs"}, "## Tool: read (/a.rs)"),
        ("Edit", {"file_path": "/e.rs", "old_string": "x", "new_string": "y"}, "## Tool: Edit (/e.rs)"),
        ("edit", {"file_path": "/e.rs"}, "## Tool: edit (/e.rs)"),
        ("Write", {"file_path": "/w.rs", "_lines": 3}, "## Tool: Write (/w.rs)"),
        ("write", {"file_path": "/w.rs"}, "## Tool: write (/w.rs)"),
        ("Glob", {"pattern": "**/*.rs", "file_path": "/f"}, "## Tool: Glob (**/*.rs)"),
        ("glob", {"pattern": "*.py"}, "## Tool: glob (*.py)"),
        ("Grep", {"pattern": "fn main", "file_path": "/f"}, "## Tool: Grep (fn main)"),
        ("grep", {"pattern": "x"}, "## Tool: grep (x)"),
        ("WebFetch", {"url": "https://e.com", "file_path": "/f"}, "## Tool: WebFetch (https://e.com)"),
        ("webfetch", {"url": "https://e.com"}, "## Tool: webfetch (https://e.com)"),
        ("WebSearch", {"query": "rust lines", "file_path": "/f"}, "## Tool: WebSearch (rust lines)"),
        ("websearch", {"query": "q"}, "## Tool: websearch (q)"),
        ("Agent", {"description": "d", "subagent_type": "t", "file_path": "/f"}, "## Tool: Agent (d)"),
        ("agent", {"description": "d"}, "## Tool: agent (d)"),
        ("Task", {"description": "explore", "file_path": "/f"}, "## Tool: Task (explore)"),
        ("task", {"description": "explore"}, "## Tool: task (explore)"),
        ("LSP", {"operation": "hover", "filePath": "/x", "file_path": "/f"}, "## Tool: LSP (hover)"),
        ("lsp", {"operation": "hover"}, "## Tool: lsp (hover)"),
        # anything else: file_path
        ("mcp__srv__tool", {"file_path": "/m", "command": "c", "query": "q"}, "## Tool: mcp__srv__tool (/m)"),
        ("MultiEdit", {"file_path": "/me"}, "## Tool: MultiEdit (/me)"),
        ("srv:tool", {"command": "c"}, "## Tool: srv:tool"),
        ("TodoWrite", {}, "## Tool: TodoWrite"),
        # only the listed spellings and their lowercase forms match
        ("BASH", {"command": "ls", "file_path": "/f"}, "## Tool: BASH (/f)"),
        ("Webfetch", {"url": "u", "file_path": "/f"}, "## Tool: Webfetch (/f)"),
        ("Lsp", {"operation": "o", "file_path": "/f"}, "## Tool: Lsp (/f)"),
        # fallback to path when the key is absent
        ("Read", {"path": "/p.rs"}, "## Tool: Read (/p.rs)"),
        ("Bash", {"path": "/p"}, "## Tool: Bash (/p)"),
        ("Glob", {"path": "/d"}, "## Tool: Glob (/d)"),
        ("Unknown", {"path": "/q"}, "## Tool: Unknown (/q)"),
        # the table key is the only one consulted (besides path)
        ("Glob", {"file_path": "/f"}, "## Tool: Glob"),
        ("Bash", {"cmd": "ls"}, "## Tool: Bash"),
        # non-string value gives "" and the short form
        ("Bash", {"command": ["ls", "-la"]}, "## Tool: Bash"),
        ("Read", {"file_path": 7}, "## Tool: Read"),
        ("Read", {"file_path": None}, "## Tool: Read"),
        ("Read", {"path": {"nested": "/x"}}, "## Tool: Read"),
        ("Read", {"file_path": 1, "path": "/p"}, "## Tool: Read"),  # key present, so path is not used
        ("Bash", {"command": ""}, "## Tool: Bash"),
        # input that isn't an object
        ("Bash", "ls", "## Tool: Bash"),
        ("Bash", None, "## Tool: Bash"),
        ("Read", ["/a"], "## Tool: Read"),
    ],
)
def test_tool_param(name: str, tool_input: Any, expected: str) -> None:
    assert render_transcript(None, [call(name, tool_input)]) == expected


def test_tool_param_ignores_the_file_path_field() -> None:
    assert render_transcript(None, [call("Read", {}, file_path="/field.rs")]) == "## Tool: Read"


def test_tool_call_short_form_then_blank_line() -> None:
    assert render_transcript(None, [call("X", {}), call("Bash", {"command": "c"})]) == (
        "## Tool: X\n\n## Tool: Bash (c)"
    )


# -- result shortening (§5.2) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected_r"),
    [
        ("one line", "one line"),
        ("1\n2\n3\n4\n5\n6", "1\n2\n3\n4\n5\n6"),
        ("1\n2\n3\n4\n5\n6\n7", "1\n2\n3\n(+1 more lines)\n5\n6\n7"),
        ("1\n2\n3\n4\n5\n6\n7\n8\n9\n10", "1\n2\n3\n(+4 more lines)\n8\n9\n10"),
        # trailing newlines don't count: trim_end first
        ("1\n2\n3\n4\n5\n6\n\n\n", "1\n2\n3\n4\n5\n6"),
        ("out   \n\n", "out"),
        # blank lines inside do count
        ("1\n\n\n\n\n\n7", "1\n\n\n(+1 more lines)\n\n\n7"),
        # cut at the first <system-reminder>, all of it
        ("a\nb<system-reminder>x\ny\nz\nw\nv\nu</system-reminder>tail", "a\nb"),
        ("out  \n\n<system-reminder>r</system-reminder>\nmore", "out"),
        (
            "1\n2\n3\n4\n5\n6\n7\n8<system-reminder>\n9\n10\n11\n12",
            "1\n2\n3\n(+2 more lines)\n6\n7\n8",
        ),
        ("<system-reminder>only a reminder</system-reminder>", ""),
        ("x<system-reminder>a<system-reminder>b", "x"),
        # Rust lines: CRLF pairs are single breaks
        ("1\r\n2\r\n3\r\n4\r\n5\r\n6", "1\r\n2\r\n3\r\n4\r\n5\r\n6"),
        ("1\r\n2\r\n3\r\n4\r\n5\r\n6\r\n7", "1\n2\n3\n(+1 more lines)\n5\n6\n7"),
    ],
)
def test_result_shortening(content: str, expected_r: str) -> None:
    assert render_transcript(None, [result("Bash", content), U("end")]) == (
        f"[Result: Bash] {expected_r}\n\n## User\nend"
    )


def test_error_result_is_shortened_too() -> None:
    content = "e1\ne2\ne3\ne4\ne5\ne6\ne7\ne8<system-reminder>r"
    assert render_transcript(None, [result("Grep", content, is_error=True)]) == (
        "[Error: Grep] e1\ne2\ne3\n(+2 more lines)\ne6\ne7\ne8"
    )


# -- Complete (§5.2) ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("duration_ms", "cost_usd", "expected"),
    [
        (5000, 0.05, "[Session complete: 5.0s, $0.0500]"),
        (250, 0.0, "[Session complete: 0.2s, $0.0000]"),  # exact tie rounds to even
        (1250, 1.0, "[Session complete: 1.2s, $1.0000]"),
        (750, 2.5, "[Session complete: 0.8s, $2.5000]"),  # 0.75 is an exact tie too: to even is 0.8
        (0, 0.0, "[Session complete: 0.0s, $0.0000]"),
        (1234567, 1.23456, "[Session complete: 1234.6s, $1.2346]"),
        (60000, 12.0, "[Session complete: 60.0s, $12.0000]"),
        (1, 0.00001, "[Session complete: 0.0s, $0.0000]"),
        # fixed-point, never exponent notation
        (10**19, 1e20, "[Session complete: 10000000000000000.0s, $100000000000000000000.0000]"),
    ],
)
def test_complete_rendering(duration_ms: int, cost_usd: float, expected: str) -> None:
    event = Complete(success=True, duration_ms=duration_ms, cost_usd=cost_usd)
    assert render_transcript(None, [event]) == expected
