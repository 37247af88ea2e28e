"""The usage page's figures, from `usage` replies: pure functions, no I/O.

The charts are drawn in the browser by Chart.js from the JSON these make (put in the page as a
``<script type="application/json">`` block, which is data, never run); the same totals are in the
page's tables, so what the chart draws can be checked against what the daemon said.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from azsd.ipc.protocol import RemoteSessionView, UsagePeriodView, UsageReply, UsageView
from azsd_client.render.text import format_cost

__all__ = [
    "Block",
    "TeamRow",
    "active_block",
    "cost",
    "cost_by_day",
    "day_totals",
    "team_usage",
    "token_kinds",
]

#: The token kinds of a :class:`~azsd.ipc.protocol.UsageView`, as the page names them.
KINDS: Final = (
    ("input", "input"),
    ("output", "output"),
    ("cache_read", "cache read"),
    ("cache_write", "cache write"),
    ("reasoning", "reasoning"),
)


def cost_by_day(reply: UsageReply) -> dict[str, Any]:
    """Chart.js data for the cost per day, one stacked dataset per model, from a ``by="day"``,
    ``by_model=True`` reply: ``{"labels": [day…], "datasets": [{"label": model, "data": [usd…]}…]}``."""
    days = sorted({p.period for p in reply.periods})
    index = {day: i for i, day in enumerate(days)}
    by_model: dict[str, list[float]] = {}
    for p in reply.periods:
        series = by_model.setdefault(p.model or "(unnamed)", [0.0] * len(days))
        series[index[p.period]] += p.usage.cost_usd
    datasets = [
        {"label": model, "data": [round(v, 6) for v in data]} for model, data in sorted(by_model.items())
    ]
    return {"labels": days, "datasets": datasets}


def token_kinds(total: UsageView) -> dict[str, Any]:
    """Chart.js data for the tokens by kind of `total`."""
    return {
        "labels": [label for _, label in KINDS],
        "datasets": [{"label": "tokens", "data": [getattr(total, name) for name, _ in KINDS]}],
    }


def cost(usage: UsageView) -> str:
    """A cost as the page shows it: ``$0.1234``, ``~$`` for an estimate, ``?`` when none of its tokens
    has a price (never ``$0``: unknown is not free), ``+?`` when only some have one.

    >>> unpriced = UsageView(cost_source="unpriced", unpriced_tokens=9)
    >>> cost(UsageView(cost_usd=0.5)), cost(unpriced), cost(UsageView())
    ('$0.5000', '?', '$0.0000')
    """
    return format_cost(usage.cost_usd, usage.cost_source, usage.unpriced_tokens) or "$0.0000"


@dataclass(frozen=True)
class Block:
    """The latest 5-hour billing block, as the daemon reports it (`Usage` ``by="block"``): whether it is
    still going, what it holds, its burn rate and (while it goes) its projection to its end."""

    period: UsagePeriodView
    cost: str
    per_hour: str
    projected: str

    @property
    def left(self) -> str:
        hours, minutes = divmod(round(self.period.remaining_minutes), 60)
        return f"{hours} h {minutes} min" if hours else f"{minutes} min"

    @property
    def end(self) -> str:
        return self.period.end[11:16]


def active_block(reply: UsageReply) -> Block | None:
    """The latest block of a ``by="block"`` reply (None without one): the daemon's figures, with its
    costs as the page shows them (an unpriced block's are ``?``)."""
    if not reply.periods:
        return None
    latest = max(reply.periods, key=lambda p: p.start)
    source, unpriced = latest.usage.cost_source, latest.usage.unpriced_tokens
    return Block(
        period=latest,
        cost=cost(latest.usage),
        per_hour=format_cost(latest.usd_per_hour, source, unpriced) or "$0.0000",
        projected=format_cost(latest.projected_usd, source, unpriced) or "$0.0000",
    )


@dataclass(frozen=True)
class TeamRow:
    """One person of the sync database (the database role that pushed: what the database vouches for),
    the identities (``user@host``) they pushed as, their sessions, tokens and cost."""

    owner: str
    identities: str
    sessions: int
    tokens: int
    cost: str
    cost_usd: float


def team_usage(people: UsageReply, sessions: Iterable[RemoteSessionView]) -> list[TeamRow]:
    """The team's usage per person (a `RemoteUsage` ``by="person"`` reply, summed in the database), with
    who each pushed as and how many sessions, from `sessions` (`RemoteList`), most expensive first."""
    names: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for s in sessions:
        names.setdefault(s.owner, set()).add(s.identity)
        counts[s.owner] = counts.get(s.owner, 0) + 1
    rows = [
        TeamRow(
            owner=p.period,
            identities=", ".join(sorted(names.get(p.period, ()))),
            sessions=counts.get(p.period, 0),
            tokens=p.total_tokens,
            cost=cost(p.usage),
            cost_usd=p.usage.cost_usd,
        )
        for p in people.periods
    ]
    return sorted(rows, key=lambda r: (-r.cost_usd, r.owner))


def day_totals(periods: Sequence[UsagePeriodView]) -> dict[str, str]:
    """The cost of each day of a ``by="day"`` reply (all models), as the page shows it, for the table
    beside the chart (``+?`` when some of the day's tokens have no price, ``?`` when none has),
    newest day first (the replies of several stores come in any order)."""
    totals: dict[str, list[Any]] = {}
    for p in periods:
        day = totals.setdefault(p.period, [0.0, 0, True, False])
        day[0] += p.usage.cost_usd
        day[1] += p.usage.unpriced_tokens
        day[2] = day[2] and p.usage.cost_source == "unpriced"
        day[3] = day[3] or p.usage.cost_source == "estimated"
    return {
        day: cost(UsageView(cost_usd=usd, unpriced_tokens=unpriced,
                            cost_source="unpriced" if none else "estimated" if est else "reported"))
        for day, (usd, unpriced, none, est) in sorted(totals.items(), reverse=True)
    }  # fmt: skip
