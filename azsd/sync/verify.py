"""`azs sync verify`: each session's events in the sync database against its store's, and a repair.

For each store the daemon pushes, the events of each session up to the store's push cursor (what the
database should hold by now) are counted in the file and in the database. A session the database
holds fewer of is pushed again (:meth:`~azsd.sync.push.StorePush.push_again`: only the missing rows
are inserted; a session tombstoned while the file still has it comes back). One the database holds
more of cannot be repaired by pushing: it is reported (the file is not the one that pushed them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from azsd.ipc import protocol as p
from azsd.sync.push import StorePush

if TYPE_CHECKING:
    import psycopg

    from azsd.store import Store

__all__ = ["verify_store"]


def verify_store(
    conn: psycopg.Connection[Any], store: Store, job: StorePush, *, repair: bool
) -> p.SyncVerifyView:
    """Compare (and with `repair`, repair) one store; `job` pushes what is missing."""
    ident = store.sync_identity()
    if ident is None:
        return p.SyncVerifyView(root=job.root, error="never pushed: nothing to compare yet")
    store_uuid = ident[0]
    row = conn.execute(
        "SELECT pushed_event_id FROM azsd.stores WHERE store_uuid = %s", (store_uuid,)
    ).fetchone()
    if row is None:
        return p.SyncVerifyView(root=job.root, store_uuid=store_uuid, error="not in the sync database yet")
    cursor = int(row[0])
    with store.snapshot():
        local = store.sync_session_counts(cursor)
    remote = {
        str(u): int(n)
        for u, n in conn.execute(
            "SELECT session_uuid::text, COUNT(*) FROM azsd.events WHERE session_uuid = ANY(%s::uuid[]) "
            "GROUP BY session_uuid",
            ([u for u, _, _ in local],),
        )
    }
    checks = []
    for uuid, local_id, count in local:
        held = remote.get(uuid, 0)
        if held == count:
            continue
        if held > count:
            error = "the database holds more events than the file: it was pushed from another file"
            checks.append(p.SyncSessionCheck(uuid, local_id, count, held, error=error))
            continue
        repaired = job.push_again(conn, store, ident, uuid, cursor) if repair else 0
        checks.append(p.SyncSessionCheck(uuid, local_id, count, held, repaired=repaired))
    return p.SyncVerifyView(root=job.root, store_uuid=store_uuid, checked=len(local), sessions=checks)
