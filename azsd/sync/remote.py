"""Reads of the sync database: a repository's sessions, one session's events, search, and what a
pull copies. Pure SQL over one connection; the daemon's sync service turns the results into replies.
"""

from __future__ import annotations

import re
from typing import Any, Final
from uuid import UUID

import msgspec
import psycopg
from psycopg.rows import dict_row

from azsd.errors import BadRequestError, RemoteSessionNotFound
from azsd.events import EventDecodeError, decode_event, event_kind
from azsd.ipc import protocol as p
from azsd.search import event_kinds
from azsd.store.codec import CodecError, RowCodec
from azsd.store.sync_state import PulledSession

__all__ = [
    "fetch_for_pull",
    "list_sessions",
    "resolve_ref",
    "search",
    "session_events",
    "session_view",
    "uuid_range",
]

_REF: Final = re.compile(r"^@?([0-9a-fA-F-]{4,36})$")
_HEADLINE: Final = "StartSel=[[, StopSel=]], MaxWords=24, MinWords=8, MaxFragments=0"
_VIEW_COLUMNS: Final = (
    "s.session_uuid::text AS uuid, s.identity, s.repository, st.root, s.local_id, s.name, s.worktree, "
    "s.created, to_char(s.updated AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS updated, "
    "CASE WHEN s.state = 'ended' AND s.event_count = 0 THEN 'new' ELSE s.state END AS state, "
    "s.event_count, s.message_count, s.char_total, s.archived, s.completed, s.duration_ms, s.cost_usd, "
    "s.parent_uuid::text AS parent, s.fork_seq, s.pulled_from::text AS pulled_from, "
    "s.usage_input, s.usage_output, s.usage_cache_read, s.usage_cache_write, s.usage_reasoning, "
    "s.usage_cost_usd, s.usage_turns, s.cost_source, s.owner::text AS owner, "
    "to_char(s.deleted AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS deleted"
)


def session_view(
    row: dict[str, Any], *, identity: str = "", root: str = "", login: str = ""
) -> p.RemoteSessionView:
    """The wire view of a session row: `own` when pushed by the role `login`, `mine` when also with
    `identity` from `root` (an identity alone proves nothing: any role can claim any)."""
    own = bool(login) and row["owner"] == login
    usage = None
    if row["usage_turns"]:
        usage = p.UsageView(
            input=row["usage_input"], output=row["usage_output"], cache_read=row["usage_cache_read"],
            cache_write=row["usage_cache_write"], reasoning=row["usage_reasoning"],
            cost_usd=row["usage_cost_usd"], cost_source=row["cost_source"],
        )  # fmt: skip
    return p.RemoteSessionView(
        uuid=row["uuid"], identity=row["identity"], repository=row["repository"], root=row["root"],
        local_id=row["local_id"], name=row["name"], worktree=row["worktree"], created=row["created"],
        updated=row["updated"], state=row["state"], event_count=row["event_count"],
        message_count=row["message_count"], char_total=row["char_total"], archived=row["archived"],
        completed=row["completed"], duration_ms=row["duration_ms"], cost_usd=row["cost_usd"],
        parent=row["parent"], fork_seq=row["fork_seq"], pulled_from=row["pulled_from"], usage=usage,
        mine=own and bool(identity) and row["identity"] == identity and row["root"] == root,
        deleted=row["deleted"], owner=row["owner"], own=own,
    )  # fmt: skip


def login_role(conn: psycopg.Connection[Any]) -> str:
    """The role this connection logged in as (what `owner` is compared with)."""
    row = conn.execute("SELECT session_user::text").fetchone()
    return str(row[0]) if row else ""


def list_sessions(
    conn: psycopg.Connection[Any], repository: str, req: p.RemoteList, identity: str, login: str = ""
) -> p.RemoteSessionsReply:
    """The repository's sessions, newest first: last pushed first, then the newest session of a
    push first (a first push of a whole store pushes them all at once)."""
    if req.limit < 0 or req.offset < 0:
        raise BadRequestError("limit and offset must not be negative")
    params = {
        "repo": repository, "deleted": req.deleted, "worktrees": req.worktrees, "limit": req.limit,
        "offset": req.offset,
    }  # fmt: skip
    # azsd.session_page and session_total (005) check the read rule once, not once per session
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            f"SELECT {_VIEW_COLUMNS} FROM azsd.session_page(%(repo)s, %(worktrees)s::text[], %(deleted)s, "
            "%(limit)s, %(offset)s) pg JOIN azsd.sessions s ON s.session_uuid = pg.session_uuid "
            "JOIN azsd.stores st ON st.store_uuid = s.store_uuid "
            "ORDER BY s.updated DESC, s.created DESC, s.local_id DESC, s.session_uuid",
            params,
        ).fetchall()
        total = cur.execute(
            "SELECT azsd.session_total(%(repo)s, %(worktrees)s::text[], %(deleted)s) AS n", params
        ).fetchone()
    views = [session_view(r, identity=identity, root=req.root, login=login) for r in rows]
    return p.RemoteSessionsReply(sessions=views, total=int(total["n"]) if total else 0)


def uuid_range(prefix: str) -> tuple[str, str]:
    """The first and last UUID that start with the hex digits of `prefix` (its dashes ignored).

    >>> uuid_range("0fec61")
    ('0fec6100-0000-0000-0000-000000000000', '0fec61ff-ffff-ffff-ffff-ffffffffffff')
    """
    digits = prefix.replace("-", "")
    low, high = (digits + "0" * 32)[:32], (digits + "f" * 32)[:32]
    return str(UUID(low)), str(UUID(high))


def resolve_ref(conn: psycopg.Connection[Any], ref: str) -> str:
    """The UUID a REMOTE-REF names: a UUID, or ``@`` and a unique prefix of one (4 hex digits or more).

    The prefix is looked up as a range of the primary key: a ``LIKE`` on the UUID's text would read
    every session, each checked against the read policy first (``LIKE`` is not leakproof)."""
    match = _REF.match(ref.strip())
    if not match:
        raise BadRequestError(
            f"not a remote session: {ref!r} (expected @ and the first 4 or more hex digits of its UUID, as "
            "`azs ls --remote` shows them)"
        )
    prefix = match.group(1).lower()
    if len(prefix.replace("-", "")) > 32:
        raise RemoteSessionNotFound(f"no remote session @{prefix}")
    rows = conn.execute(
        "SELECT session_uuid::text FROM azsd.sessions WHERE session_uuid BETWEEN %s AND %s "
        "ORDER BY session_uuid LIMIT 6",
        uuid_range(prefix),
    ).fetchall()
    found = [str(r[0]) for r in rows if str(r[0]).startswith(prefix)]  # (and its dashes in place)
    if not found:
        raise RemoteSessionNotFound(f"no remote session @{prefix}")
    if len(found) > 1:
        some = ", ".join("@" + r[:12] for r in found[:5])
        raise BadRequestError(f"@{prefix} names more than one remote session ({some}…): give more of it")
    return found[0]


def _session_row(conn: psycopg.Connection[Any], uuid: str) -> dict[str, Any]:
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            f"SELECT {_VIEW_COLUMNS} FROM azsd.sessions s JOIN azsd.stores st USING (store_uuid) "
            "WHERE s.session_uuid = %s",
            (uuid,),
        ).fetchone()
    if row is None:
        raise RemoteSessionNotFound(f"no remote session @{uuid}")
    return row


def session_events(
    conn: psycopg.Connection[Any], req: p.RemoteShow, identity: str, codec: RowCodec, login: str = ""
) -> p.RemoteSessionReply:
    """A remote session, and a page of its events (their JSON, as stored)."""
    if req.limit < 1 or req.from_seq < 1:
        raise BadRequestError("limit and from_seq must be at least 1")
    uuid = resolve_ref(conn, req.ref)
    view = session_view(_session_row(conn, uuid), identity=identity, root=req.root, login=login)
    rows = conn.execute(  # (003: the read rule once, not the policies' rule of every session)
        "SELECT seq, kind, data FROM azsd.session_events(%s, %s, %s)", (uuid, req.from_seq, req.limit + 1)
    ).fetchall()
    more = len(rows) > req.limit
    rows = rows[: req.limit]
    texts = _texts(codec, [data for _, _, data in rows])
    events = [
        p.WireEvent(seq=seq, kind=kind, data=text)
        for (seq, kind, _), text in zip(rows, texts, strict=True)
        if text is not None
    ]
    return p.RemoteSessionReply(
        session=view, events=events, next_seq=rows[-1][0] + 1 if more else None,
        unreadable=len(rows) - len(events) or msgspec.UNSET,
    )  # fmt: skip


def search(
    conn: psycopg.Connection[Any], repository: str, req: p.RemoteSearch, codec: RowCodec
) -> p.RemoteSearchReply:
    """Ranked full-text search of the repository's live sessions, with snippets."""
    if req.limit < 1:
        raise BadRequestError("limit must be at least 1")
    if not req.query.strip():
        raise BadRequestError("an empty query matches nothing")
    parse = "plainto_tsquery" if req.words else "websearch_to_tsquery"
    kinds = event_kinds(req.kinds) if req.kinds is not None else None
    # azsd.search_page (003) finds and ranks the hits with one scan of the GIN index, only those
    # this role may read (the rule once per session), and reads the page's rows by key.
    sql = (
        "SELECT h.session_uuid::text AS uuid, h.identity, h.name, h.local_id, h.worktree, h.seq, h.kind, "
        f"h.data, h.rank, h.snippet FROM {parse}('simple', %(query)s) AS q(q), "
        "azsd.search_page(%(repo)s, q.q, %(kinds)s, %(worktrees)s, %(limit)s, %(headline)s) h"
    )
    params = {
        "repo": repository, "worktrees": req.worktrees, "kinds": kinds, "query": req.query,
        "limit": req.limit, "headline": _HEADLINE,
    }  # fmt: skip
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(sql, params).fetchall()
    owners = _owners(conn, sorted({r["uuid"] for r in rows}))
    texts = _texts(codec, [r["data"] for r in rows])
    hits = [
        p.RemoteHit(
            session=r["uuid"],
            identity=r["identity"],
            session_name=r["name"] or f"S{r['local_id']}",
            seq=r["seq"],
            kind=r["kind"],
            rank=float(r["rank"]),
            snippet=r["snippet"] or "",
            data=text,
            worktree=r["worktree"],
            owner=owners.get(r["uuid"], ""),
        )
        for r, text in zip(rows, texts, strict=True)
        if text is not None
    ]
    return p.RemoteSearchReply(hits=hits, unreadable=len(rows) - len(hits) or msgspec.UNSET)


def _texts(codec: RowCodec, rows: list[Any]) -> list[str | None]:
    """Each row's JSON text, or None for one that cannot be read (a teammate's corrupt frame, or one
    over the size an event may hold): the reply leaves it out and counts it, and the rest is read."""
    texts: list[str | None] = []
    for found in codec.decode_many([bytes(data) for data in rows]):
        texts.append(None if isinstance(found, CodecError) else found.decode("utf-8", "replace"))
    return texts


def _owners(conn: psycopg.Connection[Any], uuids: list[str]) -> dict[str, str]:
    """The role that pushed each of a page's sessions (by primary key: a page's worth of rows)."""
    if not uuids:
        return {}
    rows = conn.execute(
        "SELECT session_uuid::text, owner::text FROM azsd.sessions WHERE session_uuid = ANY(%s::uuid[])",
        (uuids,),
    ).fetchall()
    return {str(u): str(o) for u, o in rows}


def fetch_for_pull(
    conn: psycopg.Connection[Any], ref: str, name: str | None, worktree: str | None
) -> tuple[PulledSession, dict[str, Any]]:
    """Everything `azs pull` copies of a remote session (read in one snapshot), and its row."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        uuid = resolve_ref(conn, ref)
        row = _session_row(conn, uuid)
        if row["deleted"] is not None:
            raise BadRequestError(f"@{uuid} was deleted at its origin ({row['deleted']}): nothing to pull")
        rows = conn.execute(
            "SELECT seq, kind, data, char_len FROM azsd.session_events(%s, %s, NULL)", (uuid, -(2**31))
        ).fetchall()
        codec = RowCodec()
        events = [
            (seq, kind, bytes(data), char_len)
            for seq, kind, data, char_len in rows
            if _pullable(codec, seq, kind, bytes(data), char_len)
        ]
        kept = {seq for seq, *_ in events}
        compactions = [
            (after, summary, created)
            for after, summary, created in conn.execute(
                "SELECT after_seq, summary, created FROM azsd.session_compactions(%s)", (uuid,)
            )
            if after in kept and isinstance(summary, str)
        ]
    pulled = PulledSession(
        origin_uuid=uuid,
        ref="@" + uuid,
        name=name if name is not None else row["name"],
        worktree=worktree if worktree is not None else row["worktree"],
        completed=row["completed"],
        duration_ms=row["duration_ms"],
        cost_usd=cost if isinstance(cost := row["cost_usd"], float) and 0 <= cost < 1e9 else None,
        events=events,
        compactions=compactions,
        left_out=len(rows) - len(events),
    )
    return pulled, row


def _pullable(codec: RowCodec, seq: object, kind: object, data: bytes, char_len: object) -> bool:
    """Whether a teammate's event row may be copied into a store (and pushed again, as the puller's):
    a positive seq, a count that is one, and a frame that decodes, within bounds, to an event of
    its kind. The rest is left out (and counted), never copied: a store keeps only what it can read."""
    if not (isinstance(seq, int) and 0 < seq < 2**62 and isinstance(char_len, int) and 0 <= char_len < 2**40):
        return False
    try:
        event = decode_event(codec.decode(data))
    except (CodecError, EventDecodeError):
        return False
    return event_kind(event) == kind
