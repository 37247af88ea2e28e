"""Injected-context detection and stripping, and that stripping inverts building a context prompt.

Spec: /work/shared/spec/store-format.md §4.4 (detection and stripping) and §5.2. Every expected
string below is written out by hand from the spec text.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from azsd import context
from azsd.context import (
    ContextPayload,
    build_context_prompt,
    is_auto_continue,
    is_hidden_codex_context,
    sanitize,
    strip,
    strip_injected_context_from_events,
    strip_injected_context_indexed,
)
from azsd.events import (
    AssistantText,
    Command,
    Complete,
    Event,
    Hook,
    Init,
    ModelSwitch,
    Plan,
    ToolCall,
    ToolResult,
    UserMessage,
)
from tests.context_helpers import (
    AC_CLOSE,
    AC_OPEN,
    AUTO_CONTINUE,
    CLOSE,
    HIDDEN,
    NOTICE,
    OPEN,
    A,
    U,
    result,
    wrapped,
)

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
