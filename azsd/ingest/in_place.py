"""Usage read in place: the token usage of agent files no store holds, without storing them.

`azs usage --all` reports every project of the machine; a project whose files were never imported
(or not yet: a daemon just started, its watch still catching up) is read where it lies, as ccusage
reads it. Each file is parsed for its usage alone (:func:`~azsd.ingest.file.parse_usage`: the same
figures as an import, to the token and the cent), by the worker processes when the files are many,
and made into usage rows of a run of no session (`session_id` 0). A model response counted by a
store, or by a file read before, is left out: each response once (a file holding one is read again
here, told which). A file that cannot be read or parsed is skipped and named.
"""

from __future__ import annotations

import logging
import os
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


def read_in_place(
    paths: Sequence[str], counted: Callable[[Sequence[str]], set[str]]
) -> tuple[list[UsageRow], list[str]]:
    """The usage rows of the agent files `paths` (each a run of session 0), and the files skipped;
    `counted(ids)` says which of some model response ids a store counted already."""
    sizes = [_size(path) for path in paths]
    batches = _batches(paths, sizes)
    seen: set[str] = set()
    rows: list[UsageRow] = []
    skipped: list[str] = []
    for batch, found in zip(batches, in_workers(_read_batch, batches, size=sum(sizes)), strict=True):
        results = _read_batch(batch) if isinstance(found, Exception) else found
        for text, result in zip(batch, results, strict=True):
            if isinstance(result, str):
                log.info("%s: not read in place (%s)", text, result)
                skipped.append(text)
                continue
            record, keys, mtime = result
            taken = {key for key in keys if key in seen} | counted(keys) if keys else set()
            if taken:  # some are counted: read again, told which
                again = _read_one(text, taken.__contains__)
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


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
