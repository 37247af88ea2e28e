"""The AZUREAL event model and its exact serde JSON (spec/store-format.md §2.1-§2.2).

Each of the 14 variants is a frozen Struct. On disk an event is serde's externally tagged JSON:
``{"UserMessage":{"content":"hi"}}``, fields in declaration order, compact separators, and the unit
variants as a bare string (``"Compacting"``). :func:`encode_event` writes exactly that;
:func:`decode_event` reads it the way Rust does: unknown keys are ignored, a missing ``file_path``
is null, and anything else that does not fit (a missing field, a wrong type, an unknown variant)
raises :class:`EventDecodeError` so the caller can skip and count the row.

>>> encode_event(UserMessage(content="hi"))
b'{"UserMessage":{"content":"hi"}}'
>>> decode_event(b'"Compacted"')
Compacted()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Annotated, Any, Final

import msgspec

__all__ = [
    "MAX_NESTING",
    "NOTICE_HOOKS",
    "REASONING_HOOKS",
    "SKIPPED_KINDS",
    "AssistantText",
    "Command",
    "Compacted",
    "Compacting",
    "Complete",
    "Event",
    "EventDecodeError",
    "Filtered",
    "Hook",
    "Init",
    "MayBeCompacting",
    "ModelSwitch",
    "Plan",
    "ToolCall",
    "ToolResult",
    "UserMessage",
    "decode_event",
    "decode_events",
    "decode_new_event",
    "encode_event",
    "event_kind",
    "nests_deeper",
]

_U64_MAX: Final = 2**64 - 1

#: Hook names azsd gives a model's reasoning: Claude's thinking blocks, Codex's and OpenCode's
#: reasoning. Kept as Hooks so that AZUREAL shows them as a note and no context renders them (§5.2):
#: they are never fed to the next agent as `## Assistant`.
REASONING_HOOKS: Final = frozenset({"thinking", "reasoning"})
#: Hook names of what an agent program itself wrote into a session, never a prompt nor an answer: a
#: retry notice (``Reconnecting... 1/5``), an interruption (``[Request interrupted by user]``), and
#: any other line the program marks as its own (`isSynthetic`).
NOTICE_HOOKS: Final = frozenset({"retry", "interrupted", "synthetic"})
#: How deeply an event's JSON may nest when azsd takes it in (a parsed line, an appended event).
#: msgspec recurses once per level under the thread's recursion limit (1000, shared with the frames
#: above it), so an event nested 960 deep decodes in one place and fails in a deeper one (the search
#: indexer): events are kept far below that, wherever they are read later.
MAX_NESTING: Final = 200
#: msgspec bounds stop at int64, so the u64 upper bound is checked in `decode_event`.
U64 = Annotated[int, msgspec.Meta(ge=0)]


class _Variant(msgspec.Struct, frozen=True, kw_only=True):
    """Base of the event variants: frozen, keyword-only, unknown keys ignored on decode."""


class Init(_Variant, frozen=True, kw_only=True):
    cwd: str
    model: str


class Hook(_Variant, frozen=True, kw_only=True):
    """A hook's output, and (azsd's use, which AZUREAL reads as a hook and never puts in a context)
    what an agent wrote that is neither prompt nor answer: see :data:`REASONING_HOOKS` and
    :data:`NOTICE_HOOKS`."""

    name: str
    output: str


class UserMessage(_Variant, frozen=True, kw_only=True):
    content: str


class Command(_Variant, frozen=True, kw_only=True):
    name: str


class Compacting(_Variant, frozen=True, kw_only=True):
    pass


class Compacted(_Variant, frozen=True, kw_only=True):
    pass


class MayBeCompacting(_Variant, frozen=True, kw_only=True):
    pass


class Filtered(_Variant, frozen=True, kw_only=True):
    pass


class Plan(_Variant, frozen=True, kw_only=True):
    name: str
    content: str


class AssistantText(_Variant, frozen=True, kw_only=True):
    text: str


class ToolCall(_Variant, frozen=True, kw_only=True):
    tool_use_id: str
    tool_name: str
    file_path: str | None = None
    input: Any


class ToolResult(_Variant, frozen=True, kw_only=True):
    tool_use_id: str
    tool_name: str
    file_path: str | None = None
    content: str
    is_error: bool


class Complete(_Variant, frozen=True, kw_only=True):
    success: bool
    duration_ms: U64
    cost_usd: float


class ModelSwitch(_Variant, frozen=True, kw_only=True):
    model: str


Event = (
    Init
    | Hook
    | UserMessage
    | Command
    | Compacting
    | Compacted
    | MayBeCompacting
    | Plan
    | AssistantText
    | ToolCall
    | ToolResult
    | Complete
    | ModelSwitch
    | Filtered
)

_VARIANTS: Final[tuple[type[_Variant], ...]] = (
    Init,
    Hook,
    UserMessage,
    Command,
    Compacting,
    Compacted,
    MayBeCompacting,
    Plan,
    AssistantText,
    ToolCall,
    ToolResult,
    Complete,
    ModelSwitch,
    Filtered,
)
_UNIT: Final = frozenset({Compacting, Compacted, MayBeCompacting, Filtered})
_BY_NAME: Final[dict[str, type[_Variant]]] = {cls.__name__: cls for cls in _VARIANTS}
_UNIT_BY_JSON: Final[dict[bytes, _Variant]] = {f'"{cls.__name__}"'.encode(): cls() for cls in _UNIT}
_DECODERS: Final[dict[str, msgspec.json.Decoder[Any]]] = {
    name: msgspec.json.Decoder(cls) for name, cls in _BY_NAME.items() if cls not in _UNIT
}
_ENVELOPE: Final = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW_ARRAY: Final = msgspec.json.Decoder(list[msgspec.Raw])
#: Per variant, a decoder of a JSON array of `{"<Variant>":{…}}` objects (that key and no other)
#: and the getter of the event inside each.
_ARRAY_DECODERS: Final[dict[str, tuple[msgspec.json.Decoder[Any], Callable[[Any], Any]]]] = {
    name: (
        msgspec.json.Decoder(
            list[msgspec.defstruct(f"_{name}Row", [(name, cls)], forbid_unknown_fields=True)]  # type: ignore[misc]
        ),
        attrgetter(name),
    )
    for name, cls in _BY_NAME.items()
    if cls not in _UNIT
}
_ENCODER: Final = msgspec.json.Encoder()

#: Variants that `append_events` never stores (and that use no `seq`).
SKIPPED_KINDS: Final = frozenset({"Filtered", "MayBeCompacting"})


class EventDecodeError(ValueError):
    """A stored row's JSON is not an event Rust would load; the row is to be skipped."""


def event_kind(event: Event) -> str:
    """The variant name, as stored in the `kind` column.

    >>> event_kind(AssistantText(text="x"))
    'AssistantText'
    """
    return type(event).__name__


def encode_event(event: Event) -> bytes:
    """The exact serde JSON of an event (compact, fields in declaration order)."""
    name = type(event).__name__
    if type(event) in _UNIT:
        return f'"{name}"'.encode()
    return b'{"' + name.encode() + b'":' + _ENCODER.encode(event) + b"}"


def decode_event(data: bytes | str) -> Event:
    """Read one event from its serde JSON, as leniently as Rust and no more.

    Raises:
        EventDecodeError: the JSON is invalid, the variant unknown, or a field missing or mistyped.
    """
    raw = data.encode() if isinstance(data, str) else data
    unit = _UNIT_BY_JSON.get(raw.strip())
    if unit is not None:
        return unit  # type: ignore[return-value]
    try:
        envelope = _ENVELOPE.decode(raw)
    except msgspec.DecodeError as exc:
        raise EventDecodeError(f"not an externally tagged event: {exc}") from None
    except RecursionError:
        raise EventDecodeError("nested too deeply to decode") from None
    if len(envelope) != 1:
        raise EventDecodeError(f"an event has exactly one variant key, got {len(envelope)}")
    ((name, payload),) = envelope.items()
    cls = _BY_NAME.get(name)
    if cls is None:
        raise EventDecodeError(f"unknown event variant {name!r}")
    if cls in _UNIT:
        if bytes(payload).strip() != b"null":
            raise EventDecodeError(f"unit variant {name} carries a payload")
        return cls()  # type: ignore[return-value]
    try:
        event: Event = _DECODERS[name].decode(payload)
    except msgspec.ValidationError as exc:
        raise EventDecodeError(f"{name}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise EventDecodeError(f"{name}: {exc}") from None
    except RecursionError:
        raise EventDecodeError(f"{name}: nested too deeply to decode") from None
    if isinstance(event, Complete) and event.duration_ms > _U64_MAX:
        raise EventDecodeError(f"Complete: duration_ms {event.duration_ms} does not fit in a u64")
    return event


def decode_events(rows: Sequence[tuple[str, bytes]]) -> list[Event | EventDecodeError]:
    """:func:`decode_event` of each `(kind column, JSON)` row, the error in place of an unreadable one.

    The rows of one kind are decoded in one msgspec call, as a JSON array of their bytes (one Python
    call per row was most of the time a cold context took). That array is only trusted when it
    splits back into exactly the rows (a corrupt row could otherwise swallow its neighbour's comma);
    a group that does not, or holds a row that is not its kind's valid event, is decoded row by row,
    which gives the same events and errors.

    >>> decode_events([("Command", b'{"Command":{"name":"/x"}}'), ("Command", b'{"Command":{}}')])
    [Command(name='/x'), EventDecodeError('Command: Object missing required field `name`')]
    """
    out: list[Event | EventDecodeError | None] = [None] * len(rows)
    groups: dict[str, list[int]] = {}
    for i, (kind, _) in enumerate(rows):
        groups.setdefault(kind, []).append(i)
    for kind, members in groups.items():
        found = _decode_group(kind, [rows[i][1] for i in members]) if len(members) > 1 else None
        if found is not None:
            for i, event in zip(members, found, strict=True):
                out[i] = event
            continue
        for i in members:
            try:
                out[i] = decode_event(rows[i][1])
            except EventDecodeError as exc:
                out[i] = exc
    return out  # type: ignore[return-value]  # no None is left


def _decode_group(kind: str, jsons: list[bytes]) -> list[Event] | None:
    """The events of rows of one kind, or None if any of them is not exactly one such event."""
    decoding = _ARRAY_DECODERS.get(kind)
    if decoding is None:  # a unit variant (a bare string) or an unknown kind
        return None
    if not all(json[:1] == b"{" for json in jsons):
        return None  # leading whitespace would shift the spans compared below
    array = b"[" + b",".join(jsons) + b"]"
    try:
        spans = _RAW_ARRAY.decode(array)
        # every row starts at its first byte, so equal lengths mean each element is exactly its row
        if len(spans) != len(jsons) or any(map(int.__ne__, map(len, spans), map(len, jsons))):
            return None
        decoder, get = decoding
        events: list[Event] = list(map(get, decoder.decode(array)))
    except (msgspec.DecodeError, RecursionError):
        return None
    if kind == "Complete" and any(e.duration_ms > _U64_MAX for e in events):  # type: ignore[union-attr]
        return None
    return events


def decode_new_event(data: bytes | str) -> Event:
    """Read an event azsd is taking in (a client's append): :func:`decode_event`, refusing one that
    nests deeper than :data:`MAX_NESTING` as well."""
    event = decode_event(data)
    raw = data.encode() if isinstance(data, str) else data
    if raw.count(b"[") + raw.count(b"{") > MAX_NESTING and nests_deeper(msgspec.json.decode(raw)):
        raise EventDecodeError(f"nested more than {MAX_NESTING} levels deep")
    return event


def nests_deeper(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether the decoded JSON `value` (dicts, lists, scalars) nests more than `limit` levels.

    Iterative, so it answers for any depth.

    >>> nests_deeper([[["x"]]], limit=2), nests_deeper({"a": ["x"]}, limit=2)
    (True, False)
    """
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        if depth >= limit:
            return True
        pending.extend((child, depth + 1) for child in item)
    return False
