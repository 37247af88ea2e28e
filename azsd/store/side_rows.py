"""The rows of azsd's side tables that more than one layer writes: a run's usage parts and an
import record (one session at a time by :class:`azsd.store.side_tables.SideTables`, many at once by
:class:`azsd.store.bulk.BulkSessions`)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from azsd.model import SLOT_SECONDS, Cost, CostSource, UsagePart

__all__ = ["IMPORT_UPSERT", "USAGE_INSERT", "USAGE_KEYS_INSERT", "key_digest", "run_digest", "usage_values"]


def _merged(a: UsagePart, b: UsagePart) -> UsagePart:
    """Two parts of one model that fell in the same slot (one timed, one given a time), as one."""
    cost = a.cost if b.cost is None else b.cost if a.cost is None else None
    if a.cost is not None and b.cost is not None:
        source: CostSource = "reported" if a.cost.source == b.cost.source == "reported" else "estimated"
        cost = Cost(a.cost.usd + b.cost.usd, source)
    first = min(t for t in (a.first, b.first) if t is not None)
    last = max(t for t in (a.last, b.last) if t is not None)
    return UsagePart(model=a.model, usage=a.usage + b.usage, cost=cost, slot=a.slot, first=first, last=last)


#: Inserts one stored usage part (:func:`usage_values` gives the values).
USAGE_INSERT: Final = (
    "INSERT INTO azsd_usage (session_id, source, model, slot, first_at, last_at, input, output, "
    "cache_read, cache_write, reasoning, cost_usd, cost_source, turns) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

#: Claims one API message id for a run: (key_digest(id), session_id, run_digest(source)); the first
#: run to claim it keeps it.
USAGE_KEYS_INSERT: Final = "INSERT OR IGNORE INTO azsd_usage_claims (key, session_id, run) VALUES (?, ?, ?)"


def key_digest(key: str) -> int:
    """An API message id as the store keeps it: 64 bits of its BLAKE2b digest, a signed integer (the
    row's own id in ``azsd_usage_claims``). Two of a million ids share one with odds of 3 in 10^8;
    the id itself (30 to 60 bytes, and its copy in an index) is not kept."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big", signed=True)


def run_digest(source: str) -> int:
    """A run's source (a file's path) as its claims name it: 31 bits of its digest, which tell one
    run of a session from its others (a session has a few)."""
    return int.from_bytes(hashlib.blake2b(source.encode(), digest_size=4).digest(), "big") >> 1


def usage_values(
    session_id: int,
    source: str,
    parts: Sequence[UsagePart],
    known: dict[str, tuple[float, float]],
    now: float,
    turns: int | None = None,
) -> list[tuple[Any, ...]]:
    """The :data:`USAGE_INSERT` values of a run's `parts`: a part without a time keeps the times
    `known` gives its model (the run's earlier record), else takes `now`; parts of one model that
    fall in one slot are merged. The run's `turns` (None: one) go with its first row."""
    rows: dict[tuple[str, int], UsagePart] = {}
    for part in parts:
        if part.first is None or part.last is None:
            first, last = known.get(part.model, (now, now))
            part = msgspec.structs.replace(
                part, first=first, last=max(last, now) if part.model in known else last,
                slot=int(first // SLOT_SECONDS) * SLOT_SECONDS,
            )  # fmt: skip
        key = (part.model, part.slot or 0)
        rows[key] = part if key not in rows else _merged(rows[key], part)
    return [
        (
            session_id, source, p.model, slot, p.first, p.last, p.usage.input, p.usage.output,
            p.usage.cache_read, p.usage.cache_write, p.usage.reasoning,
            None if p.cost is None else p.cost.usd, None if p.cost is None else p.cost.source,
            (1 if turns is None else turns) if n == 0 else 0,
        )
        for n, ((_, slot), p) in enumerate(rows.items())
    ]  # fmt: skip


#: Records (or moves on) one import: (source, session_id, agent, size, last_seq).
IMPORT_UPSERT: Final = (
    "INSERT INTO azsd_imports (source, session_id, agent, size, last_seq) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (source) DO UPDATE SET session_id = excluded.session_id, agent = excluded.agent, "
    "size = excluded.size, last_seq = excluded.last_seq, imported = datetime('now')"
)
