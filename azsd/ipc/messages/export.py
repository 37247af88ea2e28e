"""A store's content written out: a session exported as Markdown, JSONL or HTML (`Export`), and the
whole store copied and verified (`Backup`)."""

from __future__ import annotations

from typing import Literal

import msgspec

from azsd.ipc.messages.base import _KeyedReq, _StoreReq, _Versioned

__all__ = ["Backup", "BackupReply", "Export", "ExportReply"]


class Export(_StoreReq, frozen=True):
    """A page of a session rendered as Markdown, JSONL or a self-contained HTML page.

    Concatenating the `text` of every page (from `from_seq=1`, following `next_seq`) gives the whole
    document. `redact` masks secrets (see azsd.redact) and the reply counts them.
    """

    session: int
    format: Literal["md", "jsonl", "html"] = "md"
    redact: bool = False
    from_seq: int = 1
    limit: int = 1000
    #: Of the session's full record (what the agent wrote, uncompacted; its events numbered by place),
    #: when one is kept; else of the compact events, as without it.
    full: bool | msgspec.UnsetType = msgspec.UNSET


class Backup(_KeyedReq, frozen=True):
    """Copy the store with SQLite's online backup API and verify the copy.

    `dest` is a directory (the copy is named ``sessions-<UTC time>.azs`` in it) or a path ending in
    ``.azs``; None means ``<root>/.azureal/backups/``. An existing file is never overwritten.
    """

    dest: str | None = None


class ExportReply(_Versioned, frozen=True):
    """A page of an export; `next_seq` is where the next starts, None after the last."""

    text: str
    next_seq: int | None
    masked: dict[str, int] = {}  # noqa: RUF012 (msgspec copies it: not shared)


class BackupReply(_Versioned, frozen=True):
    path: str
    bytes: int
    sessions: int
    events: int
    integrity: str
    seconds: float
