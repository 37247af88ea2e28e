"""Usage read in place: the token usage of agent files no store holds, without storing them.

`azs usage --all` reports every project of the machine; a project whose files were never imported
is read where it lies, as ccusage reads it. Each file is parsed as an import would parse it (so its
usage is the same, to the token and the cent), and made into usage rows of a run of no session
(`session_id` 0). A Claude message counted by the store asked, or by a file read before, is left
out: each message once. A file that cannot be read or parsed is skipped and named.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from azsd.errors import AzsdError
from azsd.ingest.file import parse_usage
from azsd.ingest.usage import usage_record
from azsd.model import SLOT_SECONDS, UsageRow

__all__ = ["read_in_place"]

log = logging.getLogger("azsd.ingest.in_place")


def read_in_place(paths: Sequence[str], counted: Callable[[str], bool]) -> tuple[list[UsageRow], list[str]]:
    """The usage rows of the agent files `paths` (each a run of session 0), and the files skipped;
    `counted(message_id)` says whether a store already counted a message."""
    seen: set[str] = set()
    rows: list[UsageRow] = []
    skipped: list[str] = []
    for text in paths:
        path = Path(text)
        try:
            mtime = path.stat().st_mtime
            report = parse_usage(path, lambda key: key in seen or counted(key))
        except (OSError, AzsdError) as exc:
            log.info("%s: not read in place (%s)", path, exc)
            skipped.append(text)
            continue
        seen.update(report.message_keys)
        record = usage_record(report, text)
        if record is None:
            continue
        for n, part in enumerate(record.parts):
            first = part.first if part.first is not None else mtime
            last = part.last if part.last is not None else first
            rows.append(
                UsageRow(
                    session_id=0, source=text, model=part.model,
                    slot=part.slot if part.slot is not None else int(first // SLOT_SECONDS) * SLOT_SECONDS,
                    first=first, last=last, usage=part.usage,
                    cost_usd=None if part.cost is None else part.cost.usd,
                    cost_source=None if part.cost is None else part.cost.source,
                    turns=record.turns if n == 0 else 0,
                )
            )  # fmt: skip
    return rows, skipped
