"""The wire format stays byte for byte: every message encodes to the bytes recorded in
``tests/data/wire.txt`` and decodes back to the same value.

Each message is built twice from its own type information (see :func:`sample`): with every field
filled (``full``) and with only the required ones (``min``). A message added later is recorded by
running this file with ``AZSD_RECORD_WIRE=1`` (only missing entries are written); an entry that no
longer matches means the wire changed, which the protocol's evolution rules forbid.
"""

from __future__ import annotations

import os
import types
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest

from azsd.ipc import protocol as p

ENCODER = msgspec.msgpack.Encoder()

RECORDED = Path(__file__).parent / "data" / "wire.txt"
UNIONS: dict[str, Any] = {
    "request": p.Request,
    "reply": p.Reply,
    "notification": p.Notification,
    "sync_notification": p.SyncCaughtUp,
}
DECODERS = {
    "request": p.decode_request,
    "reply": p.decode_reply,
    "notification": p.decode_notification,
    "sync_notification": p.decode_sync_notification,
}


def _value(tp: Any, full: bool) -> Any:
    """A deterministic value of the annotation `tp`."""
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return typing.get_args(tp)[-1 if full else 0]
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        return _value(options[0], full)
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_value(item, full), _value(item, not full)]
    if origin is tuple:
        item = typing.get_args(tp)[0]
        return (_value(item, full), _value(item, full))
    if origin is dict:
        _, item = typing.get_args(tp)
        return {"alpha": _value(item, full), "beta": _value(item, not full)}
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return sample(tp, full)
    return {bool: True, int: 42, float: 1.25, str: "wire ✓"}[tp]


def sample(cls: type[msgspec.Struct], full: bool) -> msgspec.Struct:
    """An instance of `cls`: every field set (`full`), or only those without a default."""
    hints = typing.get_type_hints(cls, include_extras=False)
    info = msgspec.structs.fields(cls)
    kwargs = {
        f.name: _value(hints[f.name], full) for f in info if f.name != "protocol" and (full or f.required)
    }
    return cls(**kwargs)


def messages() -> list[tuple[str, str, type[msgspec.Struct]]]:
    return [
        (kind, cls.__name__, cls)
        for kind, union in UNIONS.items()
        for cls in (typing.get_args(union) or (union,))
    ]


def _recorded() -> dict[str, bytes]:
    out = {}
    for line in RECORDED.read_text().splitlines():
        name, hexed = line.split(" ", 1)
        out[name] = bytes.fromhex(hexed)
    return out


def test_every_message_is_recorded_and_encodes_to_its_recorded_bytes() -> None:
    recorded = _recorded()
    if os.environ.get("AZSD_RECORD_WIRE") == "1":
        added = {
            f"{kind}.{name}.{variant}": ENCODER.encode(sample(cls, variant == "full"))
            for kind, name, cls in messages()
            for variant in ("full", "min")
            if f"{kind}.{name}.{variant}" not in recorded
        }
        with RECORDED.open("a") as out:
            out.writelines(f"{key} {data.hex()}\n" for key, data in added.items())
        recorded.update(added)
    missing = []
    for kind, name, cls in messages():
        for variant in ("full", "min"):
            key = f"{kind}.{name}.{variant}"
            if key not in recorded:
                missing.append(key)
                continue
            message = sample(cls, variant == "full")
            assert ENCODER.encode(message) == recorded[key], f"{key}: the bytes on the wire changed"
            assert DECODERS[kind](recorded[key]) == message, f"{key}: the recorded bytes decode differently"
    assert not missing, f"not recorded (run with AZSD_RECORD_WIRE=1): {missing}"


@pytest.mark.parametrize("kind", sorted(UNIONS))
def test_recorded_messages_still_exist(kind: str) -> None:
    """A message is never removed from the protocol: every recorded one is still in its union."""
    names = {cls.__name__ for cls in (typing.get_args(UNIONS[kind]) or (UNIONS[kind],))}
    recorded = {key.split(".")[1] for key in _recorded() if key.startswith(kind + ".")}
    assert recorded <= names
