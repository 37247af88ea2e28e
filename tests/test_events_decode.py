"""Decoding the event model's serde JSON (spec §2.2): Rust's leniency, and what it rejects.

Every byte string below is written out by hand from the spec's table.
"""

from __future__ import annotations

import pytest

from azsd.events import (
    AssistantText,
    Compacted,
    Compacting,
    Complete,
    Event,
    EventDecodeError,
    Init,
    ToolCall,
    ToolResult,
    UserMessage,
    decode_event,
    encode_event,
)
from tests.test_events import U64_MAX

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
