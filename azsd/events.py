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

from typing import Annotated, Any, Final

import msgspec

__all__ = [
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
    "encode_event",
    "event_kind",
]

_U64_MAX: Final = 2**64 - 1
#: msgspec bounds stop at int64, so the u64 upper bound is checked in `decode_event`.
U64 = Annotated[int, msgspec.Meta(ge=0)]


class _Variant(msgspec.Struct, frozen=True, kw_only=True):
    """Base of the event variants: frozen, keyword-only, unknown keys ignored on decode."""


class Init(_Variant, frozen=True, kw_only=True):
    cwd: str
    model: str


class Hook(_Variant, frozen=True, kw_only=True):
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
    if isinstance(event, Complete) and event.duration_ms > _U64_MAX:
        raise EventDecodeError(f"Complete: duration_ms {event.duration_ms} does not fit in a u64")
    return event
