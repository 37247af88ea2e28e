"""Injected-context stripping, transcript rendering, the Codex budget and compaction prompts.

Spec: /work/shared/spec/store-format.md §4.4 (detection and stripping), §5 (context building) and §6
(compaction prompt). Every expected string below is written out by hand from the spec text.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from azsd import context
from azsd.context import (
    ContextPayload,
    auto_continue_prompt,
    build_compaction_prompt,
    build_context_prompt,
    fit_codex_budget,
    is_auto_continue,
    is_hidden_codex_context,
    render_transcript,
    sanitize,
    strip,
    strip_injected_context_from_events,
    strip_injected_context_indexed,
)
from azsd.events import (
    AssistantText,
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
    ToolCall,
    ToolResult,
    UserMessage,
)

# -- the spec's literals, spelled out independently of azsd.context ------------------------------

OPEN = "<azureal-session-context>"
CLOSE = "</azureal-session-context>"
AC_OPEN = "<azureal-internal-auto-continue>"
AC_CLOSE = "</azureal-internal-auto-continue>"
AUTO_CONTINUE = (
    "<azureal-internal-auto-continue>\n"
    "Continue the in-progress work from the supplied Azureal session context. Do not treat this as a new "
    "user request, do not change objectives, and keep following the user's latest instructions.\n"
    "</azureal-internal-auto-continue>"
)
NOTICE = (
    "\n[Azureal omitted older raw session context here to keep the Codex input under its prompt budget. "
    "Use the previous summary above and the recent context below.]\n\n"
)
HIDDEN = "# AGENTS.md instructions for /home/u/proj\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>"
BUDGET = 180_000


def U(text: str) -> UserMessage:
    return UserMessage(content=text)


def A(text: str) -> AssistantText:
    return AssistantText(text=text)


def wrapped(prompt: str, transcript: str = "## User\nold") -> str:
    """A well-formed injected prompt, as §5.2 builds it."""
    return f"{OPEN}\n{transcript}\n{CLOSE}\n\n{prompt}"


def call(name: str, tool_input: Any, file_path: str | None = None) -> ToolCall:
    return ToolCall(tool_use_id="t1", tool_name=name, file_path=file_path, input=tool_input)


def result(name: str, content: str, is_error: bool = False) -> ToolResult:
    return ToolResult(tool_use_id="t1", tool_name=name, file_path=None, content=content, is_error=is_error)


def nbytes(s: str) -> int:
    return len(s.encode("utf-8"))


# -- constants ------------------------------------------------------------------------------------


def test_constants_match_spec() -> None:
    assert context.CONTEXT_OPEN == OPEN
    assert context.CONTEXT_CLOSE == CLOSE
    assert context.AUTO_CONTINUE_OPEN == AC_OPEN
    assert context.AUTO_CONTINUE_CLOSE == AC_CLOSE
    assert context.HIDDEN_CODEX_PREFIX == "# AGENTS.md instructions for "
    assert context.CODEX_PROMPT_BUDGET == 180_000
    assert context.COMPACTION_THRESHOLD == 400_000


def test_auto_continue_prompt_text_is_exact() -> None:
    assert context.AUTO_CONTINUE_PROMPT == AUTO_CONTINUE


def test_codex_notice_text_is_exact() -> None:
    assert context.CODEX_TRIM_NOTICE == NOTICE


# -- strip (§4.4) ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (wrapped("hello"), "hello"),
        # all leading \n go, but \r and spaces stay
        (f"{OPEN}\nctx\n{CLOSE}\n\n\n\r\n x", "\r\n x"),
        (f"{OPEN}\nctx\n{CLOSE}\n\n  x", "  x"),
        (f"{OPEN}\nctx\n{CLOSE}\r\n\nx", "\r\n\nx"),
        (f"{OPEN}\nctx\n{CLOSE}\t\nx", "\t\nx"),
        # only the first close counts
        (f"{OPEN}\na\n{CLOSE}\n\nb {CLOSE} c", f"b {CLOSE} c"),
        (f"{OPEN}\na\n{CLOSE}{CLOSE}\nz", f"{CLOSE}\nz"),
        # text before the wrapper goes too
        (f"pre {OPEN}\nctx\n{CLOSE}\n\nx", "x"),
        # close without open still strips
        (f"junk {CLOSE}\nq", "q"),
        (CLOSE, ""),
        (f"{CLOSE}\n\n\n", ""),
        # open without close: malformed wrapper
        (f"{OPEN}\nstuff without an end", ""),
        (f"before {OPEN}", ""),
        (OPEN, ""),
        # no tags: unchanged
        ("  \n hello \n", "  \n hello \n"),
        ("\n\nstarts with newlines", "\n\nstarts with newlines"),
        ("", ""),
        ("<azureal-session-context", "<azureal-session-context"),
    ],
)
def test_strip(content: str, expected: str) -> None:
    assert strip(content) == expected


# -- is_hidden_codex_context / is_auto_continue ---------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (HIDDEN, True),
        ("# AGENTS.md instructions for x<INSTRUCTIONS>", True),
        (" \n\t" + HIDDEN, True),
        ("\u3000\u00a0" + HIDDEN, True),  # Unicode White_Space is leading whitespace too
        ("# AGENTS.md instructions for /p\n<INSTRUCTIONS>" * 2, True),
        ("# AGENTS.md instructions for /p\nno marker here", False),
        ("# AGENTS.md instructions for /p\n<instructions>", False),
        ("x # AGENTS.md instructions for /p\n<INSTRUCTIONS>", False),
        ("<INSTRUCTIONS>\n# AGENTS.md instructions for /p", False),
        ("# AGENTS.md instructions for\n<INSTRUCTIONS>", False),  # the prefix ends in a space
        ("# agents.md instructions for /p\n<INSTRUCTIONS>", False),
        # U+001C is not White_Space in Rust, so it is not leading whitespace (§3)
        ("\x1c# AGENTS.md instructions for /p\n<INSTRUCTIONS>", False),
        ("", False),
    ],
)
def test_is_hidden_codex_context(content: str, expected: bool) -> None:
    assert is_hidden_codex_context(content) is expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (AUTO_CONTINUE, True),
        (" \n\t" + AUTO_CONTINUE + "\n \u3000", True),
        (AC_OPEN + AC_CLOSE, True),
        (AC_OPEN + "anything at all" + AC_CLOSE, True),
        ("x" + AUTO_CONTINUE, False),
        (AUTO_CONTINUE + "x", False),
        (AC_OPEN + "\nContinue.", False),
        ("Continue.\n" + AC_CLOSE, False),
        ("\x1c" + AUTO_CONTINUE, False),  # U+001C is not trimmed by Rust's trim
        ("Continue.", False),
        ("", False),
    ],
)
def test_is_auto_continue(content: str, expected: bool) -> None:
    assert is_auto_continue(content) is expected


# -- sanitize -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("hello", "hello"),
        ("", ""),  # a genuinely empty prompt stays ""
        ("   ", "   "),
        (wrapped("next step"), "next step"),
        (f"junk {CLOSE}\n\nq", "q"),
        (wrapped("  "), "  "),  # not "" after strip, so kept
        (HIDDEN, None),
        ("  " + HIDDEN, None),
        (AUTO_CONTINUE, None),  # strip leaves it, and it is an auto-continue prompt
        (wrapped(AUTO_CONTINUE), None),
        (wrapped(AC_OPEN + "whatever" + AC_CLOSE + "\n"), None),  # only the tags are checked
        (f"{OPEN}\nctx\n{CLOSE}", None),
        (f"{OPEN}\nctx\n{CLOSE}\n\n\n", None),
        (f"{OPEN}\nno close", None),
        (CLOSE, None),
        (wrapped("x" + AUTO_CONTINUE), "x" + AUTO_CONTINUE),
    ],
)
def test_sanitize(content: str, expected: str | None) -> None:
    assert sanitize(content) == expected


# -- strip_injected_context_from_events (§4.4 run-level algorithm) -------------------------------


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        pytest.param([], [], id="empty"),
        pytest.param(
            [Init(cwd="/w", model="m"), U("a"), U("b"), A("r"), U("c")],
            [Init(cwd="/w", model="m"), U("a"), U("b"), A("r"), U("c")],
            id="no-tags-unchanged",
        ),
        pytest.param([U(wrapped("x"))], [U("x")], id="tagged-is-sanitized"),
        pytest.param([U("a"), U("b"), U(wrapped("x"))], [U("x")], id="earlier-plain-users-in-run-dropped"),
        pytest.param(
            [U("a"), A("r"), U("b"), U(wrapped("x"))],
            [U("a"), A("r"), U("x")],
            id="only-the-current-run-is-dropped",
        ),
        pytest.param([U(wrapped("x")), U("c")], [U("x"), U("c")], id="later-plain-users-survive"),
        pytest.param(
            [U("a"), U(f"junk {CLOSE}\n\nq")], [U("q")], id="close-without-open-clears-pend-and-strips"
        ),
        pytest.param(
            [U(f"{OPEN}\n## User\nold"), U("swallowed"), U("also"), U(f"## User\nz\n{CLOSE}\n\nreal")],
            [U("real")],
            id="malformed-opener-swallows-until-close",
        ),
        pytest.param(
            [U(f"{OPEN}\nctx"), U("swallowed"), A("reply"), U("after")],
            [A("reply"), U("after")],
            id="malformed-opener-ends-at-non-user-event",
        ),
        pytest.param(
            [U("a"), U(f"{OPEN}\nctx"), U("b")],
            [],
            id="malformed-opener-at-end-flushes-nothing",
        ),
        pytest.param([A("x"), U(f"{OPEN}\nctx")], [A("x")], id="opener-after-event"),
        pytest.param(
            [U(f"{OPEN}\nctx"), U(f"{OPEN}\nnested?"), U(f"{CLOSE}\n\nq"), U("r")],
            [U("q"), U("r")],
            id="inside-open-dropped-close-ends",
        ),
        pytest.param(
            [U(f"{OPEN}\nctx"), U(f"{CLOSE}\n\n \t "), U("z")],
            [U("z")],
            id="inside-blank-sanitized-dropped-inside-cleared",
        ),
        pytest.param(
            [U(f"{OPEN}\nctx"), U(f"{CLOSE}\n\n{AUTO_CONTINUE}"), U("z")],
            [U("z")],
            id="inside-auto-continue-dropped",
        ),
        pytest.param([U(wrapped(AUTO_CONTINUE))], [], id="wrapped-auto-continue-dropped"),
        pytest.param([U(f"{OPEN}\nctx\n{CLOSE}")], [], id="nothing-after-close-dropped"),
        pytest.param([U(wrapped(" \n\t\u3000"))], [], id="whitespace-after-close-dropped"),
        pytest.param([U(wrapped("\x1c"))], [U("\x1c")], id="x1c-is-not-blank-in-rust"),
        pytest.param([U("a"), U(wrapped("  "))], [], id="blank-tagged-still-clears-pend"),
        pytest.param([U(HIDDEN), U("hi")], [U("hi")], id="hidden-codex-dropped"),
        pytest.param([U("a"), U(HIDDEN), U("b")], [U("a"), U("b")], id="hidden-codex-does-not-clear-pend"),
        pytest.param(
            [U("a"), U(HIDDEN + "\n" + CLOSE + "\n\nq")],
            [U("a")],
            id="hidden-codex-checked-before-tags",
        ),
        pytest.param(
            [U(f"{OPEN}\nctx"), U(HIDDEN), U(f"{CLOSE}\n\nq")], [U("q")], id="hidden-codex-while-inside"
        ),
        pytest.param(
            [U(AUTO_CONTINUE), U("  ")],
            [U(AUTO_CONTINUE), U("  ")],
            id="untagged-not-sanitized",
        ),
        pytest.param(
            [
                Init(cwd="/w", model="m"),
                A("first"),
                result("Bash", "ok"),
                U("plain"),
                U(wrapped("x")),
                Complete(success=True, duration_ms=1, cost_usd=0.0),
            ],
            [
                Init(cwd="/w", model="m"),
                A("first"),
                result("Bash", "ok"),
                U("x"),
                Complete(success=True, duration_ms=1, cost_usd=0.0),
            ],
            id="position-does-not-matter",
        ),
        pytest.param(
            [U("a"), Hook(name="h", output="o"), U(f"{OPEN}\nctx"), ModelSwitch(model="m"), U("b")],
            [U("a"), Hook(name="h", output="o"), ModelSwitch(model="m"), U("b")],
            id="any-non-user-event-flushes-or-resets",
        ),
        pytest.param([U(wrapped("one")), U(wrapped("two"))], [U("one"), U("two")], id="two-tagged-in-a-row"),
    ],
)
def test_strip_injected_context_from_events(events: list[Event], expected: list[Event]) -> None:
    assert strip_injected_context_from_events(events) == expected


def test_strip_injected_context_indexed_keeps_original_indices() -> None:
    events: list[Event] = [U("a"), U(HIDDEN), A("r"), U("p"), U(wrapped("x")), U("b"), A("s"), U(f"{OPEN}\n")]
    assert strip_injected_context_indexed(events) == [
        (0, U("a")),
        (2, A("r")),
        (4, U("x")),
        (5, U("b")),
        (6, A("s")),
    ]


def test_strip_injected_context_does_not_mutate_input() -> None:
    events: list[Event] = [U("a"), U(wrapped("x"))]
    strip_injected_context_from_events(events)
    assert events == [U("a"), U(wrapped("x"))]


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


# -- Codex budget (§5.3) --------------------------------------------------------------------------

# A small hand-checkable body: three long old lines, then a blank line and the newest user block.
_OLD = "x" * 400
_REST = f"\n## User\n{_OLD}\n{_OLD}\n{_OLD}\n\n## User\nnew\n"
_TAIL = f"{CLOSE}\n\nP"
_SUMMARY_PART = "\n[Previous conversation summary]\nSUM\n\n[Conversation continues]\n\n"


@pytest.mark.parametrize(
    ("room", "recent"),
    [
        (0, ""),
        (3, ""),  # the end of the body is the only line start within 3 bytes
        (4, "new\n"),
        (11, "new\n"),
        (12, "## User\nnew\n"),
        (13, "\n## User\nnew\n"),
        (15, "\n## User\nnew\n"),
        (13 + len(_OLD), "\n## User\nnew\n"),
        (14 + len(_OLD), f"{_OLD}\n\n## User\nnew\n"),
        (14 + 2 * len(_OLD), f"{_OLD}\n\n## User\nnew\n"),
        (15 + 2 * len(_OLD), f"{_OLD}\n{_OLD}\n\n## User\nnew\n"),
    ],
)
def test_fit_codex_budget_without_summary(room: int, recent: str) -> None:
    prompt = OPEN + _REST + _TAIL
    budget = nbytes(OPEN) + nbytes(NOTICE) + nbytes(_TAIL) + room
    assert nbytes(prompt) > budget
    out = fit_codex_budget(prompt, budget)
    assert out == OPEN + NOTICE + recent + _TAIL
    assert nbytes(out) <= budget


@pytest.mark.parametrize(
    ("room", "recent"),
    [(0, ""), (12, "## User\nnew\n"), (13, "\n## User\nnew\n"), (100, "\n## User\nnew\n")],
)
def test_fit_codex_budget_keeps_summary_part(room: int, recent: str) -> None:
    body = _SUMMARY_PART + _REST[1:]  # a transcript with a summary has no blank line after the marker
    prompt = "lead " + OPEN + body + _TAIL
    fixed = nbytes("lead " + OPEN) + nbytes(_SUMMARY_PART) + nbytes(NOTICE) + nbytes(_TAIL)
    out = fit_codex_budget(prompt, fixed + room)
    assert out == "lead " + OPEN + _SUMMARY_PART + NOTICE + recent + _TAIL


def test_fit_codex_budget_fixed_parts_exactly_fit() -> None:
    prompt = OPEN + _REST + _TAIL
    budget = nbytes(OPEN) + nbytes(NOTICE) + nbytes(_TAIL)
    assert fit_codex_budget(prompt, budget) == OPEN + NOTICE + _TAIL


def test_fit_codex_budget_fixed_parts_too_big_is_untrimmed() -> None:
    prompt = OPEN + _REST + _TAIL
    budget = nbytes(OPEN) + nbytes(NOTICE) + nbytes(_TAIL) - 1
    assert fit_codex_budget(prompt, budget) == prompt


@pytest.mark.parametrize(
    "prompt",
    [
        pytest.param("x\n" * (BUDGET // 2 + 10), id="no-tags"),
        pytest.param(OPEN + "\n" + "x\n" * (BUDGET // 2 + 10), id="no-close"),
        pytest.param("x\n" * (BUDGET // 2 + 10) + CLOSE + "\n\nP", id="no-open"),
        pytest.param(CLOSE + "\n" + "x\n" * (BUDGET // 2 + 10) + OPEN, id="close-before-open"),
    ],
)
def test_fit_codex_budget_missing_tag_is_untrimmed(prompt: str) -> None:
    assert nbytes(prompt) > BUDGET
    assert fit_codex_budget(prompt) == prompt


def _big_events(count: int, text: str = "y" * 80) -> list[Event]:
    return [A(f"msg {i:05d} {text}") for i in range(count)]


def _transcript_of(events: list[Event]) -> str:
    # "## Assistant\n{text}\n" + "\n" per event, trim_end'ed: written out here from §5.2
    return "".join(f"## Assistant\n{e.text}\n\n" for e in events if isinstance(e, AssistantText)).rstrip("\n")


def _expected_codex(summary: str | None, transcript_after_summary: str, prompt: str) -> str:
    """§5.3 re-derived: fixed parts plus the longest line-start suffix of the body that fits."""
    summary_part = (
        ""
        if summary is None
        else f"\n[Previous conversation summary]\n{summary}\n\n[Conversation continues]\n\n"
    )
    rest = ("\n" if summary is None else "") + transcript_after_summary + "\n"
    tail = f"{CLOSE}\n\n{prompt}"
    room = BUDGET - nbytes(OPEN + summary_part + NOTICE + tail)
    assert room >= 0
    starts = [0] + [i + 1 for i, ch in enumerate(rest) if ch == "\n"]
    recent = next(rest[s:] for s in starts if nbytes(rest[s:]) <= room)
    return OPEN + summary_part + NOTICE + recent + tail


def test_codex_budget_untouched_when_under() -> None:
    events = _big_events(100)
    payload = ContextPayload("S", events)
    expected = f"{OPEN}\n[Previous conversation summary]\nS\n\n[Conversation continues]\n\n"
    expected += _transcript_of(events) + f"\n{CLOSE}\n\ngo"
    assert build_context_prompt(payload, "go", codex=True) == expected


def test_codex_budget_boundary_is_inclusive() -> None:
    events = _big_events(1500)
    payload = ContextPayload(None, events)
    base = nbytes(f"{OPEN}\n{_transcript_of(events)}\n{CLOSE}\n\n")
    assert base < BUDGET
    exact = "p" * (BUDGET - base)
    at_budget = build_context_prompt(payload, exact, codex=True)
    assert at_budget == f"{OPEN}\n{_transcript_of(events)}\n{CLOSE}\n\n{exact}"
    assert nbytes(at_budget) == BUDGET
    over = exact + "p"
    trimmed = build_context_prompt(payload, over, codex=True)
    assert trimmed == _expected_codex(None, _transcript_of(events), over)
    assert nbytes(trimmed) <= BUDGET


def test_codex_budget_trims_with_summary() -> None:
    events = _big_events(3000)
    summary = "Summary line one.\nSummary line two."
    payload = ContextPayload(summary, events)
    out = build_context_prompt(payload, "do it", codex=True)
    assert nbytes(out) <= BUDGET
    assert out == _expected_codex(summary, _transcript_of(events), "do it")
    head = (
        f"{OPEN}\n[Previous conversation summary]\n{summary}\n\n[Conversation continues]\n\n"
        "\n[Azureal omitted older raw session context here to keep the Codex input under its prompt budget. "
        "Use the previous summary above and the recent context below.]\n\n"
    )
    assert out.startswith(head)
    assert out.endswith(f"## Assistant\nmsg 02999 {'y' * 80}\n{CLOSE}\n\ndo it")
    assert "msg 00000 " not in out


def test_codex_budget_trims_without_summary() -> None:
    events = _big_events(3000)
    out = build_context_prompt(ContextPayload(None, events), "do it", codex=True)
    assert nbytes(out) <= BUDGET
    assert out == _expected_codex(None, _transcript_of(events), "do it")
    assert out.startswith(OPEN + NOTICE)
    assert "[Previous conversation summary]" not in out


def test_codex_budget_counts_bytes_not_chars() -> None:
    events = _big_events(1000, "é" * 100)
    transcript = _transcript_of(events)
    full = f"{OPEN}\n{transcript}\n{CLOSE}\n\nnext"
    assert len(full) < BUDGET < nbytes(full)
    out = build_context_prompt(ContextPayload(None, events), "next", codex=True)
    assert out != full
    assert nbytes(out) <= BUDGET
    assert out == _expected_codex(None, transcript, "next")


def test_codex_budget_multibyte_cut_lands_on_line_boundary() -> None:
    # lines of 3-byte characters: a byte-level cut falls inside a character; the tail must still start
    # at a line start and decode cleanly
    events: list[Event] = [A("\u4e2d" * 99 + f"{i}") for i in range(800)]
    transcript = _transcript_of(events)
    out = build_context_prompt(ContextPayload(None, events), "q", codex=True)
    assert nbytes(out) <= BUDGET
    assert out == _expected_codex(None, transcript, "q")


def test_codex_fixed_parts_too_big_sends_untrimmed() -> None:
    events = _big_events(10)
    prompt = "p" * (BUDGET + 1)
    expected = f"{OPEN}\n{_transcript_of(events)}\n{CLOSE}\n\n{prompt}"
    assert build_context_prompt(ContextPayload(None, events), prompt, codex=True) == expected


def test_codex_huge_summary_sends_untrimmed() -> None:
    summary = "s" * (BUDGET + 1)
    events = _big_events(10)
    expected = (
        f"{OPEN}\n[Previous conversation summary]\n{summary}\n\n[Conversation continues]\n\n"
        f"{_transcript_of(events)}\n{CLOSE}\n\ngo"
    )
    assert build_context_prompt(ContextPayload(summary, events), "go", codex=True) == expected


def test_claude_is_never_trimmed() -> None:
    events = _big_events(3000)
    expected = f"{OPEN}\n{_transcript_of(events)}\n{CLOSE}\n\ngo"
    assert nbytes(expected) > BUDGET
    assert build_context_prompt(ContextPayload(None, events), "go") == expected
    assert build_context_prompt(ContextPayload(None, events), "go", codex=False) == expected


def test_codex_trimmed_prompt_still_strips_to_the_prompt() -> None:
    out = build_context_prompt(ContextPayload("S", _big_events(3000)), "my prompt", codex=True)
    assert strip(out) == "my prompt"


# -- auto-continue (§5.4) and compaction (§6) -----------------------------------------------------


def test_auto_continue_prompt_wraps_context() -> None:
    out = auto_continue_prompt(ContextPayload(None, [U("q")]))
    assert out == f"{OPEN}\n## User\nq\n{CLOSE}\n\n{AUTO_CONTINUE}"
    assert sanitize(out) is None
    assert strip_injected_context_from_events([U(out)]) == []


def test_auto_continue_prompt_without_context_is_bare() -> None:
    assert auto_continue_prompt(None) == AUTO_CONTINUE
    assert auto_continue_prompt(ContextPayload(None, [])) == AUTO_CONTINUE


def test_auto_continue_prompt_codex_budget() -> None:
    events = _big_events(3000)
    out = auto_continue_prompt(ContextPayload(None, events), codex=True)
    assert nbytes(out) <= BUDGET
    assert out == _expected_codex(None, _transcript_of(events), AUTO_CONTINUE)
    claude = auto_continue_prompt(ContextPayload(None, events))
    assert claude == f"{OPEN}\n{_transcript_of(events)}\n{CLOSE}\n\n{AUTO_CONTINUE}"


def test_build_compaction_prompt() -> None:
    payload = ContextPayload("S", [U("q"), Init(cwd="/w", model="m"), A("a")])
    out = build_compaction_prompt(payload)
    transcript = (
        "[Previous conversation summary]\nS\n\n[Conversation continues]\n\n## User\nq\n\n## Assistant\na"
    )
    block = f"<transcript>\n{transcript}\n</transcript>"
    assert out.count(block) == 1
    before, after = out.split(block)
    assert before.strip()  # an instruction paragraph comes first
    assert "Output ONLY the summary text" in after
    assert "2000" in after
    assert "4000" in after


def test_build_compaction_prompt_without_summary_is_not_budgeted() -> None:
    events = _big_events(3000)
    out = build_compaction_prompt(ContextPayload(None, events))
    assert f"<transcript>\n{_transcript_of(events)}\n</transcript>" in out
    assert "Output ONLY the summary text" in out
    assert NOTICE not in out


# -- property: strip(build(ctx, x)) == x (§5.2) ---------------------------------------------------

_FRAGMENTS = st.sampled_from(
    [OPEN, "\n", "\r", " ", "\t", AC_OPEN, AC_CLOSE, "<system-reminder>", "é", "\x1c"]
)
_TEXT = st.lists(st.one_of(st.text(max_size=20), _FRAGMENTS), max_size=8).map("".join)
_SAFE = _TEXT.filter(lambda s: CLOSE not in s)

_EVENT: st.SearchStrategy[Event] = st.one_of(
    st.builds(UserMessage, content=_SAFE),
    st.builds(AssistantText, text=_SAFE),
    st.builds(Plan, name=_SAFE, content=_SAFE),
    st.builds(Command, name=_SAFE),
    st.builds(
        ToolCall,
        tool_use_id=_SAFE,
        tool_name=st.one_of(st.sampled_from(["Bash", "Read", "Grep", "Task", "mcp__x__y"]), _SAFE),
        file_path=st.none(),
        input=st.one_of(
            st.none(),
            st.dictionaries(st.sampled_from(["command", "file_path", "path", "pattern"]), _SAFE, max_size=3),
        ),
    ),
    st.builds(
        ToolResult,
        tool_use_id=_SAFE,
        tool_name=_SAFE,
        file_path=st.none(),
        content=_SAFE,
        is_error=st.booleans(),
    ),
    st.builds(
        Complete,
        success=st.booleans(),
        duration_ms=st.integers(min_value=0, max_value=10**9),
        cost_usd=st.floats(min_value=0, max_value=1000, allow_nan=False),
    ),
    st.builds(Init, cwd=_SAFE, model=_SAFE),
    st.builds(Hook, name=_SAFE, output=_SAFE),
    st.builds(ModelSwitch, model=_SAFE),
)
_RENDERED = (UserMessage, AssistantText, Plan, Command, ToolCall, ToolResult, Complete)


@settings(max_examples=300, deadline=None)
@given(summary=st.none() | _SAFE, events=st.lists(_EVENT, max_size=8), prompt=_TEXT)
def test_strip_inverts_build_context_prompt(summary: str | None, events: list[Event], prompt: str) -> None:
    assume(not prompt.startswith("\n") and CLOSE not in prompt)
    has_transcript = summary is not None or any(isinstance(e, _RENDERED) for e in events)
    # with nothing to render the raw prompt is sent, and a bare OPEN in it strips to "" (§4.4)
    assume(has_transcript or OPEN not in prompt)
    built = build_context_prompt(ContextPayload(summary, events), prompt)
    assert strip(built) == prompt
    if has_transcript:
        assert built.startswith(OPEN + "\n")
    else:
        assert built == prompt


@settings(max_examples=200, deadline=None)
@given(events=st.lists(_EVENT, max_size=8), prompt=_TEXT)
def test_stripping_a_built_prompt_yields_the_clean_prompt(events: list[Event], prompt: str) -> None:
    assume(not prompt.startswith("\n") and CLOSE not in prompt and not is_auto_continue(prompt))
    assume(any(isinstance(e, _RENDERED) for e in events))
    built = build_context_prompt(ContextPayload(None, events), prompt)
    kept = strip_injected_context_from_events([U("part"), U(built)])
    # the plain "part" is the same run's hidden context; a blank clean prompt is dropped
    assert kept == ([] if _blank(prompt) else [U(prompt)])


def _blank(s: str) -> bool:
    ws = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    ws += "\u2028\u2029\u202f\u205f\u3000"
    return not s.strip(ws)
