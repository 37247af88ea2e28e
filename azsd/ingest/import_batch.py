"""Importing many sources in one go (`azs import`): small ones share short transactions.

A transaction's commit costs milliseconds (DELETE journal, fsync), more than importing a small
OpenCode session or Aider run does; so sources marked `small` are imported together, one commit per
:data:`BATCH_S` of work, with a short pause between for other writers. The rest run alone, in their
own short chunks, as :func:`~azsd.ingest.importer.import_source` runs them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Final

from azsd.errors import AzsdError, StoreError
from azsd.ingest.importer import ImportOutcome, import_source
from azsd.ingest.sources import Source
from azsd.model import StoredEvent
from azsd.store import Store

__all__ = ["BATCH_GAP_S", "BATCH_S", "import_many"]

#: How long a transaction shared by small sources runs before it commits (others wait that long).
BATCH_S: Final = 0.15
#: The pause between two shared transactions, for other writers (AZUREAL) to get the store.
BATCH_GAP_S: Final = 0.005


def import_many(
    store: Store,
    sources: Sequence[Source],
    worktree: str = "",
    *,
    on_stored: Callable[[int, list[StoredEvent]], None] | None = None,
) -> list[ImportOutcome | AzsdError]:
    """:func:`import_source` of each source in order: its outcome, or the error that stopped it (the
    others go on). Small sources share transactions of about :data:`BATCH_S`; the others run alone."""
    out: list[ImportOutcome | AzsdError] = []
    i = 0
    while i < len(sources):
        if not sources[i].small:
            out.append(_guarded(store, sources[i], worktree, on_stored))
            i += 1
            continue
        start = time.monotonic()
        with store.atomic(create=True):
            while i < len(sources) and sources[i].small and time.monotonic() - start < BATCH_S:
                out.append(_guarded(store, sources[i], worktree, on_stored))
                i += 1
        time.sleep(BATCH_GAP_S)
    return out


def _guarded(
    store: Store, source: Source, worktree: str, on_stored: Callable[[int, list[StoredEvent]], None] | None
) -> ImportOutcome | AzsdError:
    try:
        return import_source(store, source, worktree, on_stored=on_stored)
    except StoreError:
        raise  # the store itself failed: the batch stops (its transaction is rolled back)
    except AzsdError as exc:
        return exc
