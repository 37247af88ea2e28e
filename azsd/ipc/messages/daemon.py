"""The daemon's own messages: its health check (`Status`), `Shutdown`, and the replies any request
may get (`OkReply`, `ErrorReply` and its codes). `Status`, `Shutdown` and their replies are frozen
forever."""

from __future__ import annotations

from typing import Literal

from azsd.ipc.messages.base import _Req, _Versioned
from azsd.ipc.messages.follows import FollowView

__all__ = ["ErrorCode", "ErrorReply", "OkReply", "Shutdown", "ShutdownReply", "Status", "StatusReply"]


class Status(_Req, frozen=True):
    """Health check: version, protocol, pid, uptime, open stores. Frozen forever."""


class Shutdown(_Req, frozen=True):
    """Ask the daemon to stop. Frozen forever."""


ErrorCode = Literal[
    "bad_request",
    "not_found",
    "no_such_root",
    "not_a_store",
    "read_only",
    "store_full",
    "store_error",
    "ingest_error",
    "follow_error",
    "shutting_down",
    "sync_error",
    "internal",
]


class StatusReply(_Versioned, frozen=True):
    """Frozen forever."""

    version: str
    pid: int
    uptime_s: float
    stores: list[str]
    follows: list[FollowView] = []  # noqa: RUF012 (msgspec copies it: not shared)


class ShutdownReply(_Versioned, frozen=True):
    """Frozen forever."""


class OkReply(_Versioned, frozen=True):
    """The request was carried out; there is nothing more to say."""


class ErrorReply(_Versioned, frozen=True):
    code: ErrorCode
    message: str
