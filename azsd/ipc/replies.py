"""The error reply for an exception: azsd's error tree (:mod:`azsd.errors`) as the wire's codes.

One owner for the daemon's store calls, its follower and its sync service alike.
"""

from __future__ import annotations

from azsd.errors import (
    AzsdError,
    BadRequestError,
    IngestError,
    NotAStoreError,
    ReadOnlyStoreError,
    SessionNotFoundError,
    ShuttingDownError,
    StoreError,
    StoreFullError,
)
from azsd.events import EventDecodeError
from azsd.ipc import protocol as p
from azsd.store.codec import CodecError

__all__ = ["error_reply"]


def error_reply(exc: BaseException) -> p.ErrorReply:
    """The error reply for an exception a call raised."""
    code: p.ErrorCode
    match exc:
        case SessionNotFoundError():
            code = "not_found"
        case NotAStoreError():
            code = "not_a_store"
        case ReadOnlyStoreError():
            code = "read_only"
        case StoreFullError():
            code = "store_full"
        case IngestError():
            code = "ingest_error"
        case ShuttingDownError():
            code = "shutting_down"
        case StoreError():
            code = "store_error"
        case BadRequestError() | OverflowError():  # OverflowError: an integer SQLite cannot hold
            code = "bad_request"
        case EventDecodeError() | CodecError():  # a stored row the daemon cannot read: its fault
            code = "internal"
        case ValueError():  # a value the standard library refused (a NUL byte in a path, …)
            code = "bad_request"
        case AzsdError():
            code = "store_error"
        case _:
            code = "internal"
    return p.ErrorReply(code=code, message=str(exc) or type(exc).__name__)
