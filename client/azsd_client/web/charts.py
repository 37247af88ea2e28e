"""The usage page's figures, from `usage` replies: pure functions, no I/O.

The charts are drawn in the browser by Chart.js from the JSON these make (put in the page as a
``<script type="application/json">`` block, which is data, never run); the same totals are in the
page's tables, so what the chart draws can be checked against what the daemon said.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import msgspec

from azsd.ipc.protocol import RemoteSessionView, UsagePeriodView, UsageReply, UsageView
from azsd_client.render.text import format_cost

__all__ = ["Block", "TeamRow", "active_block", "cost_by_day", "team_usage", "token_kinds"]

#: The token kinds of a :class:`~azsd.ipc.protocol.UsageView`, as the page names them.
KINDS: Final = (
    ("input", "input"),
    ("output", "output"),
    ("cache_read", "cache read"),
    ("cache_write", "cache write"),
    ("reasoning", "reasoning"),
)
#: The fields of a period every daemon sends; any other one (a newer daemon's: a block's burn rate and
#: projection) is shown as it comes, by its name.
_PERIOD_FIELDS: Final = frozenset(UsagePeriodView.__struct_fields__)
#: The same of the reply (a newer daemon may tell the active block's burn and projection there).
_REPLY_FIELDS: Final = frozenset(UsageReply.__struct_fields__) | {"protocol"}


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


@dataclass(frozen=True)
class Block:
    """The latest 5-hour billing block: whether it is still going, and what it holds."""

    period: UsagePeriodView
    active: bool
    elapsed_min: int
    left_min: int
    cost: str
    #: Figures a newer daemon sends about the block (its burn rate, its projection), by field name:
    #: fields of the period, or of the reply, that this client does not know.
    extra: tuple[tuple[str, str], ...]


def _local(stamp: str) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp)
    except ValueError:
        return None


def active_block(reply: UsageReply, now: datetime) -> Block | None:
    """The latest block of a ``by="block"`` reply (None without one), `active` while `now` is before
    its end."""
    if not reply.periods:
        return None
    latest = max(reply.periods, key=lambda p: p.start)
    start, end = _local(latest.start), _local(latest.end)
    if start is None or end is None:
        return None
    now = now.astimezone(start.tzinfo) if start.tzinfo else now.replace(tzinfo=None)
    active = start <= now < end
    extra = _extra(latest, _PERIOD_FIELDS | {"usage", "models"}) + _extra(reply, _REPLY_FIELDS)
    return Block(
        period=latest,
        active=active,
        elapsed_min=max(0, int((min(now, end) - start).total_seconds() // 60)),
        left_min=max(0, int((end - now).total_seconds() // 60)) if active else 0,
        cost=format_cost(latest.usage.cost_usd, latest.usage.cost_source) or "$0",
        extra=extra,
    )


def _extra(value: msgspec.Struct, known: frozenset[str]) -> tuple[tuple[str, str], ...]:
    """The fields of `value` this client does not know (a newer daemon's), by name, as text."""
    return tuple(
        (name.replace("_", " "), _shown(field))
        for name, field in msgspec.structs.asdict(value).items()
        if name not in known and field is not None
    )


def _shown(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.4f}"
    if isinstance(value, msgspec.Struct):
        return ", ".join(f"{k} {_shown(v)}" for k, v in msgspec.structs.asdict(value).items())
    return str(value)


@dataclass(frozen=True)
class TeamRow:
    """One person (identity) of the sync database: their sessions, tokens and cost."""

    identity: str
    sessions: int
    tokens: int
    cost_usd: float
    estimated: bool


def team_usage(sessions: Iterable[RemoteSessionView]) -> list[TeamRow]:
    """Usage per identity of the sync database's sessions, most expensive first."""
    rows: dict[str, list[Any]] = {}
    for s in sessions:
        row = rows.setdefault(s.identity, [0, 0, 0.0, False])
        row[0] += 1
        if s.usage is not None:
            row[1] += s.usage.input + s.usage.output + s.usage.cache_read + s.usage.cache_write
            row[2] += s.usage.cost_usd
            row[3] = row[3] or s.usage.cost_source == "estimated"
    team = [TeamRow(identity, n, tokens, cost, est) for identity, (n, tokens, cost, est) in rows.items()]
    return sorted(team, key=lambda r: (-r.cost_usd, r.identity))


def day_totals(periods: Sequence[UsagePeriodView]) -> dict[str, float]:
    """The cost of each day of a ``by="day"`` reply (all models), for the table beside the chart."""
    totals: dict[str, float] = {}
    for p in periods:
        totals[p.period] = totals.get(p.period, 0.0) + p.usage.cost_usd
    return totals
