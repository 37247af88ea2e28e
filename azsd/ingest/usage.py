"""Which token-usage record a parse makes: one per agent run, the same for every way a file arrives.

One-shot ingest (:mod:`azsd.ingest.file`, and import through it) records it once the file is read;
a live follow (:mod:`azsd.server.follow.tailing`) records it with each read that changes it, in the same
transaction as that read's events. Both key it by the file's resolved path, so a file followed and
later ingested, or ingested twice, is counted once (the later record replaces the earlier,
`Store.record_usage`), and two runs that share an agent session id (`claude -p --resume` run twice)
are two runs. A record made by an older azsd under the run's agent session id is replaced by it when
the file is ingested or imported again (`replaces`; a follow, a new run's file, keeps it).
The record also holds the API message ids the run counted (for the store to claim, so that a copy of
them in another file is counted once) and how many turns the run held.

A record holds the run's parts, one per model and time slot (:mod:`azsd.ingest.parsers.tally`),
each with its cost: the agent's own (Claude's per-model `modelUsage`, else the run's reported cost
shared out in proportion to what each part would cost at list prices), or an estimate from the price
list (azsd.pricing), or none for a model without a price.

>>> from azsd.ingest.parsers.base import ParseReport
>>> report = ParseReport("codex-exec-json")
>>> usage_record(report, "/t/a.jsonl") is None
True
>>> report.usage, report.agent_session_id = Usage(input=3, output=2), "thread-1"
>>> report.tally.follow(report.usage, "gpt-5-codex", None)
>>> record = usage_record(report, "/t/a.jsonl")
>>> record.source, record.replaces, record.usage.input, record.parts[0].model, record.turns
('/t/a.jsonl', 'thread-1', 3, 'gpt-5-codex', 1)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import msgspec

from azsd import pricing
from azsd.ingest.parsers.base import ParseReport
from azsd.ingest.parsers.tally import Part, PartTotal, slot_of
from azsd.model import Cost, Usage, UsagePart
from azsd.store import Store

__all__ = ["UsageRecord", "counted_elsewhere", "turns_of", "usage_record"]


class UsageRecord(msgspec.Struct, frozen=True):
    """The usage of one run as a parse of `path` saw it so far, to be stored under `source`."""

    source: str
    parts: tuple[UsagePart, ...]
    path: str
    #: The run's record as an older azsd kept it (under its agent session id), to drop; None: none.
    replaces: str | None = None
    #: The turns the run held (prompts answered; at least one).
    turns: int = 1
    #: The API message ids it counted.
    keys: tuple[str, ...] = ()

    @property
    def usage(self) -> Usage:
        """The run's usage: its parts summed."""
        total = Usage()
        for part in self.parts:
            total += part.usage
        return total


def usage_record(report: ParseReport, path: str, source: str | None = None) -> UsageRecord | None:
    """The record `report` makes for the file at `path` (its resolved path), stored under `source`
    (default: `path`), or None while it has no usage to tell."""
    parts = report.tally.parts()
    if not parts and report.cost_usd is None:
        return None
    if not parts:  # a cost, and no tokens to go with it
        at = report.tally.latest
        parts = [Part(report.model or "", slot_of(at), PartTotal(Usage(), at, at))]
    costs = _costs(report, parts)
    replaces = report.agent_session_id if report.agent_session_id != (source or path) else None
    return UsageRecord(
        source or path,
        tuple(
            UsagePart(
                model=part.model, usage=part.usage, cost=cost, slot=part.slot,
                first=part.total.first, last=part.total.last,
            )
            for part, cost in zip(parts, costs, strict=True)
        ),
        path, replaces, turns_of(report), tuple(report.message_keys),
    )  # fmt: skip


def counted_elsewhere(store: Store, session_id: int, source: str) -> Callable[[str], bool]:
    """The question a parse for run `source` of `session_id` asks of each API message id: whether
    another run of the store counted it (:attr:`ParseReport.counted_elsewhere`)."""
    return partial(store.usage_counted_elsewhere, session_id=session_id, source=source)


def turns_of(report: ParseReport) -> int:
    """How many turns a parse saw: its prompts, or its completions when it shows no prompt (a
    stream-json run's prompt is azsd's own), and at least one."""
    return max(report.events["UserMessage"], report.events["Complete"], 1)


def _costs(report: ParseReport, parts: Sequence[Part]) -> list[Cost | None]:
    """Each part's cost: as reported (per part, or the run's shared out), else its messages' own
    costs (:class:`~azsd.ingest.parsers.tally.PartTotal`), else estimated from its tokens."""
    estimates = [_estimate(report, part) for part in parts]
    reported = report.cost_usd
    if reported is None or reported.source != "reported":
        return [
            None if usd is None else Cost(usd, "reported" if _by_lines(part) else "estimated")
            for part, usd in zip(parts, estimates, strict=True)
        ]
    if all(part.total.reported_usd is not None for part in parts):
        return [Cost(part.total.reported_usd or 0.0, "reported") for part in parts]
    weights: list[float] = [usd or 0.0 for usd in estimates]
    if None in estimates or not sum(weights):
        weights = [float(_tokens(part.usage)) for part in parts]
    whole = sum(weights)
    share = [w / whole if whole else 1.0 / len(parts) for w in weights]
    return [Cost(reported.usd * s, "reported") for s in share]


def _by_lines(part: Part) -> bool:
    """Whether every message of `part` came with its line's own cost."""
    return part.total.priced_usd is not None and not part.total.estimated


def _estimate(report: ParseReport, part: Part) -> float | None:
    """A part's cost from its messages' own prices, else from its tokens at its model's."""
    if part.total.priced_usd is not None:
        return part.total.priced_usd
    return pricing.estimate(part.model or report.model, part.usage)


def _tokens(usage: Usage) -> int:
    return usage.input + usage.output + usage.cache_read + usage.cache_write
