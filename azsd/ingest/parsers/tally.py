"""A run's token usage split by model and by time slot, for reports by period and by model.

A parser keeps one running total per run (:attr:`ParseReport.usage`, replaced as it grows). The
tally follows that total line by line: whatever it gained on a line is put to the model the run was
using then (:attr:`ParseReport.model`) and to the time slot of the line's `timestamp`, so the parts
always add up to the total, for every format and without each parser keeping parts of its own. A
total that shrinks (a `result` line's authoritative usage, a Codex total that starts over) is put
whole to the current model and time. Slots are :data:`SLOT_SECONDS` long: a local day, an hour or
a 5-hour block starts on a slot boundary in every time zone (all UTC offsets are multiples of 15 min).

>>> tally = UsageTally()
>>> tally.follow(Usage(input=10), "m1", "2025-10-02T14:07:00Z")
>>> tally.follow(Usage(input=10, output=5), "m2", "2025-10-02T14:31:00Z")
>>> [(p.model, p.slot, p.usage.input, p.usage.output) for p in tally.parts()]
[('m1', 1759413600, 10, 0), ('m2', 1759415400, 0, 5)]
>>> tally.follow(Usage(input=3), "m2", None)  # shrank: the whole run, at the latest time seen
>>> [(p.model, p.slot, p.usage.input) for p in tally.parts()]
[('m2', 1759415400, 3)]
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from azsd.model import SLOT_SECONDS, Usage

__all__ = ["SLOT_SECONDS", "Part", "PartTotal", "Priced", "UsageTally", "line_stamp", "line_time", "slot_of"]


def line_stamp(value: Any) -> datetime | None:
    """A line's ISO-8601 `timestamp` (`2025-09-25T21:12:14.126Z`), or None when absent, unusable or
    without a time zone."""
    if not isinstance(value, str):
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else None


def line_time(value: Any) -> float | None:
    """:func:`line_stamp` as Unix seconds, or None.

    >>> line_time("1970-01-01T00:01:00.500Z"), line_time("noon"), line_time("2025-01-01T00:00:00")
    (60.5, None, None)
    """
    stamp = line_stamp(value)
    return stamp.timestamp() if stamp is not None else None


def slot_of(at: float | None) -> int | None:
    """The start of the slot `at` falls in.

    >>> slot_of(1000.0), slot_of(None)
    (900, None)
    """
    return None if at is None else int(at // SLOT_SECONDS) * SLOT_SECONDS


@dataclass
class PartTotal:
    """The usage of one (model, slot) part so far, its first and last time, and a cost the agent
    reported for exactly this part (Claude's per-model `modelUsage`), if any."""

    usage: Usage
    first: float | None = None
    last: float | None = None
    reported_usd: float | None = None
    #: What its messages cost, each priced on its own (a line's `costUSD`, or an estimate at the
    #: message's long-context, cache and speed prices); None: the parser priced no message of it.
    priced_usd: float | None = None
    #: Whether some of `priced_usd` is an estimate (not a line's own `costUSD`).
    estimated: bool = False


@dataclass
class Priced:
    """The running cost of a run's priced messages: as their lines reported it (`costUSD`), and as
    estimated from the price list (each message at its own prices)."""

    reported: float = 0.0
    estimated: float = 0.0


@dataclass(frozen=True)
class Part:
    """A part as :meth:`UsageTally.parts` hands it out."""

    model: str
    slot: int | None
    total: PartTotal

    @property
    def usage(self) -> Usage:
        return self.total.usage


class UsageTally:
    """The parts of a run's usage, keyed by (model, slot); see the module docstring."""

    def __init__(self) -> None:
        self._parts: dict[tuple[str, int | None], PartTotal] = {}
        self.seen = Usage()  # the total the parts add up to
        self.latest: float | None = None  # the latest line time seen with usage
        self.priced = Priced()  # the run's priced messages so far, as the parts hold them

    def follow(
        self,
        total: Usage,
        model: str | None,
        timestamp: Any,
        priced: Priced | None = None,
        *,
        reported_usd: float | None = None,
    ) -> None:
        """Take the run's running `total` after a line (its `timestamp` as written), the running
        cost of its `priced` messages (the parser's :class:`Priced`, when it prices messages), and
        what the agent reported the line's usage cost (`reported_usd`, put to the same part)."""
        if total is self.seen or total == self.seen:
            self.seen = total
            return
        at = line_time(timestamp)
        if at is None:
            at = self.latest
        else:
            self.latest = at if self.latest is None else max(self.latest, at)
        delta = total - self.seen
        if min(delta.input, delta.output, delta.cache_read, delta.cache_write, delta.reasoning) < 0:
            self._parts.clear()
            delta = total
            self.priced = Priced()
        part = self._add(model or "", at, delta)
        if reported_usd is not None:
            part.reported_usd = (part.reported_usd or 0.0) + reported_usd
        self.seen = total
        if priced is not None and priced != self.priced:
            was = self.priced
            reported, estimated = priced.reported - was.reported, priced.estimated - was.estimated
            part.priced_usd = (part.priced_usd or 0.0) + reported + estimated
            part.estimated = part.estimated or estimated != 0.0
            self.priced = Priced(priced.reported, priced.estimated)

    def replace(self, parts: list[tuple[str, Usage, float | None]]) -> Usage:
        """Make the run's usage exactly `parts` (model, usage, reported cost), at the latest time
        seen; the new total, which the parser must make its running total."""
        self._parts.clear()
        self.priced = Priced()
        total = Usage()
        for model, usage, usd in parts:
            self._add(model, self.latest, usage)
            part = self._parts[(model, slot_of(self.latest))]
            if usd is not None:
                part.reported_usd = (part.reported_usd or 0.0) + usd
            total += usage
        self.seen = total
        return total

    def _add(self, model: str, at: float | None, delta: Usage) -> PartTotal:
        key = (model, slot_of(at))
        part = self._parts.get(key)
        if part is None:
            part = self._parts[key] = PartTotal(delta, at, at)
            return part
        part.usage = part.usage + delta
        if at is not None:
            part.first = at if part.first is None else min(part.first, at)
            part.last = at if part.last is None else max(part.last, at)
        return part

    def parts(self) -> list[Part]:
        """The non-empty parts, oldest slot first (untimed ones last)."""
        found = [Part(m, s, t) for (m, s), t in self._parts.items() if not t.usage.is_zero]
        return sorted(found, key=lambda p: (p.slot is None, p.slot or 0, p.model))
