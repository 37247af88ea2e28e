"""Properties of `compact_event` and `char_len` (spec §2.4, §3) over generated events, tool names and
inputs, checked against a model of the spec's rules written here.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from azsd.compact import char_len, compact_event, compact_tool_input
from azsd.events import Event, ToolCall, decode_event, encode_event
from tests.compact_helpers import AUTO_CONTINUE, CLOSE, OPEN, REMINDER, dumps, result
from tests.event_strategies import any_event

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

ANY_EVENT = any_event(TEXT, CONTENT, TOOL_NAMES, TOOL_INPUT, st.floats(allow_nan=False, allow_infinity=False))


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
