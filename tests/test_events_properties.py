"""Round trips of the event model's serde JSON (spec §2.1-§2.4) over generated events, against a
reference serializer built from the spec table with Python's json.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from azsd.events import Event, decode_event, encode_event
from tests.event_strategies import any_event
from tests.test_events import U64_MAX, dumps

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


ANY_EVENT = any_event(STR, STR, STR, JSON_VALUE, FLOAT)
PLAIN_EVENT = any_event(
    STR, STR, STR, JSON_NO_FLOAT, st.sampled_from([0.0, 0.25, 0.5, 1.5, 12.0, 0.0123, 3.75])
)

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
