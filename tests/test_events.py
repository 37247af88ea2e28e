"""The event model's serde JSON (spec §2.1-§2.2): exact encoding, Rust's decode leniency, escaping.

Every expected byte string below is written out by hand from the spec's table: externally tagged,
fields in declaration order, compact separators, unit variants as a bare string.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from azsd.events import (
    SKIPPED_KINDS,
    AssistantText,
    Command,
    Compacted,
    Compacting,
    Complete,
    Event,
    EventDecodeError,
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


# -- decode leniency (§2.2) -------------------------------------------------------------------

ACCEPTED: list[tuple[bytes, Event]] = [
    # unknown keys are ignored (including the skipped _uuid / _message_id / _session_id)
    (b'{"UserMessage":{"content":"hi","_uuid":"u-1","extra":[1,2]}}', UserMessage(content="hi")),
    (
        b'{"AssistantText":{"_message_id":"m","text":"t","_session_id":"s"}}',
        AssistantText(text="t"),
    ),
    (b'{"Init":{"cwd":"/w","model":"m","unknown":{"deep":null}}}', Init(cwd="/w", model="m")),
    # field order does not matter on read
    (b'{"Init":{"model":"m","cwd":"/w"}}', Init(cwd="/w", model="m")),
    (
        b'{"Complete":{"cost_usd":0.5,"duration_ms":7,"success":false}}',
        Complete(success=False, duration_ms=7, cost_usd=0.5),
    ),
    # missing file_path is null
    (
        b'{"ToolCall":{"tool_use_id":"a","tool_name":"Read","input":{"file_path":"/x"}}}',
        ToolCall(tool_use_id="a", tool_name="Read", file_path=None, input={"file_path": "/x"}),
    ),
    (
        b'{"ToolResult":{"tool_use_id":"a","tool_name":"Bash","content":"x","is_error":false}}',
        ToolResult(tool_use_id="a", tool_name="Bash", file_path=None, content="x", is_error=False),
    ),
    (
        b'{"ToolResult":{"tool_use_id":"a","tool_name":"Bash","file_path":null,"content":"x","is_error":true}}',
        ToolResult(tool_use_id="a", tool_name="Bash", file_path=None, content="x", is_error=True),
    ),
    # input is required but may be null
    (
        b'{"ToolCall":{"tool_use_id":"a","tool_name":"T","file_path":null,"input":null}}',
        ToolCall(tool_use_id="a", tool_name="T", file_path=None, input=None),
    ),
    (
        b'{"ToolCall":{"tool_use_id":"a","tool_name":"T","input":[1,"x",false,2.5]}}',
        ToolCall(tool_use_id="a", tool_name="T", input=[1, "x", False, 2.5]),
    ),
    # unit variants: the bare string, and {"X":null}
    (b'"Compacting"', Compacting()),
    (b'"Compacted"', Compacted()),
    (b'{"Compacting":null}', Compacting()),
    (b'{"Compacted":null}', Compacted()),
    (b'{"Compacting": null}', Compacting()),
    # JSON whitespace and escapes are fine
    (b' {"Init" : {"cwd" : "c" , "model" : "m"}}\n', Init(cwd="c", model="m")),
    (b'{"UserMessage":{"content":"\\u00e9\\n\\ud83d\\ude00"}}', UserMessage(content="é\n😀")),
    # u64 range, and an integer cost (serde's f64 accepts integers)
    (
        b'{"Complete":{"success":true,"duration_ms":18446744073709551615,"cost_usd":0}}',
        Complete(success=True, duration_ms=U64_MAX, cost_usd=0.0),
    ),
]


@pytest.mark.parametrize(("raw", "expected"), ACCEPTED, ids=[r.decode()[:50] for r, _ in ACCEPTED])
def test_decode_accepts(raw: bytes, expected: Event) -> None:
    got = decode_event(raw)
    assert got == expected
    assert type(got) is type(expected)


def test_decoded_integer_cost_reencodes_as_float() -> None:
    got = decode_event(b'{"Complete":{"success":true,"duration_ms":1,"cost_usd":0}}')
    assert isinstance(got, Complete)
    assert isinstance(got.cost_usd, float)
    assert encode_event(got) == b'{"Complete":{"success":true,"duration_ms":1,"cost_usd":0.0}}'


def test_decoded_unknown_keys_are_not_written_back() -> None:
    got = decode_event(b'{"UserMessage":{"_uuid":"u","content":"hi","x":1}}')
    assert encode_event(got) == b'{"UserMessage":{"content":"hi"}}'


def test_decoded_null_unit_payload_is_written_back_as_bare_string() -> None:
    assert encode_event(decode_event(b'{"Compacting":null}')) == b'"Compacting"'


REJECTED: list[bytes] = [
    # not JSON / not an event
    b"",
    b"{",
    b'{"Init":{"cwd":"c","model":"m"}',
    b'{"Init":{"cwd":"c","model":"m"}}x',
    b"null",
    b"42",
    b"[]",
    b"{}",
    b'{"Init":{"cwd":"c","model":"m"},"Hook":{"name":"n","output":"o"}}',
    # unknown variant (names are case-sensitive)
    b'"Bogus"',
    b'{"Bogus":{}}',
    b'{"Bogus":null}',
    b'{"userMessage":{"content":"x"}}',
    b'"compacting"',
    # a struct variant written as a bare string or with a null / non-object payload
    b'"Init"',
    b'"UserMessage"',
    b'{"UserMessage":null}',
    b'{"UserMessage":"hi"}',
    b'{"UserMessage":42}',
    # missing fields other than file_path
    b'{"UserMessage":{}}',
    b'{"Init":{"cwd":"c"}}',
    b'{"Hook":{"name":"n"}}',
    b'{"Command":{}}',
    b'{"Plan":{"name":"n"}}',
    b'{"AssistantText":{"content":"t"}}',
    b'{"ModelSwitch":{}}',
    b'{"ToolCall":{"tool_use_id":"a","tool_name":"T","file_path":null}}',
    b'{"ToolCall":{"tool_name":"T","input":null}}',
    b'{"ToolCall":{"tool_use_id":"a","input":null}}',
    b'{"ToolResult":{"tool_use_id":"a","tool_name":"B","content":"x"}}',
    b'{"ToolResult":{"tool_use_id":"a","tool_name":"B","is_error":false}}',
    b'{"Complete":{"success":true,"duration_ms":1}}',
    b'{"Complete":{"success":true,"cost_usd":0.0}}',
    b'{"Complete":{"duration_ms":1,"cost_usd":0.0}}',
    # wrong types
    b'{"Complete":{"success":true,"duration_ms":5000.0,"cost_usd":0.0}}',
    b'{"Complete":{"success":true,"duration_ms":-1,"cost_usd":0.0}}',
    b'{"Complete":{"success":true,"duration_ms":18446744073709551616,"cost_usd":0.0}}',
    b'{"Complete":{"success":true,"duration_ms":"5000","cost_usd":0.0}}',
    b'{"Complete":{"success":true,"duration_ms":null,"cost_usd":0.0}}',
    b'{"Complete":{"success":1,"duration_ms":1,"cost_usd":0.0}}',
    b'{"Complete":{"success":"true","duration_ms":1,"cost_usd":0.0}}',
    b'{"Complete":{"success":true,"duration_ms":1,"cost_usd":"0.1"}}',
    b'{"Complete":{"success":true,"duration_ms":1,"cost_usd":null}}',
    b'{"UserMessage":{"content":5}}',
    b'{"UserMessage":{"content":null}}',
    b'{"UserMessage":{"content":["a"]}}',
    b'{"Init":{"cwd":"c","model":false}}',
    b'{"Hook":{"name":{},"output":"o"}}',
    b'{"ToolResult":{"tool_use_id":"a","tool_name":"B","content":"x","is_error":"false"}}',
    b'{"ToolResult":{"tool_use_id":"a","tool_name":"B","content":"x","is_error":0}}',
    b'{"ToolResult":{"tool_use_id":"a","tool_name":"B","file_path":5,"content":"x","is_error":false}}',
    b'{"ToolCall":{"tool_use_id":1,"tool_name":"T","input":null}}',
    b'{"ToolCall":{"tool_use_id":"a","tool_name":"T","file_path":["/x"],"input":null}}',
    # a lone surrogate escape is not a Rust string
    b'{"UserMessage":{"content":"\\ud800"}}',
    b'{"AssistantText":{"text":"a\\udc00b"}}',
]


@pytest.mark.parametrize("raw", REJECTED, ids=[r.decode()[:60] or "<empty>" for r in REJECTED])
def test_decode_rejects(raw: bytes) -> None:
    with pytest.raises(EventDecodeError):
        decode_event(raw)


def test_decode_error_is_a_value_error() -> None:
    assert issubclass(EventDecodeError, ValueError)


# -- hypothesis round trips -------------------------------------------------------------------

TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]))
NASTY_TEXT = st.lists(
    st.sampled_from(["\x00", "\x1f", "\x7f", '"', "\\", "/", "\n", "\r", "\t", "é", "😀", "\u2028", "a"]),
    max_size=20,
).map("".join)
STR = st.one_of(TEXT, NASTY_TEXT)
FLOAT = st.floats(allow_nan=False, allow_infinity=False)
JSON_SCALAR: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), U64_MAX), FLOAT, STR
)
JSON_VALUE: st.SearchStrategy[Any] = st.recursive(
    JSON_SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(STR, inner, max_size=4)),
    max_leaves=15,
)
# The same, without floats, whose text form may legitimately differ from Python's json (§2.4).
JSON_NO_FLOAT: st.SearchStrategy[Any] = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), U64_MAX), STR),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(STR, inner, max_size=4)),
    max_leaves=15,
)
OPT_STR = st.one_of(st.none(), STR)


def events(json_value: st.SearchStrategy[Any], cost: st.SearchStrategy[float]) -> st.SearchStrategy[Event]:
    return st.one_of(
        st.builds(Init, cwd=STR, model=STR),
        st.builds(Hook, name=STR, output=STR),
        st.builds(UserMessage, content=STR),
        st.builds(Command, name=STR),
        st.builds(Compacting),
        st.builds(Compacted),
        st.builds(MayBeCompacting),
        st.builds(Plan, name=STR, content=STR),
        st.builds(AssistantText, text=STR),
        st.builds(ToolCall, tool_use_id=STR, tool_name=STR, file_path=OPT_STR, input=json_value),
        st.builds(
            ToolResult, tool_use_id=STR, tool_name=STR, file_path=OPT_STR, content=STR, is_error=st.booleans()
        ),
        st.builds(Complete, success=st.booleans(), duration_ms=st.integers(0, U64_MAX), cost_usd=cost),
        st.builds(ModelSwitch, model=STR),
        st.builds(Filtered),
    )


ANY_EVENT = events(JSON_VALUE, FLOAT)
PLAIN_EVENT = events(JSON_NO_FLOAT, st.sampled_from([0.0, 0.25, 0.5, 1.5, 12.0, 0.0123, 3.75]))

UNIT_NAMES = ("Compacting", "Compacted", "MayBeCompacting", "Filtered")
FIELDS: dict[str, tuple[str, ...]] = {
    "Init": ("cwd", "model"),
    "Hook": ("name", "output"),
    "UserMessage": ("content",),
    "Command": ("name",),
    "Plan": ("name", "content"),
    "AssistantText": ("text",),
    "ToolCall": ("tool_use_id", "tool_name", "file_path", "input"),
    "ToolResult": ("tool_use_id", "tool_name", "file_path", "content", "is_error"),
    "Complete": ("success", "duration_ms", "cost_usd"),
    "ModelSwitch": ("model",),
}


def reference_json(event: Event) -> str:
    """serde's output, built from the spec table with Python's json (floats aside)."""
    name = type(event).__name__
    if name in UNIT_NAMES:
        return f'"{name}"'
    payload = {field: getattr(event, field) for field in FIELDS[name]}
    return dumps({name: payload})


@given(ANY_EVENT)
def test_round_trip_encode_decode(event: Event) -> None:
    data = encode_event(event)
    back = decode_event(data)
    assert back == event
    assert type(back) is type(event)
    assert encode_event(back) == data


@given(ANY_EVENT)
def test_encoding_is_valid_json_with_one_tag(event: Event) -> None:
    parsed = json.loads(encode_event(event))
    name = type(event).__name__
    if name in UNIT_NAMES:
        assert parsed == name
    else:
        assert isinstance(parsed, dict)
        assert list(parsed) == [name]
        assert list(parsed[name]) == list(FIELDS[name])


@given(PLAIN_EVENT)
def test_encoding_matches_reference_serializer(event: Event) -> None:
    assert encode_event(event) == reference_json(event).encode()
