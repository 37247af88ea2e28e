"""`compact_event` of tool results (spec §3): the Read, Bash, Grep, Glob, Task and default rules, the
<system-reminder> cut, trim_end and line endings.

Every expected value here is worked out by hand from the spec's rules, not copied from a run.
"""

from __future__ import annotations

import pytest

from tests.compact_helpers import result

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
