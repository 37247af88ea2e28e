"""`compact_event` (spec §3), `char_len` (§2.4) and `prepare_for_store` (§2.5 step 2).

Every expected value here is worked out by hand from the spec's rules, not copied from a run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from azsd.compact import char_len, compact_event, compact_tool_input, compact_tool_result, prepare_for_store
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
    decode_event,
    encode_event,
)

# Constants written out from the spec (§4.4, §5.4), not imported from the code under test.
OPEN = "<azureal-session-context>"
CLOSE = "</azureal-session-context>"
AUTO_CONTINUE = (
    "<azureal-internal-auto-continue>\n"
    "Continue the in-progress work from the supplied Azureal session context. Do not treat this as a new "
    "user request, do not change objectives, and keep following the user's latest instructions.\n"
    "</azureal-internal-auto-continue>"
)
HIDDEN_CODEX = "# AGENTS.md instructions for /home/u/repo\n\n<INSTRUCTIONS>\nBe terse.\n</INSTRUCTIONS>"
REMINDER = "<system-reminder>"


def dumps(value: Any) -> str:
    """Compact JSON as serde writes it (§2.4)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def result(tool: str, content: str) -> str:
    """The compacted content of a ToolResult, checking that the other fields stay as they are."""
    event = ToolResult(
        tool_use_id="toolu_9", tool_name=tool, file_path="/p/f.rs", content=content, is_error=True
    )
    out = compact_event(event)
    assert isinstance(out, ToolResult)
    assert (out.tool_use_id, out.tool_name, out.file_path, out.is_error) == ("toolu_9", tool, "/p/f.rs", True)
    assert compact_tool_result(tool, content) == out.content
    return out.content


def call_input(tool: str, tool_input: Any) -> Any:
    """The compacted input of a ToolCall, checking that the other fields stay as they are."""
    event = ToolCall(tool_use_id="toolu_8", tool_name=tool, file_path="/fp", input=tool_input)
    out = compact_event(event)
    assert isinstance(out, ToolCall)
    assert (out.tool_use_id, out.tool_name, out.file_path) == ("toolu_8", tool, "/fp")
    return out.input


def same_json(a: Any, b: Any) -> bool:
    """Equal including the order of object keys."""
    return dumps(a) == dumps(b)


# -- ToolResult: Read ---------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["Read", "read"])
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", ""),
        ("one", "one"),
        ("one\ntwo", "one\ntwo"),
        ("one\ntwo\n", "one\ntwo"),  # trim_end, then n=2: kept
        ("one\r\ntwo\r\n", "one\r\ntwo"),  # n=2: kept as is, \r\n included
        ("  indented\n", "  indented"),
        ("a\nb\nc", "a\n  (3 lines)\nc"),
        ("a\nb\nc\n", "a\n  (3 lines)\nc"),
        ("a\nb\n\nc\n\n   \n", "a\n  (4 lines)\nc"),
        ("   1\tfn main() {\n   2\t    x();\n   3\t}\n", "   1\tfn main() {\n  (3 lines)\n   3\t}"),
        ("l1\r\nl2\r\nl3\r\n", "l1\n  (3 lines)\nl3"),
        ("a\rb\rc", "a\rb\rc"),  # lone \r: one line
        ("a\rb\nc\rd\ne", "a\rb\n  (3 lines)\ne"),
        ("é\n中\n😀", "é\n  (3 lines)\n😀"),
        ("\n\nx", "\n  (3 lines)\nx"),  # lines[0] is empty
        ("a\n\x1c\n\x1c", "a\n  (3 lines)\n\x1c"),  # \x1c is not blank for Rust
        ("a\nb\nc\u3000\xa0\u2028 ", "a\n  (3 lines)\nc"),
        ("1\n2\n3\n4\n5\n6\n7\n8\n9\n10", "1\n  (10 lines)\n10"),
    ],
)
def test_read(tool: str, content: str, expected: str) -> None:
    assert result(tool, content) == expected


# -- ToolResult: Bash ---------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["Bash", "bash"])
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", ""),
        ("   \n\n\t", ""),
        ("one", "one"),
        ("a\nb", "a\nb"),
        ("a\n\nb", "a\nb"),  # blank lines go even in short output
        ("a\n  \n\u3000\nb\n", "a\nb"),
        ("a\nb\nc\nd", "c\nd"),
        ("a\nb\n\n  \nc\n\n", "b\nc"),
        ("x\n\xa0\ny", "x\ny"),  # U+00A0 is blank
        ("x\n\x1c\ny", "\x1c\ny"),  # \x1c is not blank for Rust
        ("a\r\nb\r\nc\r\n", "b\nc"),
        ("a\rb", "a\rb"),
        ("p 10%\rp 100%\ndone", "p 10%\rp 100%\ndone"),
        ("  a\n    b", "  a\n    b"),
        ("a\nb\nc<system-reminder>z</system-reminder>\nd", "b\nc"),
        ("é\n中\n😀\n", "中\n😀"),
    ],
)
def test_bash(tool: str, content: str, expected: str) -> None:
    assert result(tool, content) == expected


# -- ToolResult: Grep and the default ---------------------------------------------------------

DEFAULT_TOOLS = [
    "Grep",
    "grep",
    "Agent",  # not in the Task rule
    "agent",
    "mcp__github__search_code",
    "github:search_code",  # Codex MCP spelling
    "Edit",
    "Write",
    "WebFetch",
    "TodoWrite",
    "LSP",
    "shell_command",
    "Unknown",
    "unknown",
    "custom_tool",
    "",
    "READ",
    "BASH",
    "GLOB",
    "TASK",
    "GREP",
    "Read ",
    "bash_tool",
]


@pytest.mark.parametrize("tool", DEFAULT_TOOLS)
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", ""),
        ("a", "a"),
        ("a\nb\nc", "a\nb\nc"),
        ("a\nb\nc\n", "a\nb\nc"),
        ("a\n\nb", "a\n\nb"),  # blank lines stay (n=3)
        ("a\nb\nc\nd", "a\nb\nc\n  (+1 more)"),
        ("a\r\nb\r\nc\r\nd\r\ne", "a\nb\nc\n  (+2 more)"),
        ("a\r\nb\r\nc", "a\r\nb\r\nc"),  # n=3: kept as is
        ("a\n\n\nb", "a\n\n\n  (+1 more)"),
        ("a\rb\rc\rd", "a\rb\rc\rd"),  # one line
        ("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12", "1\n2\n3\n  (+9 more)"),
        ("é\n中\n😀\nz", "é\n中\n😀\n  (+1 more)"),
    ],
)
def test_grep_and_default(tool: str, content: str, expected: str) -> None:
    assert result(tool, content) == expected


def test_uppercase_read_is_not_the_read_rule() -> None:
    assert result("READ", "a\nb\nc") == "a\nb\nc"
    assert result("Read", "a\nb\nc") == "a\n  (3 lines)\nc"


def test_uppercase_bash_keeps_blank_lines() -> None:
    assert result("BASH", "a\n\nb") == "a\n\nb"
    assert result("bash", "a\n\nb") == "a\nb"


# -- ToolResult: Glob ---------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["Glob", "glob"])
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "0 files"),
        ("No files found", "1 files"),
        ("/a.py", "1 files"),
        ("/a.py\n/b.py\n/c.py\n", "3 files"),
        ("   \n\n", "0 files"),
        ("a\r\nb\r\n", "2 files"),
        ("a\n\nb", "3 files"),
        ("a\rb", "1 files"),
        ("a\n<system-reminder>\nb\nc", "1 files"),
        ("<system-reminder>x</system-reminder>", "0 files"),
        ("\x1c", "1 files"),
        ("\u3000\n\xa0", "0 files"),
    ],
)
def test_glob(tool: str, content: str, expected: str) -> None:
    assert result(tool, content) == expected


# -- ToolResult: Task ---------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["Task", "task"])
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", ""),
        ("1\n2\n3\n4", "1\n2\n3\n4"),
        ("1\n2\n3\n4\n5", "1\n2\n3\n4\n5"),
        ("1\n2\n3\n4\n5\n", "1\n2\n3\n4\n5"),
        ("1\n2\n3\n4\n5\n6", "1\n2\n3\n4\n5\n  (+1 more lines)"),
        ("1\r\n2\r\n3\r\n4\r\n5\r\n6\r\n7\r\n8", "1\n2\n3\n4\n5\n  (+3 more lines)"),
        ("1\n\n3\n4\n5\n6", "1\n\n3\n4\n5\n  (+1 more lines)"),
    ],
)
def test_task(tool: str, content: str, expected: str) -> None:
    assert result(tool, content) == expected


@pytest.mark.parametrize("tool", ["Agent", "agent"])
def test_agent_falls_under_default_not_task(tool: str) -> None:
    assert result(tool, "1\n2\n3\n4\n5\n6") == "1\n2\n3\n  (+3 more)"
    assert result(tool, "1\n2\n3\n4") == "1\n2\n3\n  (+1 more)"


@pytest.mark.parametrize("tool", ["mcp__srv__tool", "srv:tool"])
def test_mcp_tools_fall_under_default(tool: str) -> None:
    assert result(tool, "a\nb\nc\nd\ne") == "a\nb\nc\n  (+2 more)"


# -- <system-reminder> cut, trim_end, line endings ---------------------------------------------


@pytest.mark.parametrize(
    ("tool", "content", "expected"),
    [
        ("Other", "result<system-reminder>note</system-reminder>tail", "result"),
        ("Other", "a\n<system-reminder>x</system-reminder>\nb\nc\nd\ne", "a"),
        ("Other", "<system-reminder>only</system-reminder>\nmore", ""),
        ("Other", "a\nb<system-reminder>1</system-reminder>c\n<system-reminder>2</system-reminder>", "a\nb"),
        ("Other", "a  \n\t<system-reminder>", "a"),
        ("Other", "a\n</system-reminder>\nb", "a\n</system-reminder>\nb"),  # a lone close tag cuts nothing
        ("Other", "a\n<System-Reminder>\nb", "a\n<System-Reminder>\nb"),  # case-sensitive
        ("Other", "a\n<system-reminder \nb", "a\n<system-reminder \nb"),
        ("Read", "1\n2\n3\n4\n<system-reminder>\nMalware check\n</system-reminder>\n", "1\n  (4 lines)\n4"),
        ("Read", "1\n2\n<system-reminder>a</system-reminder>\n3\n4", "1\n2"),
        ("Bash", "x\ny\nz\n<system-reminder>r</system-reminder>\nafter", "y\nz"),
        ("Task", "1\n2\n3\n4\n5\n6<system-reminder>", "1\n2\n3\n4\n5\n  (+1 more lines)"),
        ("Glob", "a\nb<system-reminder>\nc\nd\ne", "2 files"),
    ],
)
def test_system_reminder_cut(tool: str, content: str, expected: str) -> None:
    assert result(tool, content) == expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("a\u3000\u2028\u2029\xa0\x85\u1680\u2000\u200a\u202f\u205f \t\x0b\x0c\r\n", "a"),
        ("a\x1c", "a\x1c"),
        ("a\n\x1f", "a\n\x1f"),
        ("a \x1c \n", "a \x1c"),
        ("a\x1d\x1e\u3000", "a\x1d\x1e"),
        ("a\u200b", "a\u200b"),  # ZERO WIDTH SPACE is not White_Space
        ("a\ufeff ", "a\ufeff"),
        ("  \n a", "  \n a"),  # leading whitespace stays
        ("\u3000a", "\u3000a"),
        ("a\r", "a"),
        ("a\r\n\r\n", "a"),
    ],
)
def test_trim_end_uses_unicode_white_space(content: str, expected: str) -> None:
    assert result("Other", content) == expected


def test_trailing_newline_adds_no_line() -> None:
    assert result("Grep", "a\nb\nc\n") == "a\nb\nc"
    assert result("Glob", "a\nb\nc\n\n\n") == "3 files"


# -- ToolCall input: Edit -----------------------------------------------------------------------

EDIT_INPUTS: list[Any] = [
    {"file_path": "/a.py", "old_string": "x", "new_string": "y", "replace_all": False},
    {"replace_all": True, "new_string": "é\n", "old_string": "", "file_path": "/b"},  # odd key order kept
    {"patch": "*** Begin Patch\n*** Update File: /a.py\n@@\n-x\n+y\n*** End Patch\n"},
    {"file_path": "/a.py", "kind": "update", "unified_diff": "@@ -1 +1 @@\n-x\n+y\n"},
    {"file_path": "/a", "kind": "rename", "move_path": "/b", "content": "kept", "extra": [1, {"z": None}]},
    None,
    "a raw string",
    [1, 2],
    {},
]


@pytest.mark.parametrize("tool", ["Edit", "edit"])
@pytest.mark.parametrize("tool_input", EDIT_INPUTS)
def test_edit_input_kept_whole(tool: str, tool_input: Any) -> None:
    out = call_input(tool, tool_input)
    assert out == tool_input
    assert same_json(out, tool_input)


def test_uppercase_edit_is_not_the_edit_rule() -> None:
    tool_input = {"old_string": "x", "new_string": "y", "file_path": "/a"}
    assert same_json(call_input("EDIT", tool_input), {"file_path": "/a"})
    assert same_json(
        call_input("MultiEdit", {"file_path": "/a", "edits": [{"old_string": "x"}]}), {"file_path": "/a"}
    )


# -- ToolCall input: Write ----------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["Write", "write"])
@pytest.mark.parametrize(
    ("tool_input", "expected"),
    [
        (
            {"file_path": "/a.py", "content": "# Module doc\nimport os\n"},
            {"file_path": "/a.py", "_lines": 2, "_purpose": "# Module doc"},
        ),
        (
            {"path": "/b.rs", "content": "use std::io;\n// helper\nfn x() {}"},
            {"file_path": "/b.rs", "_lines": 3, "_purpose": "// helper"},
        ),
        (
            {"path": "/p", "file_path": "/f", "content": "x"},
            {"file_path": "/f", "_lines": 1, "_purpose": "x"},
        ),
        (
            {"content": "body\n", "mode": "w", "file_path": "/c"},  # key order of the output is fixed
            {"file_path": "/c", "_lines": 1, "_purpose": "body"},
        ),
        (
            {"file_path": "/d", "content": "hello world\nsecond"},
            {"file_path": "/d", "_lines": 2, "_purpose": "hello world"},
        ),
        (
            {"file_path": "/d", "content": "   plain text  \nx"},
            {"file_path": "/d", "_lines": 2, "_purpose": "plain text"},
        ),
        (
            {"file_path": "/d", "content": "x = 1\n    # note  \n"},
            {"file_path": "/d", "_lines": 2, "_purpose": "# note"},
        ),
        (
            {"file_path": "/d", "content": '"""Docstring."""\nx'},
            {"file_path": "/d", "_lines": 2, "_purpose": '"""Docstring."""'},
        ),
        (
            {"file_path": "/d", "content": "int x;\n/* c */"},
            {"file_path": "/d", "_lines": 2, "_purpose": "/* c */"},
        ),
        (
            {"file_path": "/d", "content": "//! crate doc\n"},
            {"file_path": "/d", "_lines": 1, "_purpose": "//! crate doc"},
        ),
        (
            {"file_path": "/d", "content": "x\n/// doc\n"},
            {"file_path": "/d", "_lines": 2, "_purpose": "/// doc"},
        ),
        (
            {"file_path": "/d", "content": "#!/usr/bin/env python\n# real"},
            {"file_path": "/d", "_lines": 2, "_purpose": "#!/usr/bin/env python"},
        ),
        (
            {
                "file_path": "/d",
                "content": "/path/only\nx // trailing comment",
            },  # neither line is comment-ish
            {"file_path": "/d", "_lines": 2, "_purpose": "/path/only"},
        ),
        ({"file_path": "/d", "content": ""}, {"file_path": "/d", "_lines": 0}),
        (
            {"file_path": "/d", "content": "\n\nx"},
            {"file_path": "/d", "_lines": 3},
        ),  # first line "" -> omitted
        ({"file_path": "/d", "content": "   \nx"}, {"file_path": "/d", "_lines": 2}),
        ({"file_path": "/d", "content": "\u3000\xa0\nx"}, {"file_path": "/d", "_lines": 2}),
        ({"file_path": "/d", "content": "   \n# c"}, {"file_path": "/d", "_lines": 2, "_purpose": "# c"}),
        ({"file_path": "/d", "content": "\x1c\nx"}, {"file_path": "/d", "_lines": 2, "_purpose": "\x1c"}),
        (
            {"file_path": "/d", "content": "\u3000 hi \u3000"},
            {"file_path": "/d", "_lines": 1, "_purpose": "hi"},
        ),
        ({"file_path": "/d", "content": "# a\r\nb\r\n"}, {"file_path": "/d", "_lines": 2, "_purpose": "# a"}),
        ({"file_path": "/d", "content": "a\rb"}, {"file_path": "/d", "_lines": 1, "_purpose": "a\rb"}),
        ({"file_path": "/d", "content": "\n"}, {"file_path": "/d", "_lines": 1}),
        ({"file_path": "/d", "content": "a\nb\n\n"}, {"file_path": "/d", "_lines": 3, "_purpose": "a"}),
        (
            {"file_path": "/é", "content": "# é中😀\n"},
            {"file_path": "/é", "_lines": 1, "_purpose": "# é中😀"},
        ),
        ({"file_path": "/d", "content": None}, {"file_path": "/d"}),
        ({"file_path": "/d", "content": 5}, {"file_path": "/d"}),
        ({"file_path": "/d", "content": ["a"]}, {"file_path": "/d"}),
        ({"file_path": "/d"}, {"file_path": "/d"}),
        ({"content": "x"}, {"_lines": 1, "_purpose": "x"}),
        ({"other": 1}, {}),
        ({}, {}),
        (None, {}),
        ("a string", {}),
        ([{"file_path": "/x", "content": "y"}], {}),
    ],
)
def test_write_summary(tool: str, tool_input: Any, expected: dict[str, Any]) -> None:
    out = call_input(tool, tool_input)
    assert out == expected
    assert same_json(out, expected)
    assert compact_tool_input(tool, tool_input) == expected


def test_write_drops_content() -> None:
    out = call_input("Write", {"file_path": "/a", "content": "SECRET body\nline"})
    assert "content" not in out
    assert "SECRET body\nline" not in dumps(out)


# -- ToolCall input: key stripping --------------------------------------------------------------

EVERYTHING: dict[str, Any] = {
    "zzz": 0,
    "pattern": "p",
    "filePath": "/lsp",
    "query": "q",
    "url": "https://u",
    "operation": "hover",
    "command": "ls",
    "description": "d",
    "path": "/p",
    "subagent_type": "Explore",
    "file_path": "/f",
    "content": "c",
    "prompt": "pr",
}


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        (["Read", "read"], {"file_path": "/f", "path": "/p"}),
        (["Bash", "bash"], {"command": "ls"}),
        (["Glob", "glob", "Grep", "grep"], {"pattern": "p"}),
        (["WebFetch", "webfetch"], {"url": "https://u"}),
        (["WebSearch", "websearch"], {"query": "q"}),
        (["Agent", "agent", "Task", "task"], {"subagent_type": "Explore", "description": "d"}),
        (["LSP", "lsp"], {"operation": "hover", "filePath": "/lsp"}),
        (
            [
                "mcp__github__search",
                "github:search",
                "MultiEdit",
                "TodoWrite",
                "AskUserQuestion",
                "NotebookEdit",
                "READ",
                "Webfetch",
                "Lsp",
                "shell_command",
                "",
            ],
            {"file_path": "/f", "path": "/p", "command": "ls", "query": "q", "pattern": "p"},
        ),
    ],
)
def test_key_stripping_table_and_key_order(tools: list[str], expected: dict[str, Any]) -> None:
    for tool in tools:
        out = call_input(tool, EVERYTHING)
        assert out == expected, tool
        assert list(out) == list(expected), tool


@pytest.mark.parametrize(
    ("tool", "tool_input", "expected"),
    [
        (
            "Read",
            {"limit": 10, "path": "/p", "offset": 1, "file_path": "/f"},
            {"file_path": "/f", "path": "/p"},
        ),
        ("Read", {"path": "/only"}, {"path": "/only"}),
        ("Bash", {"description": "list", "command": "ls -la", "timeout": 5}, {"command": "ls -la"}),
        ("Bash", {"command": None}, {"command": None}),  # any JSON type is copied
        ("bash", {"command": ["ls", "-la"], "workdir": "/w"}, {"command": ["ls", "-la"]}),
        ("Glob", {"path": "/src", "pattern": "**/*.py"}, {"pattern": "**/*.py"}),
        (
            "grep",
            {"pattern": {"re": 1}, "path": "src", "output_mode": "content", "-n": True},
            {"pattern": {"re": 1}},
        ),
        ("WebFetch", {"prompt": "summarize", "url": "https://x"}, {"url": "https://x"}),
        ("websearch", {"allowed_domains": ["a"], "query": "rust"}, {"query": "rust"}),
        (
            "Task",
            {"prompt": "long", "description": "find it", "subagent_type": "Explore"},
            {"subagent_type": "Explore", "description": "find it"},
        ),
        ("Agent", {"prompt": "only a prompt"}, {}),
        (
            "LSP",
            {"filePath": "/a.rs", "line": 3, "operation": "hover"},
            {"operation": "hover", "filePath": "/a.rs"},
        ),
        ("LSP", {"file_path": "/a.rs"}, {}),
        ("Webfetch", {"url": "u", "path": "p"}, {"path": "p"}),
        ("TodoWrite", {"todos": [{"content": "x", "status": "pending"}]}, {}),
        ("AskUserQuestion", {"questions": [{"question": "?"}]}, {}),
        (
            "mcp__srv__tool",
            {"pattern": "p", "query": "q", "command": "c", "path": "/p", "file_path": "/f", "other": 1},
            {"file_path": "/f", "path": "/p", "command": "c", "query": "q", "pattern": "p"},
        ),
        ("srv:tool", {"query": "é", "url": "dropped"}, {"query": "é"}),
        ("READ", {"file_path": "/f", "limit": 3, "command": "x"}, {"file_path": "/f", "command": "x"}),
    ],
)
def test_key_stripping_examples(tool: str, tool_input: Any, expected: dict[str, Any]) -> None:
    out = call_input(tool, tool_input)
    assert out == expected
    assert same_json(out, expected)


@pytest.mark.parametrize(
    "tool",
    [
        "Read",
        "Bash",
        "Glob",
        "grep",
        "WebFetch",
        "Task",
        "Agent",
        "LSP",
        "TodoWrite",
        "mcp__s__t",
        "s:t",
        "Write",
    ],
)
@pytest.mark.parametrize("tool_input", [None, "a string", "", 5, 2.5, True, [], [{"command": "ls"}]])
def test_non_object_input_becomes_empty_object(tool: str, tool_input: Any) -> None:
    out = call_input(tool, tool_input)
    assert out == {}
    assert isinstance(out, dict)


def test_tool_call_input_is_not_mutated() -> None:
    original = {"command": "ls", "description": "d"}
    snapshot = dict(original)
    call_input("Bash", original)
    call_input("Write", {"file_path": "/a", "content": "x"})
    assert original == snapshot


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
    out = compact_event(UserMessage(content=content))
    assert out == UserMessage(content=expected)


# -- other variants pass through ----------------------------------------------------------------

PASS_THROUGH: list[Event] = [
    Init(cwd="/w", model="opus"),
    Hook(name="PreToolUse", output="a\nb\nc\nd\ne\n<system-reminder>x"),
    Command(name="/compact"),
    Compacting(),
    Compacted(),
    MayBeCompacting(),
    Plan(name="p", content="1\n2\n3\n4\n5\n6\n7"),
    AssistantText(text=f"{OPEN}\nnot stripped\n{CLOSE}\n<system-reminder>x\n\n"),
    Complete(success=True, duration_ms=10, cost_usd=0.5),
    ModelSwitch(model="m"),
    Filtered(),
]


@pytest.mark.parametrize("event", PASS_THROUGH, ids=[type(e).__name__ for e in PASS_THROUGH])
def test_other_variants_unchanged(event: Event) -> None:
    assert compact_event(event) == event
    assert encode_event(compact_event(event)) == encode_event(event)


# -- char_len (§2.4) ----------------------------------------------------------------------------

READ_MARKER_3 = "a\n  (3 lines)\nc"


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (UserMessage(content="héllo"), 6),
        (UserMessage(content=""), 0),
        (UserMessage(content=f"{OPEN}\nlong context here\n{CLOSE}\n\nhé"), 3),  # counted after sanitizing
        (UserMessage(content=HIDDEN_CODEX), 0),
        (AssistantText(text="中文"), 6),
        (AssistantText(text="😀"), 4),
        (ToolResult(tool_use_id="t", tool_name="Bash", content="é\nb", is_error=False), 4),
        (ToolResult(tool_use_id="t", tool_name="Read", content="a\nb\nc", is_error=False), 15),
        (ToolResult(tool_use_id="t", tool_name="Glob", content="x\ny\nz\n" * 4, is_error=False), 8),
        (
            ToolResult(
                tool_use_id="a-long-id", tool_name="LongToolName", file_path="/x/y", content="", is_error=True
            ),
            0,
        ),
        (Plan(name="a long plan name", content="ü"), 2),
        (Hook(name="PreToolUse", output="ok"), 2),
        (Hook(name="H", output="€"), 3),
        (Command(name="/compact"), 8),
        (Init(cwd="/some/where", model="opus"), 0),
        (Complete(success=True, duration_ms=123, cost_usd=4.5), 0),
        (Compacting(), 0),
        (Compacted(), 0),
        (ModelSwitch(model="gpt-5"), 0),
        # ToolCall: len(tool_name) + compact JSON of the compacted input
        (ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "ls", "description": "x"}), 4 + 16),
        (ToolCall(tool_use_id="t", tool_name="Edit", input=None), 4 + 4),
        (ToolCall(tool_use_id="t", tool_name="Read", input=None), 4 + 2),  # null -> {} -> 2
        (ToolCall(tool_use_id="t", tool_name="TodoWrite", input={"todos": [1, 2, 3]}), 9 + 2),
        (ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "é"}), 4 + 16),
        (
            ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "a\tb\x00"}),
            4 + len('{"command":"a\\tb\\u0000"}'),
        ),
        (
            ToolCall(tool_use_id="t", tool_name="tööl", file_path="/ignored/path", input={"query": "q"}),
            6 + 13,
        ),
        (ToolCall(tool_use_id="t", tool_name="Glob", input={"pattern": "**/*.rs", "path": "/x"}), 4 + 21),
        (ToolCall(tool_use_id="t", tool_name="Edit", input="raw"), 4 + 5),
    ],
)
def test_char_len_of_compacted_event(event: Event, expected: int) -> None:
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
    event = ToolCall(tool_use_id="t", tool_name="Write", input=tool_input)
    assert char_len(compact_event(event)) == len(b"Write") + len(dumps(summary).encode())


def test_char_len_edit_counts_whole_input_with_serde_escaping() -> None:
    tool_input = {"file_path": "/a/b.py", "old_string": 'é\u2028\n\x01/"', "new_string": "😀\t\x7f\\"}
    expected = len(b"Edit") + len(dumps(tool_input).encode())
    # by hand: the JSON keeps é (2), U+2028 (3), 😀 (4), \x7f (1) and / raw; escapes \n \u0001 \" \t \\
    assert '"old_string":"é\u2028\\n\\u0001/\\""' in dumps(tool_input)
    assert char_len(compact_event(ToolCall(tool_use_id="t", tool_name="Edit", input=tool_input))) == expected


def test_char_len_counts_bytes_not_code_points() -> None:
    text = "😀" * 10
    assert len(text) == 10
    assert char_len(AssistantText(text=text)) == 40
    assert char_len(UserMessage(content="ü" * 3)) == 6


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
        ToolResult(tool_use_id="t", tool_name="Read", content="a\nb\nc\nd\ne", is_error=False)
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
    events: list[Event] = [
        Init(cwd="/w", model="m"),
        Filtered(),
        UserMessage(content=f"{OPEN}\nctx\n{CLOSE}\n\nhi"),
        MayBeCompacting(),
        ToolCall(tool_use_id="t1", tool_name="Bash", input={"command": "ls", "description": "d"}),
        ToolResult(tool_use_id="t1", tool_name="Glob", content="a\nb", is_error=False),
        Compacting(),
        Complete(success=True, duration_ms=5, cost_usd=0.0),
    ]
    assert prepare_for_store(events) == [
        Init(cwd="/w", model="m"),
        UserMessage(content="hi"),
        ToolCall(tool_use_id="t1", tool_name="Bash", input={"command": "ls"}),
        ToolResult(tool_use_id="t1", tool_name="Glob", content="2 files", is_error=False),
        Compacting(),
        Complete(success=True, duration_ms=5, cost_usd=0.0),
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
    assert prepare_for_store([UserMessage(content=content)]) == []
    assert prepare_for_store(
        [AssistantText(text="a"), UserMessage(content=content), AssistantText(text="b")]
    ) == [
        AssistantText(text="a"),
        AssistantText(text="b"),
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
    assert prepare_for_store([UserMessage(content=content)]) == [UserMessage(content=stored)]


def test_prepare_empty_and_only_skipped() -> None:
    assert prepare_for_store([]) == []
    assert prepare_for_store([Filtered(), MayBeCompacting()]) == []


def test_prepare_accepts_any_iterable() -> None:
    events: list[Event] = [Filtered(), Command(name="/x")]
    assert prepare_for_store(iter(events)) == [Command(name="/x")]


# -- properties -----------------------------------------------------------------------------------

TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]))
PIECES = st.sampled_from(
    [
        "a",
        "é",
        "😀",
        "\n",
        "\r",
        "\r\n",
        " ",
        "\t",
        "\x1c",
        "\x1f",
        "\u3000",
        "\xa0",
        "\u2028",
        "# c",
        "//",
        REMINDER,
        "</system-reminder>",
        OPEN,
        CLOSE,
        AUTO_CONTINUE,
        "# AGENTS.md instructions for ",
        "<INSTRUCTIONS>",
    ]
)
CONTENT = st.one_of(st.lists(PIECES, max_size=30).map("".join), TEXT)
TOOL_NAMES = st.one_of(
    st.sampled_from(
        [
            "Read",
            "read",
            "Bash",
            "bash",
            "Grep",
            "grep",
            "Glob",
            "glob",
            "Task",
            "task",
            "Agent",
            "Edit",
            "edit",
            "Write",
            "write",
            "WebFetch",
            "webfetch",
            "WebSearch",
            "websearch",
            "LSP",
            "lsp",
            "mcp__s__t",
            "s:t",
            "READ",
        ]
    ),
    TEXT,
)
KEYS = st.one_of(
    st.sampled_from(
        [
            "file_path",
            "path",
            "command",
            "query",
            "pattern",
            "url",
            "subagent_type",
            "description",
            "operation",
            "filePath",
            "content",
            "patch",
        ]
    ),
    TEXT,
)
JSON_SCALAR: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), CONTENT
)
JSON_VALUE: st.SearchStrategy[Any] = st.recursive(
    JSON_SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=6)),
    max_leaves=15,
)
TOOL_INPUT = st.one_of(st.dictionaries(KEYS, JSON_VALUE, max_size=8), JSON_VALUE)

ANY_EVENT: st.SearchStrategy[Event] = st.one_of(
    st.builds(Init, cwd=TEXT, model=TEXT),
    st.builds(Hook, name=TEXT, output=CONTENT),
    st.builds(UserMessage, content=CONTENT),
    st.builds(Command, name=TEXT),
    st.builds(Compacting),
    st.builds(Compacted),
    st.builds(MayBeCompacting),
    st.builds(Plan, name=TEXT, content=CONTENT),
    st.builds(AssistantText, text=CONTENT),
    st.builds(
        ToolCall,
        tool_use_id=TEXT,
        tool_name=TOOL_NAMES,
        file_path=st.one_of(st.none(), TEXT),
        input=TOOL_INPUT,
    ),
    st.builds(
        ToolResult,
        tool_use_id=TEXT,
        tool_name=TOOL_NAMES,
        file_path=st.one_of(st.none(), TEXT),
        content=CONTENT,
        is_error=st.booleans(),
    ),
    st.builds(
        Complete,
        success=st.booleans(),
        duration_ms=st.integers(0, 2**64 - 1),
        cost_usd=st.floats(allow_nan=False, allow_infinity=False),
    ),
    st.builds(ModelSwitch, model=TEXT),
    st.builds(Filtered),
)


@given(ANY_EVENT)
def test_compacted_event_survives_json_round_trip(event: Event) -> None:
    compacted = compact_event(event)
    data = encode_event(compacted)
    back = decode_event(data)
    assert back == compacted
    assert type(back) is type(compacted)
    assert encode_event(back) == data


@given(TOOL_NAMES, TOOL_INPUT)
def test_tool_call_char_len_is_name_plus_compact_json(tool: str, tool_input: Any) -> None:
    compacted = compact_event(ToolCall(tool_use_id="t", tool_name=tool, input=tool_input))
    assert isinstance(compacted, ToolCall)
    assert char_len(compacted) == len(tool.encode()) + len(dumps(compacted.input).encode())


@given(TOOL_NAMES, TOOL_INPUT)
def test_tool_call_input_shape(tool: str, tool_input: Any) -> None:
    out = compact_tool_input(tool, tool_input)
    if tool in ("Edit", "edit"):
        assert out == tool_input
        return
    assert isinstance(out, dict)
    if tool in ("Write", "write"):
        assert set(out) <= {"file_path", "_lines", "_purpose"}
        assert list(out) == [k for k in ("file_path", "_lines", "_purpose") if k in out]
    else:
        assert isinstance(tool_input, dict) or out == {}
        assert all(k in tool_input and out[k] == tool_input[k] for k in out)


def _lines(s: str) -> list[str]:
    """Rust `str::lines`, written independently of azsd.rusttext."""
    out: list[str] = []
    start = 0
    for i, ch in enumerate(s):
        if ch == "\n":
            line = s[start:i]
            out.append(line[:-1] if line.endswith("\r") else line)
            start = i + 1
    if start < len(s):
        out.append(s[start:])
    return out


_WS = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)


def _spec_result(tool: str, content: str) -> str:
    """§3's ToolResult rules, transcribed directly from the spec text."""
    cut = content.find(REMINDER)
    text = (content if cut < 0 else content[:cut]).rstrip(_WS)
    lines = _lines(text)
    n = len(lines)
    non_blank = [line for line in lines if line.strip(_WS)]
    if tool in ("Read", "read"):
        return text if n <= 2 else lines[0] + f"\n  ({n} lines)\n" + non_blank[-1]
    if tool in ("Bash", "bash"):
        return "\n".join(non_blank[-2:])
    if tool in ("Glob", "glob"):
        return f"{n} files"
    if tool in ("Task", "task"):
        return text if n <= 5 else "\n".join(lines[:5]) + f"\n  (+{n - 5} more lines)"
    return text if n <= 3 else "\n".join(lines[:3]) + f"\n  (+{n - 3} more)"


@given(TOOL_NAMES, CONTENT)
def test_tool_result_matches_spec_model(tool: str, content: str) -> None:
    assert result(tool, content) == _spec_result(tool, content)
