"""The `.azs` session store: the only code in azsd that touches sqlite3.

A :class:`Store` is one connection to ``<root>/.azureal/sessions.azs`` in AZUREAL's v3 format
(spec/store-format.md), owned by one thread. Opening a root never creates the file; creating the
first session does. Writes run in ``BEGIN IMMEDIATE`` transactions; :meth:`Store.atomic` groups many
of them into one commit (nested calls become savepoints).

>>> import tempfile, pathlib
>>> from azsd.events import UserMessage
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> with Store.open(root) as store:
...     s = store.create_session(worktree="main")
...     store.append_events(s.id, [UserMessage(content="hi")]).inserted
1

:class:`Store` is built in layers, one module each; a layer subclasses the layers it uses and
nothing else (``A → B``: A builds on B)::

    Store (here) → SyncState, BulkSessions, Sessions, SideTables, FullRecord, RequestLog, Vacuum, Backup
    BulkSessions (bulk.py)          new sessions with their events, many at once → Sessions, SideTables
    SyncState (sync_state.py)       sync's UUIDs, rows since a cursor, tombstones → Sessions, SideTables
    Sessions (sessions.py)          create, rename, delete, fork, archive, badge, agent uuid → EventLog
    SideTables (side_tables.py)     usage, imports, follows, compactions, context → EventLog
    FullRecord (full_record.py)     what the agents wrote, kept in chunks beside the events → EventLog
    RequestLog (requests.py)        request keys: their digests and packed replies → EventLog
    EventLog (events.py)            append and load events, the badge → StaleEntries, SessionListing
    StaleEntries (fts_stale.py)     entries of rows gone (AZUREAL's deletes): found, removed → SearchIndex
    SearchIndex (fts.py)            the FTS5 index: its upkeep, reindex, search → StoreCore
    SessionListing (listing.py)     session lookups and listings, the session index → StoreCore
    Backup (backup.py)              a verified copy of the file → StoreCore
    Vacuum (vacuum.py)              free pages given back, in paced steps → StoreCore
    StoreCore (core.py)             open, pragmas, migration, read-only, atomic(), error translation

Beside them: :mod:`~azsd.store.schema` (the DDL text), :mod:`~azsd.store.codec` (zstd rows) and
:mod:`~azsd.store.cache` (the row cache and the session index, pure data).
"""

from __future__ import annotations

from azsd.store.backup import Backup
from azsd.store.bulk import BulkSessions
from azsd.store.core import BUSY_TIMEOUT_S, STORE_DIR, STORE_FILE, store_path
from azsd.store.events import completion_of
from azsd.store.full_record import FullRecord
from azsd.store.requests import RequestLog
from azsd.store.sessions import Sessions
from azsd.store.side_tables import SideTables
from azsd.store.sync_state import SyncState
from azsd.store.vacuum import Vacuum

__all__ = ["BUSY_TIMEOUT_S", "STORE_DIR", "STORE_FILE", "Store", "completion_of", "store_path"]


class Store(SyncState, BulkSessions, Sessions, SideTables, FullRecord, RequestLog, Vacuum, Backup):
    """One `.azs` file, opened lazily: absent until the first session is created."""
