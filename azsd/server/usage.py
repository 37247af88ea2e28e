"""The `Usage` request: token usage and cost per session, per worktree, in total, and by period.

Everything is summed from the stored parts of each run (`azsd_usage`: one row per model and
quarter-hour slot), kept to the days `since`..`until` asked for. Periods are made in local time (the
request's `timezone`, else the daemon's): a slot never straddles a local day, so a day, ISO week or
month holds whole slots. Claude's 5-hour billing blocks follow ccusage's rule (its
`identifySessionBlocks`): ordered by time, a block starts at its first turn's time floored to the
UTC hour and holds every later turn up to 5 hours after its start, unless more than 5 hours passed
since the previous turn; the next turn starts the next block. Parts are placed by their first and
last turn, which are exact; only a turn in the very second a block ends could fall otherwise.
Blocks are Claude's billing: they are made of Claude Code's usage alone (a Claude model's, from
another source than Aider's or OpenCode's); every other agent's usage makes blocks of its own beside
them, named with the agent (``2026-11-28 08:00 codex``), which never move a Claude block.

>>> from zoneinfo import ZoneInfo
>>> tz = ZoneInfo("UTC")
>>> rows = [_row(1, "claude-m", 3600 * 10 + 60), _row(1, "claude-m", 3600 * 14 + 600)]
>>> rows += [_row(2, "claude-n", 3600 * 15 + 60), _row(3, "gpt-5", 3600 * 9 + 60)]
>>> [(b.period, b.end[11:16], b.usage.input) for b in periods(rows, "block", tz, by_model=False, names={})]
[('1970-01-01 09:00 codex', '14:00', 1), ('1970-01-01 10:00', '15:00', 2), ('1970-01-01 15:00', '20:00', 1)]
>>> [(d.period, d.models) for d in periods(rows, "day", tz, by_model=False, names={})]
[('1970-01-01', ['claude-m', 'claude-n', 'gpt-5'])]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Final

import msgspec

from azsd.days import day_span, iso, midnight
from azsd.errors import BadRequestError, SessionNotFoundError
from azsd.ingest.in_place import read_in_place
from azsd.ipc import protocol as p
from azsd.model import CostSource, SessionUsage, Usage, UsageRow
from azsd.server.views import usage_view
from azsd.store import Store

__all__ = ["BLOCK_SECONDS", "CLAUDE", "PERIODS", "agent_of", "live_block", "periods", "usage_reply"]

#: What a `Usage` request's `by` may name.
PERIODS: Final = ("day", "week", "month", "session", "block", "model")

#: The branch label of the usage read in place (files no store holds).
IN_PLACE: Final = "(not imported)"

#: The length of a Claude billing block.
BLOCK_SECONDS: Final = 5 * 3600


def usage_reply(store: Store, req: p.Usage) -> p.UsageReply:
    """The reply to `req` (see :class:`azsd.ipc.protocol.Usage`)."""
    if req.by is not None and req.by not in PERIODS:
        raise BadRequestError(f"usage by {req.by!r}: expected one of {', '.join(PERIODS)}")
    tz, start, end = day_span(req.since, req.until, req.timezone)
    if req.session is not None and not store.has_session(req.session):
        raise SessionNotFoundError(req.session)
    wanted = None if req.worktrees is None else set(req.worktrees)
    infos = [
        _Owner(info.id, info.display_name, info.worktree)
        for info in store.list_sessions(archived="include")
        if (req.session is None or info.id == req.session) and (wanted is None or info.worktree in wanted)
    ]
    rows = store.usage_rows([i.id for i in infos], start=start, end=end)
    if req.session is None:
        more, owners = _beyond_sessions(store, req, wanted, start, end)
        rows = sorted(rows + more, key=lambda r: (r.first, r.session_id, r.source, r.model))
        infos += owners
    sessions, rollups = _per_session(infos, rows) if req.with_sessions else ([], [])
    names = {i.id: f"{i.name} (removed)" if i.removed else i.name for i in infos}
    found = periods(rows, req.by, tz, by_model=req.by_model, names=names) if req.by else []
    most = 0
    if req.by == "block":
        found = [live_block(view, rows, datetime.now().timestamp()) for view in found]
        most = max((v.total_tokens for v in found if not v.active and v.agent == CLAUDE), default=0)
        if req.active:
            found = [v for v in found if v.active]
    return p.UsageReply(
        sessions=sessions, worktrees=rollups, total=usage_view(_total(rows)), by=req.by or "", periods=found,
        max_block_tokens=most,
    )  # fmt: skip


def _per_session(
    infos: Sequence[_Owner], rows: Sequence[UsageRow]
) -> tuple[list[p.SessionUsageView], list[p.WorktreeUsageView]]:
    """Each session's total (those with usage), and each worktree's (summed only when asked: a
    machine of thousands of sessions spends most of a report's time here)."""
    by_session: dict[int, list[UsageRow]] = {}
    for row in rows:
        by_session.setdefault(row.session_id, []).append(row)
    sessions: list[p.SessionUsageView] = []
    worktrees: dict[str, list[UsageRow]] = {}
    for info in infos:
        own = by_session.get(info.id, [])
        worktrees.setdefault(info.worktree, []).extend(own)
        if own:
            total = _total(own)
            sessions.append(
                p.SessionUsageView(
                    session=info.id, name=info.name, worktree=info.worktree, turns=total.turns,
                    usage=usage_view(total), removed=info.removed,
                )
            )  # fmt: skip
    rollups = [
        p.WorktreeUsageView(
            worktree=w, sessions=sum(1 for i in infos if i.worktree == w and not i.removed),
            usage=usage_view(_total(own)),
        )
        for w, own in sorted(worktrees.items())
    ]  # fmt: skip
    return sessions, rollups


def live_block(view: p.UsagePeriodView, rows: Sequence[UsageRow], now: float) -> p.UsagePeriodView:
    """A block's burn rate (its tokens and cost over the minutes from its first turn to its last, as
    ccusage's `blocks`), and whether it is still going: then the minutes left and its projection.

    >>> from zoneinfo import ZoneInfo
    >>> rows = [_row(1, "claude-m", 3600 * 10 + 60), _row(1, "claude-m", 3600 * 10 + 660)]
    >>> [block] = periods(rows, "block", ZoneInfo("UTC"), by_model=False, names={})
    >>> live = live_block(block, rows, 3600 * 11)
    >>> live.active, live.tokens_per_minute, live.remaining_minutes, live.projected_tokens
    (True, 0.2, 240.0, 50)
    """
    start = datetime.fromisoformat(view.start).timestamp()
    end = start + BLOCK_SECONDS
    own = [
        r for r in rows
        if start <= r.first < end and (view.model is None or r.model == view.model)
        and (not view.agent or agent_of(r) == view.agent)
    ]  # fmt: skip
    if not own:
        return view
    first, last = min(r.first for r in own), max(r.last for r in own)
    minutes = max((last - first) / 60.0, 1.0)  # a block of one turn: its tokens over a minute
    per_minute, per_hour = view.total_tokens / minutes, view.usage.cost_usd / minutes * 60.0
    active = now < end and now - last < BLOCK_SECONDS
    left = max((end - now) / 60.0, 0.0) if active else 0.0
    return msgspec.structs.replace(
        view, active=active, tokens_per_minute=round(per_minute, 3), usd_per_hour=round(per_hour, 6),
        remaining_minutes=round(left, 1), projected_tokens=view.total_tokens + round(per_minute * left),
        projected_usd=view.usage.cost_usd + per_hour * left / 60.0,
    )  # fmt: skip


def _beyond_sessions(
    store: Store, req: p.Usage, wanted: set[str] | None, start: float | None, end: float | None
) -> tuple[list[UsageRow], list[_Owner]]:
    """The usage of no session of the store that a report counts: removed sessions' (the ledger,
    unless `exclude_removed`) and the files read in place (`read_in_place`), with whose they are."""
    rows: list[UsageRow] = []
    owners: dict[int, _Owner] = {}
    if not req.exclude_removed:
        for row, worktree, name in store.removed_usage_rows(start=start, end=end):
            if wanted is None or worktree in wanted:
                owners.setdefault(row.session_id, _Owner(row.session_id, name, worktree, removed=True))
                rows.append(row)
    if req.read_in_place:
        if not all(os.path.isabs(path) for path in req.read_in_place):
            raise BadRequestError("read_in_place needs absolute paths (the daemon's directory is its own)")
        # a file this store imported as it is now is counted already (one it is still importing, or
        # that grew since, is read: what the store counted of it is left out)
        loose = [path for path in req.read_in_place if not _imported_whole(store, path)]
        found, _ = read_in_place(loose, store.usage_keys_counted_anywhere)
        rows += [r for r in found if (start is None or r.slot >= start) and (end is None or r.slot < end)]
        owners[0] = _Owner(0, "(read in place)", IN_PLACE)
    return rows, list(owners.values())


def _imported_whole(store: Store, path: str) -> bool:
    """Whether the store holds all of the agent file `path` (or it is gone: nothing to read)."""
    record = store.get_import(path)
    if record is None or not store.has_session(record.session_id):
        return False
    try:
        return os.stat(path).st_size == record.size
    except OSError:
        return True


@dataclass(frozen=True)
class _Owner:
    """Whose usage rows are: a session of the store, or one removed whose usage the ledger keeps."""

    id: int
    name: str
    worktree: str
    removed: bool = False


def periods(
    rows: Sequence[UsageRow], by: str, tz: tzinfo, *, by_model: bool, names: Mapping[int, str]
) -> list[p.UsagePeriodView]:
    """`rows` grouped by `by` (one of :data:`PERIODS`), and by model with `by_model`, oldest first."""
    groups: dict[tuple[str, str | None], list[UsageRow]] = {}
    bounds: dict[str, tuple[float, float]] = {}
    key: Callable[[UsageRow], str]
    if by == "block":
        blocks: dict[int, float] = {}
        for agent_rows in _by_agent(rows).values():
            blocks.update(_blocks(agent_rows))

        def key(row: UsageRow) -> str:
            agent = agent_of(row)
            label = _label(blocks[id(row)], tz, "%Y-%m-%d %H:%M")
            return label if agent == CLAUDE else f"{label} {agent}"

        for row in rows:
            bounds[key(row)] = (blocks[id(row)], blocks[id(row)] + BLOCK_SECONDS)
    elif by in ("session", "model"):
        key = (lambda row: f"S{row.session_id}") if by == "session" else (lambda row: row.model)
        for row in rows:
            low, high = bounds.get(key(row), (row.first, row.last))
            bounds[key(row)] = (min(low, row.first), max(high, row.last))
    else:
        key = _calendar_key(by, tz, bounds)
    for row in rows:
        groups.setdefault((key(row), row.model if by_model or by == "model" else None), []).append(row)
    out = []
    for (label, model), own in groups.items():
        total = _total(own)
        low, high = bounds[label]
        u = total.usage
        out.append(
            p.UsagePeriodView(
                period=label, start=iso(low, tz), end=iso(high, tz), usage=usage_view(total),
                total_tokens=u.input + u.output + u.cache_read + u.cache_write,
                models=sorted({r.model for r in own}), model=model,
                session=own[0].session_id if by == "session" else None,
                name=names.get(own[0].session_id, "") if by == "session" else "", turns=total.turns,
                agent=agent_of(own[0]) if by == "block" else "",
            )
        )  # fmt: skip
    return sorted(out, key=lambda v: (bounds[v.period][0], v.period, v.model or ""))


def _calendar_key(by: str, tz: tzinfo, bounds: dict[str, tuple[float, float]]) -> Callable[[UsageRow], str]:
    """The label of a row's local day, ISO week or month; each label's bounds go into `bounds`."""
    cache: dict[int, str] = {}

    def key(row: UsageRow) -> str:
        day = cache.get(row.slot)
        if day is not None:
            return day
        local = datetime.fromtimestamp(row.slot, tz).date()
        if by == "day":
            label, low, high = local.isoformat(), local, local + timedelta(days=1)
        elif by == "week":
            year, week, weekday = local.isocalendar()
            low = local - timedelta(days=weekday - 1)
            label, high = f"{year}-W{week:02d}", low + timedelta(days=7)
        else:
            low = local.replace(day=1)
            high = (low + timedelta(days=32)).replace(day=1)
            label = f"{local.year}-{local.month:02d}"
        bounds[label] = (midnight(low, tz), midnight(high, tz))
        cache[row.slot] = label
        return label

    return key


#: The agent whose usage makes Claude's billing blocks.
CLAUDE: Final = "claude"


def agent_of(row: UsageRow) -> str:
    """The agent whose usage a row is: ``claude`` (Claude Code: a Claude model, from neither Aider's
    history nor OpenCode's), ``codex`` (an OpenAI model), ``aider``, ``opencode``, else ``other``.

    >>> agent_of(_row(1, "claude-opus-4-7", 0)), agent_of(_row(1, "gpt-5.5", 0)), agent_of(_row(1, "", 0))
    ('claude', 'codex', 'other')
    """
    source = row.source
    if "#ses_" in source or "/opencode" in source:
        return "opencode"
    if ".aider.chat.history.md" in source:
        return "aider"
    model = row.model.rsplit("/", 1)[-1]
    if model.startswith("claude"):
        return CLAUDE
    if model.startswith(("gpt-", "o1", "o3", "o4", "codex")):
        return "codex"
    return "other"


def _by_agent(rows: Iterable[UsageRow]) -> dict[str, list[UsageRow]]:
    found: dict[str, list[UsageRow]] = {}
    for row in rows:
        found.setdefault(agent_of(row), []).append(row)
    return found


def _blocks(rows: Iterable[UsageRow]) -> dict[int, float]:
    """The start of the billing block of each row (by `id`), ccusage's rule (module docstring)."""
    starts: dict[int, float] = {}
    block: float | None = None
    latest = 0.0
    for row in sorted(rows, key=lambda r: (r.first, r.last)):
        if block is None or row.first - block > BLOCK_SECONDS or row.first - latest > BLOCK_SECONDS:
            block = float(int(row.first // 3600) * 3600)
        starts[id(row)] = block
        latest = max(latest, row.last)
    return starts


def _total(rows: Sequence[UsageRow]) -> SessionUsage:
    """The sum of `rows`; its cost unknown ("unpriced") when none of its tokens has a price."""
    usage = Usage()
    cost, estimated, unpriced, priced = 0.0, False, 0, False
    for row in rows:
        usage += row.usage
        if row.cost_usd is None:
            u = row.usage
            unpriced += u.input + u.output + u.cache_read + u.cache_write
        else:
            cost += row.cost_usd
            priced = True
        estimated = estimated or row.cost_source == "estimated"
    source: CostSource = "estimated" if estimated else "reported"
    if unpriced and not priced:
        source = "unpriced"
    return SessionUsage(usage, cost, _turns(rows), source, unpriced)


def _turns(rows: Sequence[UsageRow]) -> int:
    """The turns of `rows`' runs: as recorded, and one per run recorded before turns were counted."""
    return sum(r.turns or 0 for r in rows) + len({(r.session_id, r.source) for r in rows if r.turns is None})


def _label(at: float, tz: tzinfo, fmt: str) -> str:
    return datetime.fromtimestamp(at, tz).strftime(fmt)


def _row(session: int, model: str, at: float) -> UsageRow:
    """A one-token row at `at`, for the examples."""
    return UsageRow(
        session_id=session, source=f"r{at}", model=model, slot=int(at // 900) * 900, first=at, last=at,
        usage=Usage(input=1), cost_usd=None, cost_source=None,
    )  # fmt: skip
