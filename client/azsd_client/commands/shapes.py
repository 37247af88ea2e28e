"""The ``--json`` shapes of `azs`: protocol values as the stable objects docs/cli-json.md documents.

What a script reads must not change when the wire protocol grows, and must not name its messages:
replies lose their ``op`` and ``protocol`` fields, a stored event's JSON is an object (not a string
holding JSON), and notifications say what they are in ``type``. Pure functions, no I/O.

>>> event(WireEvent(seq=3, kind="Filtered", data='"Filtered"'))
{'seq': 3, 'kind': 'Filtered', 'event': 'Filtered'}
>>> from azsd.ipc.protocol import ContextReply
>>> plain(ContextReply(prompt="hi"))
{'prompt': 'hi'}
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from azsd.ipc.protocol import (
    EventsAppended,
    Notification,
    RemoteHit,
    SearchHit,
    SessionChanged,
    SessionCreated,
    WireEvent,
)

__all__ = ["change", "error", "event", "hit", "notification", "plain", "remote_hit"]

#: What the wire protocol adds to every reply and notification, and a script has no use for.
_WIRE_FIELDS: Final = ("op", "protocol")


def plain(value: Any) -> Any:
    """`value` as JSON-ready builtins; a protocol message without its ``op`` and ``protocol`` fields.

    >>> plain({"protocol": 1})
    {'protocol': 1}
    """
    built = msgspec.to_builtins(value)
    tagged = isinstance(value, msgspec.Struct) and value.__struct_config__.tag is not None
    if tagged and isinstance(built, dict):
        for name in _WIRE_FIELDS:
            built.pop(name, None)
    return built


def _decoded(data: str) -> Any:
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None


def event(item: WireEvent) -> dict[str, Any]:
    """A stored event: ``{"seq", "kind", "event"}``, the event as stored (serde's external tagging:
    ``{"AssistantText": {"text": …}}``, or a bare string for a variant without fields)."""
    shape = {"seq": item.seq, "kind": item.kind, "event": _decoded(item.data)}
    if isinstance(item.subagent, str):  # (an event of a full record a sub-agent made)
        shape["subagent"] = item.subagent
    if isinstance(item.at, str):  # (an event of a full record: when its line was written)
        shape["at"] = item.at
    return shape


def change(note: SessionChanged) -> dict[str, Any]:
    """A session renamed, completed, archived, deleted…: ``{"type": "changed", …}``."""
    return {
        "type": "changed", "root": note.root, "seq": note.seq, "notification_seq": note.seq,
        "session_id": note.session_id, "change": note.change,
        "session": plain(note.session) if note.session is not None else None,
    }  # fmt: skip


def notification(note: Notification) -> dict[str, Any]:
    """`azs watch`: ``{"type": "created" | "changed" | "appended", "root", "seq", "notification_seq",
    …}``: `notification_seq` numbers the daemon's notifications (it is not an event's seq); `seq` is
    the same number under its older name."""
    match note:
        case SessionCreated():
            return {
                "type": "created", "root": note.root, "seq": note.seq, "notification_seq": note.seq,
                "session": plain(note.session),
            }  # fmt: skip
        case SessionChanged():
            return change(note)
        case EventsAppended():
            return {
                "type": "appended", "root": note.root, "seq": note.seq, "notification_seq": note.seq,
                "session_id": note.session_id, "events": [event(e) for e in note.events],
            }  # fmt: skip
    raise TypeError(f"not a notification: {type(note).__name__}")


def hit(found: SearchHit) -> dict[str, Any]:
    """A search hit: where it is, how it ranks, its snippet and the event itself (`full`: a hit of
    the full record)."""
    shape = {
        "session": found.session, "session_name": found.session_name, "seq": found.seq,
        "kind": found.kind, "rank": found.rank, "snippet": found.snippet,
        "highlights": [list(pair) for pair in found.highlights], "event": _decoded(found.data),
        "also_in": found.also_in,
    }  # fmt: skip
    if found.full is True:
        shape["full"] = True
    return shape


def remote_hit(found: RemoteHit) -> dict[str, Any]:
    """A hit of `search --remote`: its remote session and who pushed it, rank, snippet (matches in
    ``[[…]]``) and the event itself."""
    return {
        "session": found.session, "identity": found.identity, "owner": found.owner,
        "session_name": found.session_name,
        "worktree": found.worktree, "seq": found.seq, "kind": found.kind, "rank": found.rank,
        "snippet": found.snippet, "event": _decoded(found.data),
    }  # fmt: skip


def error(code: str, message: str) -> dict[str, Any]:
    """An error, as every command prints it with ``--json`` (on stdout, exit status 1).

    >>> error("not_found", "no session S9")
    {'error': {'code': 'not_found', 'message': 'no session S9'}}
    """
    return {"error": {"code": code, "message": message}}
