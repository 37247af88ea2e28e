"""Importing many sources in one go (`azs import`): small ones share short transactions, each in a
savepoint of its own, and the new ones among them are created together.

A transaction's commit costs milliseconds (DELETE journal, fsync), and creating and filling a session
on its own some forty statements, more than reading a small OpenCode session, Aider run or Claude
file does. So small sources (those marked `small`, and Claude and Codex files of at most
:data:`SMALL_FILE_BYTES`) are taken a run at a time (:data:`BATCH_S` of reading): the Aider runs and
OpenCode sessions never imported are read whole first, outside any transaction, then created together
by :meth:`~azsd.store.bulk.BulkSessions.create_filled` (one statement per table for all of them); the
others go through :func:`~azsd.ingest.importer.import_source` (only what grew), each in a savepoint,
so one that fails leaves nothing behind and the others go on. Their writes share transactions of
about :data:`BATCH_S`, with a short pause between for other writers. The rest run alone, in their own
short chunks, as :func:`import_source` runs them.

The Claude and Codex files never imported, up to :data:`AHEAD_FILE_BYTES`, are read ahead of the
writer, in worker processes (:mod:`azsd.ingest.import_ahead`: read, parsed, compacted, compressed,
with their search text and context blocks, by :func:`~azsd.ingest.prepare.prepare_file`), from the
moment `azs import` lists them (:func:`expect_imports`); the writer takes them in order and creates
each run of the small ones (up to :data:`RUN_BYTES`) by one statement per table, as it creates the
new Aider runs and OpenCode sessions, and each bigger one alone, in a transaction of its own (one
of :data:`AHEAD_FILE_BYTES` and :data:`ALONE_EVENTS` takes it under 100 ms). A bigger file, or one
of more events, is imported in chunks, as :func:`import_source` imports it.
Whether another run counted one of a file's API messages is decided there, against the store and the
files of the run before it (:mod:`azsd.ingest.import_prepared`): a file some of whose messages were
counted elsewhere is read again by the writer, leaving them out (a small one; a bigger one, which
would hold the store that long, is imported in chunks); one that is no longer new (or has
sub-agents and messages counted elsewhere) is imported as :func:`import_source` imports it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Final

from azsd.compact import prepare_for_store
from azsd.errors import AzsdError, StoreError
from azsd.events import Event
from azsd.ingest.import_ahead import Job, ReadAhead, expect
from azsd.ingest.import_prepared import Claimed, Ready, filled_session, new_session, record_subagents
from azsd.ingest.importer import NAME_EVENTS, ImportOutcome, import_source, record_lineage
from azsd.ingest.names import first_prompt_name
from azsd.ingest.prepare import LARGEST_BYTES, PREPARED_AGENTS, PreparedFile
from azsd.ingest.source_events import SourceReaders, source_events
from azsd.ingest.sources import Source
from azsd.ingest.usage import usage_record
from azsd.model import StoredEvent
from azsd.store import Store
from azsd.store.bulk import FilledSession

__all__ = [
    "AHEAD_FILE_BYTES",
    "ALONE_EVENTS",
    "BATCH_GAP_S",
    "BATCH_S",
    "SMALL_FILE_BYTES",
    "expect_imports",
    "import_many",
    "import_one",
]

log = logging.getLogger("azsd.ingest.importer")

#: How long a transaction shared by small sources runs before it commits (others wait that long),
#: and how much reading of new sources is gathered for one.
BATCH_S: Final = 0.15
#: The least time between two shared transactions, for other writers (AZUREAL) to get the store.
BATCH_GAP_S: Final = 0.005
#: A Claude or Codex file this small is imported in a transaction shared with others (reading it
#: takes a few ms; a commit of its own was most of its cost).
SMALL_FILE_BYTES: Final = 1 << 20
#: A bigger Claude or Codex file never imported, up to this size, is read ahead too and created
#: alone in a transaction of its own when it has at most :data:`ALONE_EVENTS` events: inserting its
#: rows takes the writer about 5 ms a MB and 7–10 µs an event here (8 MB of 3 800 events: 40–65 ms,
#: 1.3–5 MB of 6 000: 55–90 ms, within the 150 ms a transaction may hold the store; 11 MB of 50 000
#: small events took 400 ms).
#: Bigger ones are imported in chunks (their rows would also take more memory than the read-ahead's
#: bound allows for), and so are those of more events, after all.
AHEAD_FILE_BYTES: Final = LARGEST_BYTES
#: The most events of a file read ahead that is created alone (:data:`AHEAD_FILE_BYTES`).
ALONE_EVENTS: Final = 6000
#: The most bytes of files read ahead whose sessions one statement per table creates.
RUN_BYTES: Final = 1 << 20

Stored = Callable[[int, list[StoredEvent]], None]
Outcome = ImportOutcome | AzsdError
#: Called after each commit of the import (what `on_stored` got so far is committed).
Committed = Callable[[], None]


@dataclass(frozen=True)
class _New:
    """A source never imported, read whole: the session it becomes, and what its outcome says."""

    source: Source
    session: FilledSession
    lines: int
    skipped: int
    #: Read ahead (:mod:`azsd.ingest.prepare`): its sub-agents' usage is recorded once it is created.
    prepared: PreparedFile | None = None

    @property
    def appended(self) -> int:
        """The events its session is created with."""
        rows = self.session.rows
        return len(self.session.events) if rows is None else len(rows.events)


def import_many(
    store: Store,
    sources: Sequence[Source],
    worktree: str = "",
    *,
    on_stored: Stored | None = None,
    committed: Committed | None = None,
) -> list[Outcome]:
    """:func:`import_source` of each source in order: its outcome, or the error that stopped it (the
    others go on, nothing of it is left). Small sources are taken :data:`BATCH_S` of reading at a
    time (the new ones created together) and share transactions of about as long; the others run
    alone. `committed` is called after each transaction (a big source's after its import). A store
    error stops it all (the transaction it broke is rolled back)."""
    out: list[Outcome] = []
    seen: set[str] = set()  # a source named twice is new once
    keys: set[str] = set()  # the usage keys of the sources read whole, before their sessions exist
    ended = [float("-inf")]  # when the last shared transaction committed
    with SourceReaders() as stores, ReadAhead(_jobs(store, sources), root=str(store.root)) as ahead:
        i = 0
        while i < len(sources):
            if not _small(sources[i]):
                found = ahead.next()
                done = None
                if isinstance(found, PreparedFile):
                    done = _create_alone(store, Ready(sources[i], found), worktree, ended)
                out.append(done or _guarded(store, sources[i], worktree, on_stored, stores))
                if committed is not None:
                    committed()
                i += 1
                continue
            start = time.monotonic()
            batch: list[Source | _New | Ready | AzsdError] = []
            while i < len(sources) and _small(sources[i]) and time.monotonic() - start < BATCH_S:
                found = ahead.next()
                ready = Ready(sources[i], found) if isinstance(found, PreparedFile) else None
                batch.append(ready or _read_if_new(store, sources[i], worktree, seen, stores, keys))
                i += 1
            out += _write(store, batch, worktree, on_stored, stores, committed, ended)
    return out


def import_one(
    store: Store, source: Source, worktree: str = "", *, on_stored: Stored | None = None
) -> ImportOutcome:
    """:func:`import_source` of `source` (`ImportSession`: `azs import` sends a big file alone), but
    a file a listing named (:func:`expect_imports`) is taken as the workers read it, and created
    alone when it is new (:func:`_create_alone`).

    Raises:
        AzsdError: as :func:`import_source` does.
    """
    with ReadAhead(_jobs(store, [source]), root=str(store.root)) as ahead:
        found = ahead.next() if ahead.in_workers else None
    done = None
    if isinstance(found, PreparedFile):
        done = _create_alone(store, Ready(source, found), worktree, [float("-inf")])
    return done or import_source(store, source, worktree, on_stored=on_stored)


def expect_imports(store: Store, sources: Sequence[Source]) -> None:
    """`sources` may be imported into `store` next, in this order (`azs import` listed them): the
    files :func:`import_many` reads ahead are read once its first request comes, ahead of the
    requests that follow (:func:`~azsd.ingest.import_ahead.expect`)."""
    expect(str(store.root), [job for job in _jobs(store, sources) if job is not None])


def _jobs(store: Store, sources: Sequence[Source]) -> list[Job]:
    """What to read ahead: the Claude and Codex files never imported of at most
    :data:`AHEAD_FILE_BYTES` (the first time each is named), each as a job of
    :class:`~azsd.ingest.import_ahead.ReadAhead`."""
    jobs: list[Job] = []
    named: set[str] = set()
    for source in sources:
        record = store.get_import(source.key) if source.agent in PREPARED_AGENTS else None
        new = record is None or not store.has_session(record.session_id)
        ahead = source.agent in PREPARED_AGENTS and source.size <= AHEAD_FILE_BYTES
        if ahead and new and source.key not in named:
            jobs.append((str(source.path), source.agent, source.size))
        else:
            jobs.append(None)
        named.add(source.key)
    return jobs


def _small(source: Source) -> bool:
    """Whether `source` shares a transaction with others."""
    return source.small or (source.agent in ("claude", "codex") and source.size <= SMALL_FILE_BYTES)


def _read_if_new(
    store: Store, source: Source, worktree: str, seen: set[str], stores: SourceReaders, keys: set[str]
) -> Source | _New | AzsdError:
    """`source` read whole when it was never imported (or its session is gone), else `source`; the
    error when it cannot be read. `keys`: the usage keys the sources read before it in this import
    count (their sessions are not created yet), to which its own are added."""
    if source.agent not in ("aider", "opencode"):
        return source  # a file: imported as it is read, in its savepoint
    record = store.get_import(source.key)
    if (record is not None and store.has_session(record.session_id)) or source.key in seen:
        return source
    seen.add(source.key)
    try:
        found = source_events(source, stores)
        found.report.counted_elsewhere = partial(_claimed, store, keys)  # a fork's copies, counted once
        events: list[Event] = []
        for chunk in found.chunks:
            events += prepare_for_store(chunk)
    except StoreError:
        raise
    except AzsdError as exc:
        return exc
    keys.update(found.report.message_keys)
    usage = usage_record(found.report, found.name)
    name = source.own_title or first_prompt_name(events[:NAME_EVENTS]) or source.title or source.path.stem
    filled = filled_session(source, name, worktree, source.size, usage, found.at, events=events)
    return _New(source, filled, found.report.lines, found.report.skipped_total)


def _claimed(store: Store, keys: set[str], key: str) -> bool:
    """Whether a source read before in this import, a run of the store or another store of the
    account counted the response `key`."""
    return key in keys or bool(store.usage_keys_counted([key], claim=False))


def _write(
    store: Store,
    batch: Sequence[Source | _New | Ready | AzsdError],
    worktree: str,
    on_stored: Stored | None,
    stores: SourceReaders,
    committed: Committed | None,
    ended: list[float],
) -> list[Outcome]:
    """Store `batch` in order, in transactions of about :data:`BATCH_S`: each run of new sources
    created together, the others imported one by one, each in a savepoint. `committed` is called after
    each transaction; `ended[0]`: when the last one committed (the next begins :data:`BATCH_GAP_S`
    after it at the earliest; reading new sources takes as long)."""
    out: list[Outcome] = []
    j = 0
    while j < len(batch):
        _pause(ended)
        start = time.monotonic()
        with store.atomic(create=True), store.upkeep_deferred():  # summaries and search: once at the end
            while j < len(batch) and time.monotonic() - start < BATCH_S:
                item = batch[j]
                if isinstance(item, _New | Ready):
                    run, j = _run(store, batch, j, worktree)
                    if run:
                        out += _create(store, run)
                        continue
                    item = item.source  # not new any more, or counted elsewhere: imported the usual way
                out.append(
                    item
                    if isinstance(item, AzsdError)
                    else _guarded(store, item, worktree, on_stored, stores, shared=True)
                )
                j += 1
        if committed is not None:
            committed()
        ended[0] = time.monotonic()
    return out


Item = Source | _New | Ready | AzsdError


def _pause(ended: list[float]) -> None:
    """Wait until :data:`BATCH_GAP_S` after the last transaction (`ended[0]`): other writers get
    the store between two."""
    pause = BATCH_GAP_S - (time.monotonic() - ended[0])
    if pause > 0:
        time.sleep(pause)


def _create_alone(store: Store, ready: Ready, worktree: str, ended: list[float]) -> ImportOutcome | None:
    """The session of a file bigger than :data:`SMALL_FILE_BYTES` read ahead, created in a
    transaction of its own; None (nothing stored) when it has more than :data:`ALONE_EVENTS`
    events, is not new any more, or some of its messages were counted elsewhere (reading it again
    would hold the store): it is then imported in chunks."""
    if len(ready.prepared.rows.events) > ALONE_EVENTS:
        return None
    _pause(ended)
    with store.atomic(create=True), store.upkeep_deferred():
        made = new_session(store, ready, worktree, Claimed(set(), set()), again=False)
        done = None
        if made is not None:
            session, prepared = made
            new = _New(ready.source, session, prepared.lines, prepared.skipped, prepared)
            done = _create(store, [new])[0]
    ended[0] = time.monotonic()
    return done


def _run(store: Store, batch: Sequence[Item], j: int, worktree: str) -> tuple[list[_New], int]:
    """The new sessions from `batch[j]` on to create together (up to :data:`RUN_BYTES` of files
    read ahead), and where they end: at a source read ahead that cannot be created as it was read."""
    run: list[_New] = []
    claimed = Claimed(set(), set())
    size = 0
    while j < len(batch) and size < RUN_BYTES:
        item = batch[j]
        if isinstance(item, Ready):
            made = new_session(store, item, worktree, claimed)
            if made is None:
                break
            session, prepared = made
            item = _New(item.source, session, prepared.lines, prepared.skipped, prepared)
            size += prepared.size
        elif not isinstance(item, _New):
            break
        run.append(item)
        j += 1
    return run, j


def _create(store: Store, run: Sequence[_New]) -> list[ImportOutcome]:
    """Create the sessions of `run` together (inside the caller's transaction), forks linked to
    their parents."""
    ids = store.create_filled([new.session for new in run])
    for sid, new in zip(ids, run, strict=True):
        if new.source.parent_key:
            record_lineage(store, sid, new.source)
        if new.prepared is not None:
            record_subagents(store, sid, new.prepared)
    log.info("imported %d new sources into S%d–S%d", len(run), ids[0], ids[-1])
    return [
        ImportOutcome(sid, True, new.appended, new.lines, new.skipped, False)
        for sid, new in zip(ids, run, strict=True)
    ]


def _guarded(
    store: Store,
    source: Source,
    worktree: str,
    on_stored: Stored | None,
    stores: SourceReaders,
    *,
    shared: bool = False,
) -> Outcome:
    """:func:`import_source`, or the error that stopped it; `shared`: in a savepoint of the caller's
    transaction, so that a failure leaves nothing of it (nor says anything it stored)."""
    if not shared:
        try:
            return import_source(store, source, worktree, on_stored=on_stored, stores=stores)
        except StoreError:
            raise  # the store itself failed: the import stops
        except AzsdError as exc:
            return exc
    held: list[tuple[int, list[StoredEvent]]] = []

    def hold(session_id: int, events: list[StoredEvent]) -> None:
        held.append((session_id, events))

    try:
        with store.atomic(create=True):
            outcome = import_source(store, source, worktree, on_stored=hold, stores=stores)
    except StoreError:
        raise  # the store itself failed: the batch stops (its transaction is rolled back)
    except AzsdError as exc:
        return exc
    if on_stored is not None:
        for sid, events in held:
            on_stored(sid, events)
    return outcome
