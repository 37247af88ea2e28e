"""Usage read in place: the token usage of agent files no store holds, without storing them.

`azs usage --all` reports every project of the machine; a project whose files were never imported
(or not yet: a daemon just started, its watch still catching up) is read where it lies, as ccusage
reads it. Each file is parsed for its usage alone (:func:`~azsd.ingest.file.parse_usage`: the same
figures as an import, to the token and the cent), by the worker processes when the files are many,
and made into usage rows of a run of no session (`session_id` 0). A model response counted by a
store, or by a file read before, is left out: each response once (a file holding one is read again
here, told which). A file that cannot be read or parsed is skipped and named.

What a file gave is kept (:class:`_Reads`, at most :data:`KEPT_FILES` files, the least recently asked
dropped first) under its identity, size and mtime, and under the responses left out: the next
`usage --all` reads only the files that changed since, as a store reads only what an agent appended.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from azsd.errors import AzsdError
from azsd.ingest.file import parse_usage
from azsd.ingest.import_ahead import in_workers
from azsd.ingest.usage import UsageRecord, usage_record
from azsd.model import SLOT_SECONDS, UsageRow

__all__ = ["read_in_place"]

log = logging.getLogger("azsd.ingest.in_place")

#: Files a worker reads in one go (fewer round trips), and the most bytes such a batch holds.
_BATCH_FILES: Final = 64
_BATCH_BYTES: Final = 8 << 20

#: A file's usage as read (its record, every response id it met, its mtime), or why it was skipped.
_Read = tuple[UsageRecord | None, list[str], float] | str

#: The most files whose usage read in place is kept (a few hundred bytes each).
KEPT_FILES: Final = 50_000

#: A file whose mtime is this recent is read again next time (two writes in one tick of the file
#: system's clock can leave the same size and mtime).
RACY_S: Final = 2.0

#: What identifies a file's content as read: its device, inode, size and mtime.
_Stamp = tuple[int, int, int, int]


class _Reads:
    """Files' usage as read before, by path and the responses left out: the stamp it was read at and
    what it gave; thread-safe, at most `limit` reads, the least recently asked dropped first."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._kept: dict[tuple[str, frozenset[str]], tuple[_Stamp, _Read]] = {}

    def get(self, path: str, stamp: _Stamp | None, left_out: frozenset[str]) -> _Read | None:
        with self._lock:
            found = self._kept.pop((path, left_out), None)
            if found is None or stamp is None or found[0] != stamp:
                return None
            self._kept[path, left_out] = found  # the most recently asked last
            return found[1]

    def put(self, path: str, stamp: _Stamp | None, left_out: frozenset[str], read: _Read) -> None:
        if stamp is None or isinstance(read, str) or stamp[3] > (time.time() - RACY_S) * 1e9:
            return  # (a file changed this recently may change again with the same size and mtime)
        with self._lock:
            self._kept.pop((path, left_out), None)
            self._kept[path, left_out] = (stamp, read)
            while len(self._kept) > self._limit:
                del self._kept[next(iter(self._kept))]


_READS: Final = _Reads(KEPT_FILES)


def read_in_place(
    paths: Sequence[str], counted: Callable[[Sequence[str]], set[str]]
) -> tuple[list[UsageRow], list[str]]:
    """The usage rows of the agent files `paths` (each a run of session 0), and the files skipped;
    `counted(ids)` says which of some model response ids a store counted already."""
    stamps = {path: _stamp(path) for path in paths}
    none: frozenset[str] = frozenset()
    known = {path: read for path in paths if (read := _READS.get(path, stamps[path], none)) is not None}
    fresh = [path for path in paths if path not in known]
    sizes = [stamp[2] if (stamp := stamps[path]) else 0 for path in fresh]
    batches = _batches(fresh, sizes)
    for batch, found in zip(batches, in_workers(_read_batch, batches, size=sum(sizes)), strict=True):
        results = _read_batch(batch) if isinstance(found, Exception) else found
        for text, result in zip(batch, results, strict=True):
            known[text] = result
            _READS.put(text, stamps[text], none, result)
    seen: set[str] = set()
    rows: list[UsageRow] = []
    skipped: list[str] = []
    for text in paths:
        result = known[text]
        if isinstance(result, str):
            log.info("%s: not read in place (%s)", text, result)
            skipped.append(text)
            continue
        record, keys, mtime = result
        taken = frozenset({key for key in keys if key in seen} | counted(keys) if keys else ())
        if taken:  # some are counted: read again, told which
            again = _READS.get(text, stamps[text], taken)
            if again is None:
                again = _read_one(text, taken.__contains__)
                _READS.put(text, stamps[text], taken, again)
            if isinstance(again, str):
                skipped.append(text)
                continue
            record, keys, mtime = again
        seen.update(keys)
        rows += _rows(text, record, mtime)
    return rows, skipped


def _read_batch(paths: Sequence[str]) -> list[_Read]:
    """(In a worker.) The usage of each file of `paths`, every response counted."""
    return [_read_one(path, None) for path in paths]


def _read_one(path: str, counted: Callable[[str], bool] | None) -> _Read:
    try:
        mtime = os.stat(path).st_mtime
        report = parse_usage(Path(path), counted)
    except (OSError, AzsdError) as exc:
        return str(exc)
    return usage_record(report, path), list(report.message_keys), mtime


def _rows(path: str, record: UsageRecord | None, mtime: float) -> list[UsageRow]:
    if record is None:
        return []
    rows = []
    for n, part in enumerate(record.parts):
        first = part.first if part.first is not None else mtime
        last = part.last if part.last is not None else first
        rows.append(
            UsageRow(
                session_id=0, source=path, model=part.model,
                slot=part.slot if part.slot is not None else int(first // SLOT_SECONDS) * SLOT_SECONDS,
                first=first, last=last, usage=part.usage,
                cost_usd=None if part.cost is None else part.cost.usd,
                cost_source=None if part.cost is None else part.cost.source,
                turns=record.turns if n == 0 else 0,
            )
        )  # fmt: skip
    return rows


def _batches(paths: Sequence[str], sizes: Sequence[int]) -> list[list[str]]:
    batches: list[list[str]] = []
    held = 0
    for path, size in zip(paths, sizes, strict=True):
        if not batches or len(batches[-1]) >= _BATCH_FILES or held + size > _BATCH_BYTES:
            batches.append([])
            held = 0
        batches[-1].append(path)
        held += size
    return batches


def _stamp(path: str) -> _Stamp | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns
