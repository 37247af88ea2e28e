"""The one exception tree of azsd.

Every error azsd raises on purpose is an :class:`AzsdError`. Foreign errors (``sqlite3.Error``,
``msgspec.DecodeError``, ``zmq.ZMQError``) are translated where they enter, so callers catch one
family::

    AzsdError
     ├── ConfigError            a configuration file or value is wrong
     ├── UsageError             a command line asks for what it cannot have as given (exit 2)
     ├── BadRequestError        a request's values are wrong (also a ValueError); `bad_request`
     ├── AlreadyRunning         another daemon holds the lock
     ├── ShuttingDownError      the daemon is stopping and takes no more work
     ├── StoreError             anything about a `.azs` store
     │    ├── NotAStoreError        the file exists but is not an SQLite database
     │    ├── ReadOnlyStoreError    the store was opened read-only (newer schema) and a write was tried
     │    ├── SessionNotFoundError  no session with that id in the store
     │    │    └── SessionReplacedError  the session planned for was deleted and its number reused
     │    └── StoreFullError        the disk (or the file's page limit) is full
     ├── IngestError            an agent file cannot be ingested (unreadable, unknown format)
     ├── SyncError              the sync database (PostgreSQL) cannot be reached or used
 │    └── RemoteSessionNotFound no session in the sync database answers to that REMOTE-REF
 ├── ProtocolError          a message on the wire could not be decoded or is invalid
     ├── DaemonUnavailable      no daemon answers on the endpoint
     │    └── NoReply               a request was sent, and its reply did not come in time
     └── RemoteError            the daemon answered with an error reply
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "AlreadyRunning",
    "AzsdError",
    "BadRequestError",
    "ConfigError",
    "DaemonUnavailable",
    "IngestError",
    "NewIncarnation",
    "NoReply",
    "NotAStoreError",
    "ProtocolError",
    "ReadOnlyStoreError",
    "RemoteError",
    "RemoteSessionNotFound",
    "SessionNotFoundError",
    "SessionReplacedError",
    "ShuttingDownError",
    "StoreError",
    "StoreFullError",
    "SyncError",
    "UsageError",
]


class AzsdError(Exception):
    """Base of every error azsd raises on purpose."""


class ConfigError(AzsdError):
    """A configuration file or value is invalid."""


class UsageError(AzsdError):
    """The command line asks for something it cannot have as given (exit status 2)."""


class BadRequestError(AzsdError, ValueError):
    """A request (or a library call) names values that cannot work: a seq out of range, a negative
    limit, a query FTS5 cannot parse. Answered as `bad_request`; nothing was changed."""


class AlreadyRunning(AzsdError):
    """Another azsd holds the lock of this runtime directory."""


class ShuttingDownError(AzsdError):
    """The daemon is stopping: work that arrives now is refused (`shutting_down`)."""


class IngestError(AzsdError):
    """A file could not be ingested (unreadable, or of no known format)."""


class StoreError(AzsdError):
    """A `.azs` store could not be opened, read or written."""


class NotAStoreError(StoreError):
    """The store path exists but does not hold an SQLite database."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path} is not an SQLite database (not an AZUREAL session store)")
        self.path = path


class ReadOnlyStoreError(StoreError):
    """A write was attempted on a store opened read-only (for example a newer schema version)."""


class SessionNotFoundError(StoreError):
    """No session with the given id exists in the store."""

    def __init__(self, session_id: int) -> None:
        super().__init__(f"no session S{session_id} in this store")
        self.session_id = session_id


class SessionReplacedError(SessionNotFoundError):
    """The session a request was planned for is gone, and its number now names another one (AZUREAL
    deleted it, and reused the number for a new session)."""

    def __init__(self, session_id: int) -> None:
        StoreError.__init__(
            self,
            f"S{session_id} is no longer the session this was planned for: it was deleted and its number "
            "given to a new session (nothing was written; plan again)",
        )
        self.session_id = session_id


class StoreFullError(StoreError):
    """The write failed because the disk or the database file is full; nothing was changed."""


class ProtocolError(AzsdError):
    """A message could not be decoded, or does not fit the protocol."""


class DaemonUnavailable(AzsdError):
    """No azsd daemon answered on the resolved endpoint."""


class NoReply(DaemonUnavailable):
    """A request reached a daemon that had answered before, but no reply came in time: it may or may
    not have been carried out (a write is safe to send again with the same `request_key`)."""


class RemoteError(AzsdError):
    """The daemon answered a request with an error reply."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class SyncError(AzsdError):
    """The sync database (PostgreSQL) cannot be reached or used: down, not initialized, refused.

    Its message never holds a password (see azsd.pgurl.redact_url)."""


class NewIncarnation(SyncError):
    """A store file is not the one whose pushes the database holds (a copy, a restored backup, a file
    moved between machines, ids gone backwards): it gets a store UUID of its own (DESIGN.md, 8)."""


class RemoteSessionNotFound(SyncError):
    """No session in the sync database answers to a REMOTE-REF; the error code is `not_found`."""
