"""The event model's serde JSON (spec §2.1-§2.2): exact encoding and escaping.

Every expected byte string below is written out by hand from the spec's table: externally tagged,
fields in declaration order, compact separators, unit variants as a bare string. Decoding:
tests/test_events_decode.py; round trips: tests/test_events_properties.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from azsd.events import (
    SKIPPED_KINDS,
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
    event_kind,
)

U64_MAX = 2**64 - 1


def dumps(value: Any) -> str:
    """serde_json's compact form, as the spec (§2.4) says to reproduce it in Python."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# -- exact encoding of all 14 variants ---------------------------------------------------------

ENCODED: list[tuple[Event, bytes]] = [
    (Init(cwd="/home/u/repo", model="opus"), b'{"Init":{"cwd":"/home/u/repo","model":"opus"}}'),
    (Hook(name="PreToolUse", output="ok"), b'{"Hook":{"name":"PreToolUse","output":"ok"}}'),
    (UserMessage(content="hi there"), b'{"UserMessage":{"content":"hi there"}}'),
    (Command(name="/compact"), b'{"Command":{"name":"/compact"}}'),
    (Compacting(), b'"Compacting"'),
    (Compacted(), b'"Compacted"'),
    (MayBeCompacting(), b'"MayBeCompacting"'),
    (Plan(name="plan-a", content="1. do it"), b'{"Plan":{"name":"plan-a","content":"1. do it"}}'),
    (AssistantText(text="done"), b'{"AssistantText":{"text":"done"}}'),
    (
        ToolCall(tool_use_id="toolu_1", tool_name="Read", file_path="/a.py", input={"file_path": "/a.py"}),
        b'{"ToolCall":{"tool_use_id":"toolu_1","tool_name":"Read","file_path":"/a.py","input":{"file_path":"/a.py"}}}',
    ),
    (
        ToolCall(tool_use_id="t2", tool_name="TodoWrite", file_path=None, input=None),
        b'{"ToolCall":{"tool_use_id":"t2","tool_name":"TodoWrite","file_path":null,"input":null}}',
    ),
    (
        ToolCall(
            tool_use_id="t3", tool_name="x", input={"z": 1, "a": [1, "s", None, True, False, {"k": {}}]}
        ),
        b'{"ToolCall":{"tool_use_id":"t3","tool_name":"x","file_path":null,'
        b'"input":{"z":1,"a":[1,"s",null,true,false,{"k":{}}]}}}',
    ),
    (
        ToolCall(tool_use_id="t4", tool_name="Bash", input="raw string"),
        b'{"ToolCall":{"tool_use_id":"t4","tool_name":"Bash","file_path":null,"input":"raw string"}}',
    ),
    (
        ToolResult(tool_use_id="toolu_1", tool_name="Bash", file_path=None, content="out", is_error=True),
        b'{"ToolResult":{"tool_use_id":"toolu_1","tool_name":"Bash","file_path":null,"content":"out","is_error":true}}',
    ),
    (
        ToolResult(tool_use_id="t", tool_name="Read", file_path="/f", content="", is_error=False),
        b'{"ToolResult":{"tool_use_id":"t","tool_name":"Read","file_path":"/f","content":"","is_error":false}}',
    ),
    (
        Complete(success=True, duration_ms=5000, cost_usd=0.25),
        b'{"Complete":{"success":true,"duration_ms":5000,"cost_usd":0.25}}',
    ),
    (
        Complete(success=False, duration_ms=0, cost_usd=0.0),
        b'{"Complete":{"success":false,"duration_ms":0,"cost_usd":0.0}}',
    ),
    (
        Complete(success=True, duration_ms=U64_MAX, cost_usd=1.5),
        b'{"Complete":{"success":true,"duration_ms":18446744073709551615,"cost_usd":1.5}}',
    ),
    (ModelSwitch(model="gpt-5-codex"), b'{"ModelSwitch":{"model":"gpt-5-codex"}}'),
    (Filtered(), b'"Filtered"'),
]


@pytest.mark.parametrize(
    ("event", "expected"), ENCODED, ids=[f"{type(e).__name__}-{i}" for i, (e, _) in enumerate(ENCODED)]
)
def test_encode_exact_bytes(event: Event, expected: bytes) -> None:
    assert encode_event(event) == expected


@pytest.mark.parametrize(
    ("event", "expected"), ENCODED, ids=[f"{type(e).__name__}-{i}" for i, (e, _) in enumerate(ENCODED)]
)
def test_decode_of_exact_bytes_gives_the_event_back(event: Event, expected: bytes) -> None:
    assert decode_event(expected) == event
    assert type(decode_event(expected)) is type(event)
    assert decode_event(expected.decode()) == event


def test_all_fourteen_variants_are_covered() -> None:
    names = {type(e).__name__ for e, _ in ENCODED}
    assert names == {
        "Init",
        "Hook",
        "UserMessage",
        "Command",
        "Compacting",
        "Compacted",
        "MayBeCompacting",
        "Plan",
        "AssistantText",
        "ToolCall",
        "ToolResult",
        "Complete",
        "ModelSwitch",
        "Filtered",
    }


@pytest.mark.parametrize(
    ("event", "expected"), ENCODED, ids=[f"{type(e).__name__}-{i}" for i, (e, _) in enumerate(ENCODED)]
)
def test_event_kind_is_the_variant_name(event: Event, expected: bytes) -> None:
    kind = event_kind(event)
    assert kind == type(event).__name__
    # The kind is also the JSON tag (or the bare string of a unit variant).
    assert expected.startswith(b'{"' + kind.encode() + b'":') or expected == b'"' + kind.encode() + b'"'


def test_skipped_kinds() -> None:
    assert frozenset({"Filtered", "MayBeCompacting"}) == SKIPPED_KINDS


def test_encode_is_compact_with_no_spaces() -> None:
    e = ToolCall(tool_use_id="a", tool_name="b", input={"k": [1, 2], "m": {"n": None}})
    out = encode_event(e)
    assert b" " not in out
    assert b"\n" not in out


def test_encode_preserves_input_key_insertion_order() -> None:
    e = ToolCall(
        tool_use_id="a", tool_name="mcp__s__t", input={"zeta": 1, "alpha": 2, "mid": {"b": 1, "a": 2}}
    )
    assert encode_event(e).endswith(b'"input":{"zeta":1,"alpha":2,"mid":{"b":1,"a":2}}}}')


def test_encode_float_like_serde() -> None:
    # §2.4: floats can differ from Python's json: serde (ryu) writes 1e-7 where json.dumps writes 1e-07.
    assert json.dumps(1e-7) == "1e-07"
    assert encode_event(Complete(success=True, duration_ms=1, cost_usd=1e-7)) == (
        b'{"Complete":{"success":true,"duration_ms":1,"cost_usd":1e-7}}'
    )


# serde_json prints f64 with ryu's `format_finite`: shortest digits; plain notation with a ".0" for
# integers below 1e16, "0.000ddd" down to 1e-5, scientific otherwise with no "+" and no zero padding.
RYU_FLOATS: list[tuple[float, str]] = [
    (0.0, "0.0"),
    (-0.0, "-0.0"),
    (123.0, "123.0"),
    (0.1, "0.1"),
    (12345678.9, "12345678.9"),
    (0.000123, "0.000123"),
    (1e-5, "0.00001"),
    (1e-6, "1e-6"),
    (1e-7, "1e-7"),
    (1.5e-7, "1.5e-7"),
    (1e15, "1000000000000000.0"),
    (1e16, "1e16"),
    (1.5e16, "1.5e16"),
    (1e300, "1e300"),
    (2.5e-300, "2.5e-300"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e308"),
]


@pytest.mark.parametrize(("value", "text"), RYU_FLOATS, ids=[t for _, t in RYU_FLOATS])
def test_float_format_like_serde_ryu(value: float, text: str) -> None:
    assert encode_event(Complete(success=True, duration_ms=1, cost_usd=value)) == (
        b'{"Complete":{"success":true,"duration_ms":1,"cost_usd":' + text.encode() + b"}}"
    )
    call = ToolCall(tool_use_id="t", tool_name="x", input={"v": [value]})
    assert encode_event(call).endswith(b'"input":{"v":[' + text.encode() + b"]}}}")


# -- escaping identical to serde_json ---------------------------------------------------------

CONTROL_AND_SPECIAL = "".join(chr(c) for c in range(0x20)) + '"\\/\x7f'
UNICODE_SAMPLES = "é中文😀\u2028\u2029\u00a0\u3000\ufeff\u200b\x85"


def test_control_characters_escape_like_serde_by_hand() -> None:
    e = UserMessage(content='\x00\x01\x08\t\n\x0b\x0c\r\x1b\x1f"\\/\x7fé')
    assert encode_event(e) == (
        b'{"UserMessage":{"content":"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001b\\u001f\\"\\\\/'
        + "\x7fé".encode()
        + b'"}}'
    )


@pytest.mark.parametrize(
    "text", [CONTROL_AND_SPECIAL, UNICODE_SAMPLES, CONTROL_AND_SPECIAL + UNICODE_SAMPLES, ""]
)
def test_string_escaping_matches_json_dumps(text: str) -> None:
    assert (
        encode_event(UserMessage(content=text))
        == b'{"UserMessage":{"content":' + dumps(text).encode() + b"}}"
    )
    assert (
        encode_event(AssistantText(text=text)) == b'{"AssistantText":{"text":' + dumps(text).encode() + b"}}"
    )


def test_non_ascii_is_written_raw_utf8() -> None:
    out = encode_event(UserMessage(content="é中😀\u2028"))
    assert out == '{"UserMessage":{"content":"é中😀\u2028"}}'.encode()
    assert b"\\u" not in out


def test_escaping_inside_tool_input_keys_and_values() -> None:
    tool_input = {"k\n\x01é": "v\t\x1f😀", "list": ["\x00", "\u2028"]}
    e = ToolCall(tool_use_id="i\x02", tool_name='n"', file_path="p\\", input=tool_input)
    expected = (
        '{"ToolCall":{"tool_use_id":'
        + dumps("i\x02")
        + ',"tool_name":'
        + dumps('n"')
        + ',"file_path":'
        + dumps("p\\")
        + ',"input":'
        + dumps(tool_input)
        + "}}"
    )
    assert encode_event(e) == expected.encode()
