"""What `azs bridge` reads and writes: JSON lines in, JSON lines out, and the protocol in between.

Pure functions, no I/O. A line from the editor is one JSON object: an ``id`` (any JSON value, echoed
back), the protocol message's ``op`` and fields (docs/protocol.md), and optionally the bridge's own
``timeout`` (seconds). Each answer is one line: ``{"id", "result"}`` with the reply as the protocol
has it, or ``{"id", "error": {"code", "message"}}``. Notifications are ``{"notify": {...}}``.

Events travel as JSON values, not as JSON text inside a string: the ``data`` of a `WireEvent`
(`eventspage`, `appendreply`, `eventsappended`) and of a `SearchHit` is the event itself, and
`appendevents` takes its ``events`` as values (``{"AssistantText": {"text": "hi"}}``, or the bare
``"Compacting"``), so an editor never parses JSON twice.

>>> parse_line(b'{"id": 7, "op": "status"}')
Incoming(id=7, fields={'op': 'status'}, timeout=None)
>>> from azsd.ipc.protocol import WireEvent
>>> event = WireEvent(seq=1, kind="AssistantText", data='{"AssistantText":{"text":"hi"}}')
>>> line = reply_line(7, AppendReply(events=[event]))
>>> msgspec.json.decode(line)["result"]["events"]
[{'seq': 1, 'kind': 'AssistantText', 'data': {'AssistantText': {'text': 'hi'}}}]
"""

from __future__ import annotations

import itertools
import os
import re
from array import array
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from azsd.errors import AzsdError, ConfigError, DaemonUnavailable, NoReply, ProtocolError, RemoteError
from azsd.ipc.protocol import (
    AppendReply,
    EventsAppended,
    EventsPage,
    Notification,
    Reply,
    Request,
    SearchReply,
)

__all__ = [
    "BRIDGE_OPS",
    "MAX_DEPTH",
    "BadLine",
    "Incoming",
    "error_code",
    "error_line",
    "notify_line",
    "parse_line",
    "reply_line",
    "result_line",
    "to_request",
]

#: The requests the bridge answers itself (they are not protocol messages).
BRIDGE_OPS: Final = frozenset({"subscribe", "unsubscribe"})

#: The deepest nesting of arrays and objects a line may have (a request needs a handful of levels; an
#: event's tool input a few dozen). Deeper lines are refused before they are decoded, as decoding them
#: could exhaust Python's recursion limit.
MAX_DEPTH: Final = 200

#: A JSON string, removed whole before brackets are counted (those inside strings do not nest).
_STRING: Final = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
#: Every byte that is not a bracket; and each opening bracket as +1, each closing one as -1 (a byte).
_NOT_BRACKETS: Final = bytes(set(range(256)) - set(b"[]{}"))
_STEPS: Final = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")

_JSON_DECODER: Final = msgspec.json.Decoder()
_JSON_ENCODER: Final = msgspec.json.Encoder()


class BadLine(AzsdError):
    """A line that is no request: `code` is ``bad_json`` or ``bad_request``; `id` is the request's id
    when the line had one (else None, and the editor matches the error by its order)."""

    def __init__(self, code: str, message: str, id: Any = None) -> None:
        super().__init__(message)
        self.code, self.id = code, id


@dataclass(frozen=True)
class Incoming:
    """One request line: its `id`, the message's fields (``op`` among them), the bridge's `timeout`."""

    id: Any
    fields: dict[str, Any]
    timeout: float | None


def too_deep(line: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the arrays and objects of a line of valid JSON nest more than `limit` levels (brackets
    inside strings do not count): the highest running sum of +1 per opening bracket, -1 per closing.

    >>> too_deep(b'{"a": [1, {"b": "[[[["}]}', limit=3), too_deep(b"[" * 500 + b"]" * 500)
    (False, True)
    """
    if line.count(b"[") + line.count(b"{") <= limit:
        return False  # not enough brackets to be deeper
    steps = array("b", _STRING.sub(b"", line).translate(_STEPS, _NOT_BRACKETS))
    return max(itertools.accumulate(steps), default=0) > limit


def parse_line(line: bytes) -> Incoming:
    """A request from one line, or :class:`BadLine` saying what is wrong with it.

    >>> parse_line(b'{"op": "status"}')
    Traceback (most recent call last):
    ...
    azsd_client.bridge_wire.BadLine: a request needs an "id" (any JSON value, echoed in its reply)
    """
    too_deep_said = f"a line nested deeper than {MAX_DEPTH} levels of arrays and objects"
    try:
        value = _JSON_DECODER.decode(line)
    except msgspec.DecodeError as exc:
        raise BadLine("bad_json", f"not a JSON line: {exc}") from None
    except RecursionError:  # deeper than the stack allows (Python's recursion limit)
        raise BadLine("bad_request", too_deep_said) from None
    if too_deep(line):  # what later steps (conversion, encoding, the daemon) could not handle
        raise BadLine("bad_request", too_deep_said)
    if not isinstance(value, dict):
        raise BadLine("bad_request", f"a request is a JSON object, not {type(value).__name__}")
    if "id" not in value:
        raise BadLine("bad_request", 'a request needs an "id" (any JSON value, echoed in its reply)')
    id = value.pop("id")
    timeout = value.pop("timeout", None)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)):
        raise BadLine("bad_request", f'"timeout" is a number of seconds, not {timeout!r}', id)
    if timeout is not None and not 0 < timeout < 86_400:
        raise BadLine("bad_request", f'"timeout" must be more than 0 s, less than a day: {timeout}', id)
    if not isinstance(value.get("op"), str):
        raise BadLine("bad_request", 'a request needs an "op" (a string, as in docs/protocol.md)', id)
    return Incoming(id, value, None if timeout is None else float(timeout))


#: The searches whose query is plain text unless the line gives ``"words": false`` (FTS5 syntax).
_PLAIN_TEXT_SEARCHES: Final = frozenset({"search", "remotesearch"})


def _canonical_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """`root` made canonical (as notification topics carry it), `events` turned into JSON text, a
    search's query plain text unless the line says ``"words": false``."""
    out = dict(fields)
    root = out.get("root")
    if isinstance(root, str) and os.path.isabs(root):
        out["root"] = os.path.realpath(root)
    if out.get("op") in _PLAIN_TEXT_SEARCHES:
        out.setdefault("words", True)  # as `azs search`: plain text unless the line says otherwise
    events = out.get("events")
    if out.get("op") == "appendevents" and isinstance(events, list):
        out["events"] = [_JSON_ENCODER.encode(event).decode() for event in events]
    return out


def to_request(fields: dict[str, Any]) -> Request:
    """The protocol message the fields name (`root` canonical, events encoded), or :class:`BadLine`.

    >>> to_request({"op": "getsession", "root": "/", "session": "3"})
    Traceback (most recent call last):
    ...
    azsd_client.bridge_wire.BadLine: Expected `int`, got `str` - at `$.session`
    """
    try:
        request: Request = msgspec.convert(_canonical_fields(fields), type=Request)
    except msgspec.ValidationError as exc:
        raise BadLine("bad_request", str(exc)) from None
    return request


def _event_value(text: str) -> Any:
    """An event's JSON text as a value (text that does not parse stays a string)."""
    try:
        return _JSON_DECODER.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return text


def _expanded(message: Reply | Notification) -> Any:
    """The message as JSON-ready builtins, each event's data a value rather than text."""
    value: dict[str, Any] = msgspec.to_builtins(message)
    if isinstance(message, EventsPage | AppendReply | EventsAppended):
        for event in value["events"]:
            event["data"] = _event_value(event["data"])
    elif isinstance(message, SearchReply):
        for hit in value["hits"]:
            hit["data"] = _event_value(hit["data"])
    return value


def _line(value: Any) -> bytes:
    return _JSON_ENCODER.encode(value)


def reply_line(id: Any, reply: Reply) -> bytes:
    """The line answering request `id` with the daemon's `reply` (an `errorreply` becomes an error)."""
    return result_line(id, _expanded(reply))


def result_line(id: Any, result: Any) -> bytes:
    """The line answering request `id` with `result` (JSON-ready)."""
    return _line({"id": id, "result": result})


def error_line(id: Any, code: str, message: str) -> bytes:
    """The line answering request `id` with an error.

    >>> error_line(None, "bad_json", "not a JSON line")
    b'{"id":null,"error":{"code":"bad_json","message":"not a JSON line"}}'
    """
    return _line({"id": id, "error": {"code": code, "message": message}})


def notify_line(note: Notification | dict[str, Any]) -> bytes:
    """A notification line: the daemon's (events as values) or the bridge's own (a dict with an op)."""
    return _line({"notify": note if isinstance(note, dict) else _expanded(note)})


def error_code(exc: AzsdError) -> str:
    """The code an error is answered with: the daemon's own, or the bridge's for errors on this side.

    >>> error_code(NoReply("late")), error_code(RemoteError("not_found", "no S9"))
    ('no_reply', 'not_found')
    """
    if isinstance(exc, RemoteError):
        return exc.code
    if isinstance(exc, BadLine):
        return exc.code
    if isinstance(exc, NoReply):
        return "no_reply"
    if isinstance(exc, DaemonUnavailable):
        return "unavailable"
    if isinstance(exc, ProtocolError):
        return "protocol_error"
    if isinstance(exc, ConfigError):
        return "config_error"
    return "error"
