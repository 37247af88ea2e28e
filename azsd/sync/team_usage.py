"""`azs usage --remote`: the team's token usage and cost, summed in PostgreSQL (``azsd.usage_groups``,
005) under the read rules of every remote read, in the shape of the local `azs usage --by`.

Each store pushes its usage rows (one per session, run, model and quarter-hour, as its side table
``azsd_usage`` holds them); the database groups them by local day, ISO week or month (in the
request's time zone, else the daemon's), by model, by person (the database role that pushed them:
what the database vouches for) or by repository, and splits each group by model with `by_model`.
``repository`` covers every repository the role may read; the others, the repository of the
request's worktree.
"""

from __future__ import annotations

import os
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from azsd.days import day_span, iso
from azsd.errors import BadRequestError
from azsd.ipc import protocol as p

if TYPE_CHECKING:
    import psycopg

__all__ = ["REMOTE_PERIODS", "remote_usage", "zone_name"]

#: What `azs usage --remote --by` may name (`session` and `block` are the local store's own).
REMOTE_PERIODS: Final = ("day", "week", "month", "model", "person", "repository")


def zone_name(tz: tzinfo) -> str:
    """An IANA name PostgreSQL knows for `tz` (the local zone's, from /etc/localtime's link)."""
    key = getattr(tz, "key", None)
    if isinstance(key, str) and key:
        return key
    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        return "UTC"
    parts = Path(target).parts
    return "/".join(parts[parts.index("zoneinfo") + 1 :]) if "zoneinfo" in parts else "UTC"


def remote_usage(conn: psycopg.Connection[Any], repository: str, req: p.RemoteUsage) -> p.UsageReply:
    """The reply to `req` (see :class:`azsd.ipc.protocol.RemoteUsage`)."""
    by = req.by or "person"
    if by not in REMOTE_PERIODS:
        raise BadRequestError(f"remote usage by {by!r}: expected one of {', '.join(REMOTE_PERIODS)}")
    tz, since, until = day_span(req.since, req.until, req.timezone)
    rows = conn.execute(
        "SELECT label, model, first_at, last_at, models, input, output, cache_read, cache_write, reasoning, "
        "cost_usd, estimated FROM azsd.usage_groups(%s, %s, %s, %s, %s, %s)",
        (None if by == "repository" else repository, by, zone_name(tz), since, until, req.by_model),
    ).fetchall()
    periods, total = [], [0, 0, 0, 0, 0, 0.0]
    estimated_any = False
    for label, model, low, high, models, i, o, cr, cw, r, cost, estimated in rows:
        usage = p.UsageView(
            input=i, output=o, cache_read=cr, cache_write=cw, reasoning=r, cost_usd=cost,
            cost_source="estimated" if estimated else "reported",
        )  # fmt: skip
        periods.append(
            p.UsagePeriodView(
                period=str(label), start=iso(low, tz), end=iso(high, tz), usage=usage,
                total_tokens=i + o + cr + cw, models=list(models), model=model,
            )
        )  # fmt: skip
        for at, n in enumerate((i, o, cr, cw, r, cost)):
            total[at] += n
        estimated_any = estimated_any or bool(estimated)
    i, o, cr, cw, r, cost = total
    summed = p.UsageView(
        input=int(i), output=int(o), cache_read=int(cr), cache_write=int(cw), reasoning=int(r),
        cost_usd=float(cost), cost_source="estimated" if estimated_any else "reported",
    )  # fmt: skip
    return p.UsageReply(sessions=[], worktrees=[], total=summed, by=by, periods=periods)
