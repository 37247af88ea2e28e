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

>>> decode_request(encode(Status()))
Status()
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from azsd.errors import ProtocolError

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

#: Bumped on any incompatible change (which the rules above forbid in practice).
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


# -- values -----------------------------------------------------------------------------------------


class WireEvent(_Data, frozen=True):
    """One stored event: its seq, variant name, and exact serde JSON."""

    seq: int
    kind: str
    data: str


class UsageView(_Data, frozen=True):
    """Token usage summed over a session's turns, and its cost."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    cost_usd: float = 0.0
    #: "estimated" when any turn's cost was priced by azsd from its tokens (the agent reported none);
    #: "unpriced" when no token of it has a price (`cost_usd` is then 0 and means "unknown").
    cost_source: str = "reported"
    #: Tokens of models without a price: when not 0, `cost_usd` leaves them out (the total is incomplete).
    unpriced_tokens: int = 0


class SessionView(_Data, frozen=True):
    """A session as `list_sessions` sees it, with its display name and badge state.

    `state` is one of ``new`` (no events), ``running`` (a follow is active into it: `azs run`'s
    agent or `azs follow`), ``succeeded`` / ``failed`` (its last turn's completion), or ``ended``
    (events, but no completion marker and nothing following it: a transcript that just stops).
    """

    id: int
    name: str
    display_name: str
    worktree: str
    created: str
    event_count: int
    message_count: int
    state: str
    completed: bool | None = None
    duration_ms: int | None = None
    cost_usd: float | None = None
    usage: UsageView | None = None
    archived: bool = False
    #: Where `cost_usd` comes from, when `usage` was read ("reported" or "estimated"); None: not read.
    cost_source: str | None = None
    #: The session this one was forked from, and the parent's last seq it copied (None: not a fork,
    #: or the parent was deleted).
    parent: int | None = None
    fork_seq: int | None = None
    #: Sessions forked from this one (filled by `GetSession`; empty in listings). A tuple, so that a
    #: view without forks holds no container and a listing of thousands stays clear of the GC.
    forks: tuple[int, ...] = ()
    #: The context meter: the characters stored since the latest compaction (what the next turn's
    #: context is made of), when asked for with `with_meter`; None: not read.
    context_chars: int | None = None
    #: When its latest turn happened (UTC, as `created` is written), from the timestamps of the agent's
    #: lines, when usage was read and the lines had any; None: not known (`created` is all there is).
    last_activity: str | None = None


class SessionUsageView(_Data, frozen=True):
    """One session's usage, summed over its `turns` (prompts answered); `removed`: a session azsd
    removed, whose usage the ledger keeps."""

    session: int
    name: str
    worktree: str
    turns: int
    usage: UsageView
    removed: bool = False


class UsagePeriodView(_Data, frozen=True):
    """The usage of one period of a `Usage` request's `by` (and of one model, with `by_model`).

    `period` names it (``2025-10-02``, ``2025-W40``, ``2025-10``, ``S12``, or a block's local start
    ``2025-10-02 14:00``); `start` and `end` are its bounds in local ISO 8601 (a session's: its first
    and last turn; a block's end is its start + 5 h). `models` are the models it used ("" for turns
    of a run that named none), `model` the one of this row with `by_model`. `total_tokens` is input,
    output, cache read and cache write together.
    """

    period: str
    start: str
    end: str
    usage: UsageView
    total_tokens: int = 0
    models: list[str] = msgspec.field(default_factory=list)
    model: str | None = None
    session: int | None = None
    name: str = ""
    turns: int = 0
    #: A block (`by="block"`) still going: its last turn less than 5 hours ago, its end not yet come.
    active: bool = False
    #: A block's rate from its first turn to its last: all tokens per minute, and USD per hour.
    tokens_per_minute: float = 0.0
    usd_per_hour: float = 0.0
    #: An active block's tokens and cost at its end if the rate holds, and the minutes left (a
    #: finished block's: its own totals, and 0).
    projected_tokens: int = 0
    projected_usd: float = 0.0
    remaining_minutes: float = 0.0


class WorktreeUsageView(_Data, frozen=True):
    """The usage of every session labelled with one worktree (branch)."""

    worktree: str
    sessions: int
    usage: UsageView


class SourceView(_Data, frozen=True):
    """An agent history file `ImportSession` can bring in; `session` is where it already is."""

    path: str
    agent: str
    size: int
    session: int | None = None
    #: Imported, and the file has not grown since.
    current: bool = False


class FollowView(_Data, frozen=True):
    """A followed agent JSONL file: where the daemon is in it, and what it saw.

    `state` is what the follow does now: ``following``, ``waiting`` (for its store, or for the file:
    `reason` says which), ``retrying`` (it failed `failures` times in a row; `reason` says why and
    when it tries again), ``idle`` (given no writer, its file went quiet with no program holding it
    open: still followed, `active`, but its session does not show running until the file grows) or
    ``ended`` (`reason` says why). A daemon older than these fields sends neither: `state` is then
    empty, and `active` tells a live follow from an ended one.
    """

    root: str
    session: int
    path: str
    format: str
    offset: int
    lines: int
    skipped: int
    active: bool
    last_activity: str
    writer_pid: int | None = None
    ended: str | None = None
    state: str = ""
    reason: str = ""
    failures: int = 0


class SearchHit(_Data, frozen=True):
    """An event that matched: its session and seq, its rank (lower is better), the event's JSON, and a
    snippet of its text where it matched, with the `[start, end)` character range of each hit.
    `also_in`: the other sessions holding the same event at the same seq (copies made by forks), which
    are not hits of their own."""

    session: int
    data: str
    seq: int = 0
    kind: str = ""
    rank: float = 0.0
    snippet: str = ""
    highlights: list[tuple[int, int]] = []
    session_name: str = ""
    also_in: list[int] = []


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
    sessions: list[SyncSessionCheck] = []
    error: str = ""


class RemoteSessionView(_Data, frozen=True):
    """A session in the sync database, as its origin store last pushed it.

    `uuid` is its global id (a REMOTE-REF is ``@`` and a unique prefix of it); `identity` who pushed it
    and from which machine (``user@host``), `root` the worktree there, `local_id` its number there,
    `worktree` its branch label, `updated` when it was last pushed (ISO 8601), `char_total` its size
    (the stored `char_len` summed). `parent` is the session it was forked from, `pulled_from` the one
    it was pulled from (UUIDs). `owner` is the database role that pushed it (what the database
    vouches for: `identity` is what that role says of itself); `own`: that role is the one this daemon
    logs in as. `mine`: `own`, and pushed with this daemon's identity from the store the request
    named. `deleted`: when it was deleted at its origin (a tombstone: no events left)."""

    uuid: str
    identity: str
    repository: str
    root: str
    local_id: int
    name: str
    worktree: str
    created: str
    updated: str
    state: str
    event_count: int
    message_count: int = 0
    char_total: int = 0
    archived: bool = False
    completed: bool | None = None
    duration_ms: int | None = None
    cost_usd: float | None = None
    parent: str | None = None
    fork_seq: int | None = None
    pulled_from: str | None = None
    usage: UsageView | None = None
    mine: bool = False
    deleted: str | None = None
    owner: str = ""
    own: bool = False


class RemoteHit(_Data, frozen=True):
    """An event of the sync database that matched a `RemoteSearch`: its session, seq and kind, its
    rank (higher is better: PostgreSQL's ts_rank), a snippet with the matches in ``[[…]]``, and the
    event's JSON."""

    session: str
    identity: str
    session_name: str
    seq: int
    kind: str
    rank: float
    snippet: str
    data: str
    worktree: str = ""
    #: The database role that pushed the session (see `RemoteSessionView.owner`).
    owner: str = ""


# -- requests ---------------------------------------------------------------------------------------


class Status(_Req, frozen=True):
    """Health check: version, protocol, pid, uptime, open stores. Frozen forever."""


class Shutdown(_Req, frozen=True):
    """Ask the daemon to stop. Frozen forever."""


class CreateSession(_KeyedReq, frozen=True):
    name: str | None = None
    worktree: str = ""


class ListSessions(_StoreReq, frozen=True):
    """Sessions, latest activity first. Archived ones are left out unless `archived` is `include`
    (all) or `only`; `with_usage` fills each view's `usage`."""

    worktree: str | None = None
    limit: int = 100
    offset: int = 0
    archived: Literal["exclude", "include", "only"] = "exclude"
    with_usage: bool = False
    with_meter: bool = False


class GetSession(_StoreReq, frozen=True):
    """A session's view; `with_meter` fills its `context_chars`."""

    session: int
    with_meter: bool = False


class RenameSession(_KeyedReq, frozen=True):
    session: int
    name: str


class DeleteSession(_KeyedReq, frozen=True):
    """Delete a session. Its forks are kept (their lineage cleared) unless `with_forks`."""

    session: int
    with_forks: bool = False


class ForkSession(_KeyedReq, frozen=True):
    """A new session holding copies of events 1..`at_seq` (seqs kept); the original is not changed."""

    session: int
    at_seq: int
    name: str | None = None


class ArchiveSession(_KeyedReq, frozen=True):
    """Archive (`archived=False`: unarchive) a session: hidden from listings, never deleted."""

    session: int
    archived: bool = True


class AppendEvents(_KeyedReq, frozen=True):
    """Append events, each given as its serde JSON (as stored); they are compacted on the way in."""

    session: int
    events: list[str]


class GetEvents(_StoreReq, frozen=True):
    """A page of events with seq >= `from_seq`, injected context stripped."""

    session: int
    from_seq: int = 1
    limit: int = 500


class BuildContext(_StoreReq, frozen=True):
    """The exact context-injected prompt for the next turn."""

    session: int
    prompt: str
    backend: Literal["claude", "codex"] = "claude"


class MarkCompleted(_KeyedReq, frozen=True):
    session: int
    success: bool
    duration_ms: int = 0
    cost_usd: float = 0.0


class StoreCompaction(_KeyedReq, frozen=True):
    """Store `summary` as the compaction of seqs 1..`after_seq` (a seq of the session). With the
    `identity` a `CompactionPlanReply` gave, it is refused (`not_found`) if the session is no longer
    the one planned for (deleted, and its number reused). (`identity` is sent only when set, so that a
    daemon from before it takes the request as before.)"""

    session: int
    after_seq: int
    summary: str
    identity: str | msgspec.UnsetType = msgspec.UNSET


class CompactWithOutput(_KeyedReq, frozen=True):
    """Store a compaction whose summary is the assistant text of `path`, the JSONL a compaction
    agent wrote in `format` (spec §6: concatenated, trimmed). Nothing is stored when it holds none."""

    session: int
    after_seq: int
    path: str
    format: str
    identity: str | msgspec.UnsetType = msgspec.UNSET


class CompactionBoundary(_StoreReq, frozen=True):
    """Where to compact so the newest `keep` prompts stay raw (`from_seq` defaults to after the latest)."""

    session: int
    keep: int = 3
    from_seq: int | None = None


class ContextMeter(_StoreReq, frozen=True):
    """How full the session's context is: characters since the latest compaction, against
    `threshold` (the caller's `compaction-threshold`; the spec's 400 000 when None)."""

    session: int
    threshold: int | None = None


class PlanCompaction(_StoreReq, frozen=True):
    """What a compaction of the session would summarise, and the prompt that asks an agent for the
    summary (spec §6). The newest `keep` prompts stay raw; None tries 3, then 2, then 1."""

    session: int
    keep: int | None = None


class Search(_StoreReq, frozen=True):
    """Full-text search, best match first. `query` is FTS5 syntax (``a AND b``, ``"a phrase"``,
    ``pre*``), or with `words` plain text: every whitespace-separated word must appear as written
    (punctuation too, any case, from the start of a word: ``claude-clean``, ``main.go``, ``unwrap()``).
    `words` is False here for older clients; `azs search`, the bridge and the Neovim plugin default to
    plain text. Each filter left None matches
    everything; `worktree` is the older single-worktree form of `worktrees`. `kinds` takes variant
    names or the aliases user, assistant, tool, call, result, plan."""

    query: str
    worktree: str | None = None
    limit: int = 50
    worktrees: list[str] | None = None
    sessions: list[int] | None = None
    kinds: list[str] | None = None
    words: bool = False


class Reindex(_KeyedReq, frozen=True):
    """Rebuild a store's search index from its events."""


class IndexStatus(_StoreReq, frozen=True):
    """How far a store's search index is behind its events: rows another program (AZUREAL) wrote
    wait to be indexed, in the background or by the next search. `azs search` asks this first, and
    while many rows wait, shows their progress instead of waiting in silence. With `stale`, the
    reply counts the index's entries of rows that are gone too (`azs doctor` asks: it reads the
    whole index)."""

    stale: bool = False


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


class Backup(_KeyedReq, frozen=True):
    """Copy the store with SQLite's online backup API and verify the copy.

    `dest` is a directory (the copy is named ``sessions-<UTC time>.azs`` in it) or a path ending in
    ``.azs``; None means ``<root>/.azureal/backups/``. An existing file is never overwritten.
    """

    dest: str | None = None


class ImportSources(_StoreReq, frozen=True):
    """The agent histories of `project` under `source_dir` (``~/.claude``, ``~/.codex``, OpenCode's
    data directory; Aider's are the runs of ``<project>/.aider.chat.history.md``), and whether each
    is imported already. An Aider run's `path` is ``<file>#<the time in its header>``, an OpenCode
    session's ``<opencode.db or storage dir>#<session id>``."""

    agent: Literal["claude", "aider", "opencode", "codex"]  # first and last pinned by tests/test_wire.py
    source_dir: str
    project: str


class ImportSession(_KeyedReq, frozen=True):
    """Import one agent history (a `SourceView.path`) as a session of its own (again: only what it
    gained since)."""

    agent: Literal["claude", "aider", "opencode", "codex"]  # first and last pinned by tests/test_wire.py
    path: str
    worktree: str = ""


class ImportSessions(_KeyedReq, frozen=True):
    """Import several agent histories (`SourceView.path`s) at once, each as `ImportSession` does, in
    order (a parent before the sessions it spawned). Small ones share short transactions (a commit
    per source was most of their cost), so a thousand OpenCode sessions import in seconds; each is
    imported in a savepoint of its own, so one that fails leaves nothing behind, is named in the
    reply's `failed`, and the others go on."""

    agent: Literal["claude", "aider", "opencode", "codex"]
    paths: list[str]
    worktree: str = ""


class Usage(_StoreReq, frozen=True):
    """Token usage and cost per session and per worktree (`session` or `worktrees` narrow it).

    `by` also groups it by period, into the reply's `periods`: ``day``, ``week`` (ISO, from Monday)
    or ``month`` of local time, ``session``, or ``block`` (Claude's 5-hour billing blocks: a block
    starts at its first turn's time floored to the hour and lasts 5 hours; a gap of more than 5
    hours starts a new one). `by_model` splits each period by model. `since` and `until` (local
    dates, ``YYYY-MM-DD`` or ``YYYYMMDD``, both inclusive) keep only the usage of those days, in every
    part of the reply. Local time is that of `timezone` (an IANA name such as ``Europe/Paris``),
    else the daemon's. The usage of sessions azsd removed stays in every report not narrowed to one
    `session` (the ledger), unless `exclude_removed`. `with_sessions` false leaves the reply's
    `sessions` and `worktrees` empty (a report by period that does not need them).
    """

    session: int | None = None
    worktrees: list[str] | None = None
    by: str | None = None
    by_model: bool = False
    since: str | None = None
    until: str | None = None
    timezone: str | None = None
    exclude_removed: bool = False
    with_sessions: bool = True
    #: With `by="block"`: only the block still going (its last turn less than 5 hours ago, and its 5
    #: hours not over), with its burn rate and projection.
    active: bool = False
    #: Agent files (absolute paths) no store holds, read in place and counted with this store's usage
    #: (a message this store counted, once): `azs usage --all`'s projects never imported.
    read_in_place: list[str] = msgspec.field(default_factory=list)


class IngestFile(_KeyedReq, frozen=True):
    """Ingest a finished agent JSONL file (read by the daemon) into a session."""

    session: int
    path: str
    format: str | None = None


class Follow(_StoreReq, frozen=True):
    """Follow an agent JSONL file into a session, live, from where it was left (or its start).

    `format` is detected when None. `writer_pid` is the agent writing the file: once it is gone
    and the file stops growing, the follow ends. Without one, a quiet file that no program holds
    open makes the follow `idle` (it goes on when the file grows). A follow also ends on the turn's
    final event.
    `model` is the model the agent was started with, for a format that names none (`codex exec
    --json`): its usage is recorded as that model's, and priced at its prices.
    """

    session: int
    path: str
    format: str | None = None
    writer_pid: int | None = None
    model: str | None = None


class Unfollow(_StoreReq, frozen=True):
    """Stop following `path` after reading what it holds now. `reason` is why, in words, as `status`
    shows it among the ended follows (``unfollowed`` without one; sent only when set)."""

    path: str
    reason: str | msgspec.UnsetType = msgspec.UNSET


class SyncStatus(_Req, frozen=True):
    """Whether sync is configured, and each known store's pushing (see `SyncStoreView`)."""


class SyncVerify(_Req, frozen=True):
    """Compare, for each store the daemon pushes, each session's events up to the push cursor with
    those the sync database holds; with `repair`, push again what the database lacks."""

    repair: bool = True


class RemoteList(_StoreReq, frozen=True):
    """The sessions in the sync database of the repository `root` belongs to, from every machine and
    person, last pushed first (`worktrees` narrows them to those branches). Tombstones only with
    `deleted`."""

    limit: int = 100
    offset: int = 0
    worktrees: list[str] | None = None
    deleted: bool = False


class RemoteShow(_StoreReq, frozen=True):
    """One session of the sync database (`ref`: a UUID, or ``@`` and a unique prefix of it) and a
    page of its events from `from_seq` (as stored; injected context is stripped)."""

    ref: str
    from_seq: int = 1
    limit: int = 500


class RemoteSearch(_StoreReq, frozen=True):
    """Full-text search of the repository's sessions in the sync database (PostgreSQL text search),
    best match first. `query` is web-search syntax (``a b``, ``"a phrase"``, ``a or b``, ``-a``), or
    plain words that must all appear with `words`; the filters are those of `Search`."""

    query: str
    limit: int = 50
    worktrees: list[str] | None = None
    kinds: list[str] | None = None
    words: bool = False


class RemoteUsage(_StoreReq, frozen=True):
    """The team's token usage and cost in the sync database, summed there under the read rules, as
    a `UsageReply` with `by` and `periods` (`sessions` and `worktrees` empty): `by` is ``day``,
    ``week`` or ``month`` of local time, ``model``, ``person`` (the database role that pushed;
    the default) or ``repository`` (every repository the role may read; the others cover the
    repository of `root`). `by_model`, `since`, `until` and `timezone` are those of `Usage`."""

    by: str | None = None
    by_model: bool = False
    since: str | None = None
    until: str | None = None
    timezone: str | None = None


class Pull(_StoreReq, frozen=True):
    """Copy a session of the sync database into the store of `root`, as a new local session (events
    byte for byte, compactions, badge), its lineage recorded as pulled from `ref`. Each pull makes a
    new session: continuing it is a fork, never a merge."""

    ref: str
    name: str | None = None
    worktree: str | None = None


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
)
"""The requests that change a store (or, for `Backup`, write a file) and so carry a `request_key`."""


# -- replies ----------------------------------------------------------------------------------------

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
    follows: list[FollowView] = []


class ShutdownReply(_Versioned, frozen=True):
    """Frozen forever."""


class OkReply(_Versioned, frozen=True):
    """The request was carried out; there is nothing more to say."""


class ErrorReply(_Versioned, frozen=True):
    code: ErrorCode
    message: str


class SessionReply(_Versioned, frozen=True):
    session: SessionView


class SessionsReply(_Versioned, frozen=True):
    sessions: list[SessionView]
    total: int


class AppendReply(_Versioned, frozen=True):
    events: list[WireEvent]


class EventsPage(_Versioned, frozen=True):
    """`next_seq` is where the next page starts, or None when this page reached the end."""

    events: list[WireEvent]
    next_seq: int | None
    skipped: int = 0


class ContextReply(_Versioned, frozen=True):
    prompt: str


class BoundaryReply(_Versioned, frozen=True):
    after_seq: int | None


class CompactionPlanReply(_Versioned, frozen=True):
    """`after_seq` None: fewer than two prompts since the latest compaction, nothing to compact.
    Otherwise seqs `from_seq`..`after_seq` (`events` events, `chars` stored characters) are summarised
    by the agent given `prompt`, and `StoreCompaction(after_seq, summary)` stores the result."""

    after_seq: int | None
    from_seq: int = 1
    prompt: str = ""
    events: int = 0
    chars: int = 0
    #: The newest prompts left raw after the boundary.
    kept_prompts: int = 0
    #: The session's identity (its number alone may be reused): give it to `CompactWithOutput` or
    #: `StoreCompaction`, which then refuse to store into another session of the same number.
    identity: str = ""


class CompactionReply(_Versioned, frozen=True):
    """`stored` False: the agent's output held no assistant text (AZUREAL asks once more)."""

    stored: bool
    summary_chars: int = 0


class MeterReply(_Versioned, frozen=True):
    chars: int
    threshold: int
    percent: float


class SearchReply(_Versioned, frozen=True):
    hits: list[SearchHit]


class FollowReply(_Versioned, frozen=True):
    follow: FollowView


class ReindexReply(_Versioned, frozen=True):
    indexed: int


class IndexStatusReply(_Versioned, frozen=True):
    """`pending`: the event rows not yet in the search index (a search indexes them first).
    `stale` (when asked for): entries of rows another program deleted, which the index still counts
    in its ranking until the background removes them (0 when not asked for)."""

    pending: int
    stale: int = 0


class ExportReply(_Versioned, frozen=True):
    """A page of an export; `next_seq` is where the next starts, None after the last."""

    text: str
    next_seq: int | None
    masked: dict[str, int] = {}


class BackupReply(_Versioned, frozen=True):
    path: str
    bytes: int
    sessions: int
    events: int
    integrity: str
    seconds: float


class SourcesReply(_Versioned, frozen=True):
    sources: list[SourceView]


class ImportReply(_Versioned, frozen=True):
    """What `ImportSession` did: `created` a session, or found it and added `appended` events."""

    path: str
    session: SessionView
    created: bool
    appended: int
    lines: int
    skipped: int


class ImportFailure(_Data, frozen=True):
    """A source `ImportSessions` could not import, and why."""

    path: str
    error: str


class ImportsReply(_Versioned, frozen=True):
    """What `ImportSessions` did: one `ImportReply` per source imported, in order, and the failures."""

    imports: list[ImportReply]
    failed: list[ImportFailure] = msgspec.field(default_factory=list)


class UsageReply(_Versioned, frozen=True):
    sessions: list[SessionUsageView]
    worktrees: list[WorktreeUsageView]
    total: UsageView
    #: The request's `by` ("" without one) and its periods, oldest first.
    by: str = ""
    periods: list[UsagePeriodView] = msgspec.field(default_factory=list)
    #: With `by="block"`: the most tokens any finished block held (`azs usage --token-limit max`).
    max_block_tokens: int = 0


class IngestReply(_Versioned, frozen=True):
    format: str
    lines: int
    parsed: int
    appended: int
    duplicates: int
    skipped: dict[str, int]
    events: dict[str, int]


class SyncStatusReply(_Versioned, frozen=True):
    """`configured` is False without a `sync-url`; `url` is shown without its password; `error` is
    the connection's last failure ("" while it works)."""

    configured: bool
    identity: str = ""
    url: str = ""
    error: str = ""
    stores: list[SyncStoreView] = []
    #: Whether secrets are masked in what is pushed (`sync-redact`).
    redact: bool = False
    #: The config file's sync settings could not be taken (the daemon goes on with the last good
    #: ones, or none): why.
    config_error: str = ""


class SyncVerifyReply(_Versioned, frozen=True):
    stores: list[SyncVerifyView]


class RemoteSessionsReply(_Versioned, frozen=True):
    sessions: list[RemoteSessionView]
    total: int


class RemoteSessionReply(_Versioned, frozen=True):
    """A remote session and a page of its events; `next_seq` as in `EventsPage`."""

    session: RemoteSessionView
    events: list[WireEvent]
    next_seq: int | None


class RemoteSearchReply(_Versioned, frozen=True):
    hits: list[RemoteHit]


class PullReply(_Versioned, frozen=True):
    """The new local session, and the remote one it was copied from."""

    session: SessionView
    origin: RemoteSessionView


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
)


# -- notifications ----------------------------------------------------------------------------------


class SessionCreated(_Note, frozen=True):
    session: SessionView


class SessionChanged(_Note, frozen=True):
    """`change` is `renamed`, `completed`, `archived`, `unarchived`, `unlinked` (its fork parent was
    deleted), `compacted` (a compaction was stored), `idle` (a follow into it went idle: it no longer
    shows running), `running` (that follow's file grew again) or `deleted`; `session` is None after
    a delete."""

    session_id: int
    change: str
    session: SessionView | None = None


class EventsAppended(_Note, frozen=True):
    session_id: int
    events: list[WireEvent]


Notification = SessionCreated | SessionChanged | EventsAppended


class SyncCaughtUp(_Versioned, frozen=True):
    """A store's pushes caught up: the sync database holds every event of the store up to
    `pushed_event_id` (its `events.id`), so the other machines see them now. Published on
    :data:`SYNC_TOPIC`, never on a store's topic; `seq` counts the daemon's sync notifications."""

    root: str
    seq: int
    store_uuid: str = ""
    repository: str = ""
    pushed_event_id: int = 0
    pushed: int = 0


#: The PUB topic of sync notifications. It starts with a NUL, and a store's topic starts with its
#: root (an absolute path): no store subscription matches it, so older clients never receive one.
SYNC_TOPIC: Final = b"\0sync\0"

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


def topic(root: str, session: int | None = None) -> bytes:
    """The PUB topic of a session (or the prefix of a whole store with `session=None`)."""
    prefix = root.encode() + b"\0"
    return prefix if session is None else prefix + str(session).encode() + b"\0"


def json_schema() -> dict[str, Any]:
    """JSON Schema of every message (requests, replies, notifications), for plugin authors."""
    schema: dict[str, Any] = msgspec.json.schema(Request | Reply | Notification | SyncCaughtUp)
    return schema
