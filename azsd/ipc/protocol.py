"""The azsd wire protocol: every message, as frozen tagged msgspec Structs, msgpack on the wire.

Requests travel on a ROUTER socket (clients use DEALER and put a request id frame first, so they
can pipeline); each gets exactly one reply carrying :data:`PROTOCOL_VERSION`. Notifications are
published on a PUB socket with the topic ``<root>\\0<session>\\0`` (see :func:`topic`), so a
subscriber filters a whole store by the ``<root>\\0`` prefix or one session by the full topic.
Each notification carries the store's notification sequence number: a gap means some were
dropped (PUB drops for slow subscribers), and the subscriber re-reads by request.

Events cross the wire as :class:`WireEvent`: the stored seq, the variant name and the event's
exact serde JSON (the same text AZUREAL stores), so a plugin can render them without azsd's types.

Evolution rules: add fields only with defaults, never retype or reorder a field, never change a
tag. `Status` and `Shutdown` (and their replies) are frozen forever.

The messages live in :mod:`azsd.ipc.messages`, one module per subject, on the base Structs of
:mod:`azsd.ipc.messages.base`; this module assembles them into the closed unions, encodes and
decodes them, and re-exports every message, so ``from azsd.ipc.protocol import X`` is all a user
needs.

>>> decode_request(encode(Status()))
Status()
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from azsd.errors import ProtocolError
from azsd.ipc.messages.base import PROTOCOL_VERSION
from azsd.ipc.messages.base import _Msg as _Msg
from azsd.ipc.messages.compaction import (
    BoundaryReply,
    CompactionBoundary,
    CompactionPlanReply,
    CompactionReply,
    CompactWithOutput,
    ContextMeter,
    MeterReply,
    PlanCompaction,
    StoreCompaction,
)
from azsd.ipc.messages.daemon import (
    ErrorCode,
    ErrorReply,
    OkReply,
    Shutdown,
    ShutdownReply,
    Status,
    StatusReply,
)
from azsd.ipc.messages.events import (
    AppendEvents,
    AppendReply,
    BuildContext,
    ContextReply,
    EventsPage,
    GetEvents,
    WireEvent,
)
from azsd.ipc.messages.export import Backup, BackupReply, Export, ExportReply
from azsd.ipc.messages.follows import Follow, FollowReply, FollowView, IngestFile, IngestReply, Unfollow
from azsd.ipc.messages.full import FullStatus, FullStatusReply, PruneFull, PruneReply
from azsd.ipc.messages.imports import (
    ImportFailure,
    ImportReply,
    ImportSession,
    ImportSessions,
    ImportSources,
    ImportsReply,
    SourcesReply,
    SourceView,
)
from azsd.ipc.messages.notifications import (
    SYNC_TOPIC,
    EventsAppended,
    SessionChanged,
    SessionCreated,
    SyncCaughtUp,
    topic,
)
from azsd.ipc.messages.remote import (
    Pull,
    PullReply,
    RemoteHit,
    RemoteList,
    RemoteSearch,
    RemoteSearchReply,
    RemoteSessionReply,
    RemoteSessionsReply,
    RemoteSessionView,
    RemoteShow,
    RemoteUsage,
)
from azsd.ipc.messages.search import (
    IndexStatus,
    IndexStatusReply,
    Reindex,
    ReindexReply,
    Search,
    SearchHit,
    SearchReply,
)
from azsd.ipc.messages.sessions import (
    ArchiveSession,
    CreateSession,
    DeleteSession,
    ForkSession,
    GetSession,
    ListSessions,
    MarkCompleted,
    RenameSession,
    SessionReply,
    SessionsReply,
    SessionView,
)
from azsd.ipc.messages.sync import (
    SyncSessionCheck,
    SyncStatus,
    SyncStatusReply,
    SyncStoreView,
    SyncVerify,
    SyncVerifyReply,
    SyncVerifyView,
)
from azsd.ipc.messages.usage import (
    SessionUsageView,
    Usage,
    UsagePeriodView,
    UsageReply,
    UsageView,
    WorktreeUsageView,
)

__all__ = [
    "PROTOCOL_VERSION",
    "SYNC_TOPIC",
    "AppendEvents",
    "AppendReply",
    "ArchiveSession",
    "Backup",
    "BackupReply",
    "BoundaryReply",
    "BuildContext",
    "CompactWithOutput",
    "CompactionBoundary",
    "CompactionPlanReply",
    "CompactionReply",
    "ContextMeter",
    "ContextReply",
    "CreateSession",
    "DeleteSession",
    "ErrorCode",
    "ErrorReply",
    "EventsAppended",
    "EventsPage",
    "Export",
    "ExportReply",
    "Follow",
    "FollowReply",
    "FollowView",
    "ForkSession",
    "FullStatus",
    "FullStatusReply",
    "GetEvents",
    "GetSession",
    "ImportFailure",
    "ImportReply",
    "ImportSession",
    "ImportSessions",
    "ImportSources",
    "ImportsReply",
    "IndexStatus",
    "IndexStatusReply",
    "IngestFile",
    "IngestReply",
    "KeyedRequest",
    "ListSessions",
    "MarkCompleted",
    "MeterReply",
    "Notification",
    "OkReply",
    "PlanCompaction",
    "PruneFull",
    "PruneReply",
    "Pull",
    "PullReply",
    "Reindex",
    "ReindexReply",
    "RemoteHit",
    "RemoteList",
    "RemoteSearch",
    "RemoteSearchReply",
    "RemoteSessionReply",
    "RemoteSessionView",
    "RemoteSessionsReply",
    "RemoteShow",
    "RemoteUsage",
    "RenameSession",
    "Reply",
    "Request",
    "Search",
    "SearchHit",
    "SearchReply",
    "SessionChanged",
    "SessionCreated",
    "SessionReply",
    "SessionUsageView",
    "SessionView",
    "SessionsReply",
    "Shutdown",
    "ShutdownReply",
    "SourceView",
    "SourcesReply",
    "Status",
    "StatusReply",
    "StoreCompaction",
    "StoreRequest",
    "SyncCaughtUp",
    "SyncRequest",
    "SyncSessionCheck",
    "SyncStatus",
    "SyncStatusReply",
    "SyncStoreView",
    "SyncVerify",
    "SyncVerifyReply",
    "SyncVerifyView",
    "Unfollow",
    "Usage",
    "UsagePeriodView",
    "UsageReply",
    "UsageView",
    "WireEvent",
    "WorktreeUsageView",
    "decode_notification",
    "decode_reply",
    "decode_request",
    "decode_sync_notification",
    "encode",
    "topic",
]

# -- the closed unions (their members' order is the order of the schema and of protocol.d.ts) ------

SyncRequest = SyncStatus | RemoteList | RemoteShow | RemoteSearch | Pull | SyncVerify | RemoteUsage
"""The requests the daemon's sync service answers (an error reply when sync is not configured)."""

StoreRequest = (
    CreateSession
    | ListSessions
    | GetSession
    | RenameSession
    | DeleteSession
    | AppendEvents
    | GetEvents
    | BuildContext
    | MarkCompleted
    | StoreCompaction
    | CompactWithOutput
    | CompactionBoundary
    | ContextMeter
    | PlanCompaction
    | Search
    | IngestFile
    | ForkSession
    | ArchiveSession
    | Reindex
    | IndexStatus
    | Export
    | Backup
    | ImportSources
    | ImportSession
    | ImportSessions
    | Usage
    | FullStatus
    | PruneFull
)
"""The requests a store's worker answers (see azsd.server.handlers); the daemon answers the rest."""

Request = Status | Shutdown | Follow | Unfollow | StoreRequest | SyncRequest

KeyedRequest = (
    CreateSession
    | RenameSession
    | DeleteSession
    | ForkSession
    | ArchiveSession
    | AppendEvents
    | MarkCompleted
    | StoreCompaction
    | CompactWithOutput
    | Reindex
    | Backup
    | ImportSession
    | ImportSessions
    | IngestFile
    | PruneFull
)
"""The requests that change a store (or, for `Backup`, write a file) and so carry a `request_key`."""

Reply = (
    StatusReply
    | ShutdownReply
    | OkReply
    | ErrorReply
    | SessionReply
    | SessionsReply
    | AppendReply
    | EventsPage
    | ContextReply
    | BoundaryReply
    | CompactionPlanReply
    | CompactionReply
    | MeterReply
    | SearchReply
    | IngestReply
    | FollowReply
    | ReindexReply
    | IndexStatusReply
    | ExportReply
    | BackupReply
    | SourcesReply
    | ImportReply
    | ImportsReply
    | UsageReply
    | SyncStatusReply
    | RemoteSessionsReply
    | RemoteSessionReply
    | RemoteSearchReply
    | PullReply
    | SyncVerifyReply
    | FullStatusReply
    | PruneReply
)

Notification = SessionCreated | SessionChanged | EventsAppended

# -- bytes -----------------------------------------------------------------------------------------

_ENCODER: Final = msgspec.msgpack.Encoder()
_REQUESTS: Final = msgspec.msgpack.Decoder(Request)
_REPLIES: Final = msgspec.msgpack.Decoder(Reply)
_NOTIFICATIONS: Final = msgspec.msgpack.Decoder(Notification)
_SYNC_NOTIFICATIONS: Final = msgspec.msgpack.Decoder(SyncCaughtUp)


def encode(message: _Msg) -> bytes:
    """msgpack bytes of any message."""
    return _ENCODER.encode(message)


def _decode(decoder: msgspec.msgpack.Decoder[Any], data: bytes, what: str) -> Any:
    try:
        return decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise ProtocolError(f"invalid {what}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"undecodable {what}: {exc}") from None
    except RecursionError:
        raise ProtocolError(f"undecodable {what}: nested too deeply") from None


def decode_request(data: bytes) -> Request:
    """A request from its bytes; :class:`ProtocolError` names what is wrong."""
    request: Request = _decode(_REQUESTS, data, "request")
    return request


def decode_reply(data: bytes) -> Reply:
    reply: Reply = _decode(_REPLIES, data, "reply")
    return reply


def decode_notification(data: bytes) -> Notification:
    note: Notification = _decode(_NOTIFICATIONS, data, "notification")
    return note


def decode_sync_notification(data: bytes) -> SyncCaughtUp:
    note: SyncCaughtUp = _decode(_SYNC_NOTIFICATIONS, data, "sync notification")
    return note


def json_schema() -> dict[str, Any]:
    """JSON Schema of every message (requests, replies, notifications), for plugin authors."""
    schema: dict[str, Any] = msgspec.json.schema(Request | Reply | Notification | SyncCaughtUp)
    return schema
