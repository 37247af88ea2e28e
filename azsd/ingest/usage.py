"""Which token-usage record a parse makes: one per agent run, the same for every way a file arrives.

One-shot ingest (:mod:`azsd.ingest.file`, and import through it) records it once the file is read;
a live follow (:mod:`azsd.ingest.tailing`) records it with each read that changes it, in the same
transaction as that read's events. Both key it by the run's agent session id (the file's path
while the parser has not seen one), so a file followed and later ingested, or ingested twice, is
counted once: the later record replaces the earlier (`Store.record_usage`).

>>> from azsd.ingest.parsers.base import ParseReport
>>> report = ParseReport("codex-exec-json")
>>> usage_record(report, "/t/a.jsonl") is None
True
>>> report.usage, report.agent_session_id = Usage(input=3, output=2), "thread-1"
>>> record = usage_record(report, "/t/a.jsonl")
>>> record.source, record.usage.input, record.keyed_by_path
('thread-1', 3, False)
"""

from __future__ import annotations

import msgspec

from azsd.ingest.parsers.base import ParseReport
from azsd.model import Cost, Usage

__all__ = ["UsageRecord", "usage_record"]


class UsageRecord(msgspec.Struct, frozen=True):
    """The usage of one run as a parse of `path` saw it so far, to be stored under `source`."""

    source: str
    usage: Usage
    cost: Cost | None  # reported by the agent, or estimated from the price list
    path: str

    @property
    def keyed_by_path(self) -> bool:
        """Whether the record is stored under the file's path (no agent session id was seen)."""
        return self.source == self.path


def usage_record(report: ParseReport, path: str) -> UsageRecord | None:
    """The record `report` makes for the file at `path` (its resolved path), or None while it has no
    usage and no cost to tell."""
    if report.usage.is_zero and report.cost_usd is None:
        return None
    return UsageRecord(report.agent_session_id or path, report.usage, report.cost_usd, path)
