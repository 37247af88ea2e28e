"""`compact_event` of tool call inputs (spec §3): Edit kept whole, Write summarized, key stripping.

Every expected value here is worked out by hand from the spec's rules, not copied from a run.
"""

from __future__ import annotations

from typing import Any

import pytest

from azsd.compact import compact_tool_input
from tests.compact_helpers import call_input, dumps, same_json

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
