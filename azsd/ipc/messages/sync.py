"""The daemon's pushing of stores to the sync database: its status per store, and verifying (and
repairing) what the database holds."""

from __future__ import annotations

from azsd.ipc.messages.base import _Data, _Req, _Versioned

__all__ = [
    "SyncSessionCheck",
    "SyncStatus",
    "SyncStatusReply",
    "SyncStoreView",
    "SyncVerify",
    "SyncVerifyReply",
    "SyncVerifyView",
]


class SyncStoreView(_Data, frozen=True):
    """One store's pushing: the last event pushed (`events.id`), how far the store is ahead of it (in
    events, and in seconds since the oldest unpushed commit), when a push last committed (Unix time)
    and the last error ("" when the last try worked)."""

    root: str
    store_uuid: str = ""
    repository: str = ""
    pushed_event_id: int = 0
    local_event_id: int = 0
    lag_events: int = 0
    lag_s: float = 0.0
    last_push: float | None = None
    last_error: str = ""
    pushed: int = 0
    #: Why an unpushed commit has waited for more than a few seconds ("" when none has).
    waiting: str = ""
    #: Secrets masked in what this daemon pushed of the store (`sync-redact`).
    masked: int = 0
    #: When the store file last became a new incarnation (a copy, a backup put back), and why.
    note: str = ""


class SyncSessionCheck(_Data, frozen=True):
    """One session whose events in the sync database are not those of its store (`SyncVerify`):
    `local` events up to the store's push cursor, `remote` events the database holds, `repaired`
    events pushed again now. `remote` above `local` cannot be repaired by pushing (`error` says so)."""

    uuid: str
    local_id: int
    local: int
    remote: int
    repaired: int = 0
    error: str = ""


class SyncVerifyView(_Data, frozen=True):
    """One store's verification: its sessions compared, and those that differed (`sessions`)."""

    root: str
    store_uuid: str = ""
    checked: int = 0
    sessions: list[SyncSessionCheck] = []  # noqa: RUF012 (msgspec copies it: not shared)
    error: str = ""


class SyncStatus(_Req, frozen=True):
    """Whether sync is configured, and each known store's pushing (see `SyncStoreView`)."""


class SyncVerify(_Req, frozen=True):
    """Compare, for each store the daemon pushes, each session's events up to the push cursor with
    those the sync database holds; with `repair`, push again what the database lacks."""

    repair: bool = True


class SyncStatusReply(_Versioned, frozen=True):
    """`configured` is False without a `sync-url`; `url` is shown without its password; `error` is
    the connection's last failure ("" while it works)."""

    configured: bool
    identity: str = ""
    url: str = ""
    error: str = ""
    stores: list[SyncStoreView] = []  # noqa: RUF012 (msgspec copies it: not shared)
    #: Whether secrets are masked in what is pushed (`sync-redact`).
    redact: bool = False
    #: The config file's sync settings could not be taken (the daemon goes on with the last good
    #: ones, or none): why.
    config_error: str = ""


class SyncVerifyReply(_Versioned, frozen=True):
    stores: list[SyncVerifyView]
