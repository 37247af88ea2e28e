"""The building blocks of every message: the base Structs that carry the tag config (each message is
tagged by `op`, its lower-cased class name), the rules for unknown fields, the request key, and
:data:`PROTOCOL_VERSION`, which every reply and notification carries.

The subject modules of :mod:`azsd.ipc.messages` build on these, and :mod:`azsd.ipc.protocol`
assembles their messages into the closed unions (the evolution rules are written there).
"""

from __future__ import annotations

from typing import Final

import msgspec

__all__ = ["PROTOCOL_VERSION", "_Data", "_KeyedReq", "_Msg", "_Note", "_Req", "_StoreReq", "_Versioned"]


#: Bumped on any incompatible change (which the evolution rules in azsd.ipc.protocol forbid in
#: practice). Defined here, under every reply's default, and re-exported by azsd.ipc.protocol.
PROTOCOL_VERSION: Final = 1


class _Msg(msgspec.Struct, frozen=True, tag_field="op", tag=str.lower, kw_only=True):
    """Base of every message: tagged by `op` (the lower-cased class name).

    Replies and notifications ignore fields they do not know, so an older client keeps working
    with a newer daemon that added fields.
    """


class _Req(_Msg, frozen=True, forbid_unknown_fields=True):
    """Base of requests: an unknown field is an error (this daemon does not support it)."""


class _StoreReq(_Req, frozen=True):
    """Base of requests about one store: `root` is its worktree directory (an absolute path)."""

    root: str


class _KeyedReq(_StoreReq, frozen=True, kw_only=True):
    """Base of requests that change a store: `request_key` (encoded last, and only when set) makes a
    retry safe. A request whose key the store remembers, or that is still running, is not carried
    out again: its first reply is the answer. See docs/protocol.md, "Request keys"."""

    request_key: str | msgspec.UnsetType | None = msgspec.UNSET


class _Versioned(_Msg, frozen=True, kw_only=True):
    """Base of replies and notifications: each carries the protocol version (encoded last)."""

    protocol: int = PROTOCOL_VERSION


class _Note(_Versioned, frozen=True):
    """Base of notifications: the store they are about, and its notification number."""

    root: str
    seq: int


class _Data(msgspec.Struct, frozen=True, kw_only=True):
    """Base of values inside messages (untagged)."""
