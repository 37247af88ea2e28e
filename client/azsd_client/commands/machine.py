"""The whole machine's usage: `azs usage --all`.

Claude keeps every project's sessions under ``~/.claude/projects/<slug>/``, Codex every rollout
under ``~/.codex/sessions/``, each file naming the directory it ran in (`cwd`, read by
:mod:`azsd_client.histories`). `usage --all` reports every store those projects, the daemon (the
stores it has open or follows files into) and this worktree have, together: totals and periods
summed across stores (the daemon counts a model response once, in one store), and with
`--instances` one row per project, as ccusage's `--instances`; `--project P` keeps the projects
whose path contains P. The files of projects without a store are read in place by the daemon
(`Usage.read_in_place`, with the first store's request), as ccusage reads them, and so are a
project's files its store does not hold whole yet (the daemon's watch may still be importing them):
a model response counted in any store is left out.
"""

from __future__ import annotations

import os
import sys
from typing import Final

import msgspec

from azsd.errors import AzsdError, RemoteError
from azsd.histories import projects
from azsd.ipc.protocol import UsagePeriodView, UsageReply, UsageView, WorktreeUsageView
from azsd_client.render.reports import NO_ACTIVE_BLOCK, block_lines, period_lines, usage_lines
from azsd_client.render.term import terminal_safe

from .invocation import Invocation

__all__ = ["merge", "usage_all"]

_STORE: Final = os.path.join(".azureal", "sessions.azs")
_KINDS: Final = ("input", "output", "cache_read", "cache_write", "reasoning")


def _roots(run: Invocation) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """The stores of every project Claude or Codex ran in (that has one), those the daemon has open
    or follows files into, and this worktree's; the files of each project with a store (its daemon
    reads those it has not imported whole in place: the watch may still be catching up); and the
    files of the projects that have none."""
    status = run.client.status()
    known = {run.root, *status.stores, *(follow.root for follow in status.follows)}
    roots = {root for root in known if os.path.exists(os.path.join(root, _STORE))}
    files_of: dict[str, list[str]] = {}
    loose: list[str] = []
    for agent in ("claude", "codex"):
        for cwd, files in projects(agent, run.environ).items():
            root = os.path.realpath(cwd)
            if os.path.exists(os.path.join(root, _STORE)):
                roots.add(root)
                files_of.setdefault(root, []).extend(str(path) for path in files)
            else:
                loose += [str(path) for path in files]
    return sorted(roots), files_of, loose


def usage_all(run: Invocation) -> int:
    """Every store's usage together (see the module docstring)."""
    a = run.args
    wanted = a.project
    replies: list[tuple[str, UsageReply]] = []
    roots, files_of, loose = _roots(run)
    roots = [root for root in roots if not wanted or wanted in root]
    loose = [path for path in loose if not wanted or wanted in path]
    if a.active:
        return _active_all(run, roots)
    # the files read in place go with this worktree's store (where `import --all` puts the projects
    # whose directory is gone), else the first store's; with no store anywhere, with this worktree's
    # (a store not made yet: its daemon reads them all the same, and makes none)
    reader = run.root if run.root in roots or not roots else roots[0]
    if loose and reader not in roots:
        roots.append(reader)
    for root in roots:
        try:
            reply = run.client.usage(
                root, by=a.by, by_model=a.by_model, since=a.since, until=a.until, timezone=a.timezone,
                exclude_removed=a.exclude_removed, with_sessions=a.by is None or a.sessions,
                read_in_place=[*(loose if root == reader else ()), *files_of.get(root, ())],
            )  # fmt: skip
        except RemoteError as exc:
            sys.stderr.write(terminal_safe(f"azs: {root}: {exc.message}") + "\n")
            continue
        replies.append((root, reply))
    merged = merge(replies, instances=a.instances)
    if merged.by:
        run.out.result(merged, lambda r, style: period_lines(r.by, r.periods, r.total, style))
    else:
        run.out.result(merged, lambda r, style: usage_lines([], r.worktrees, r.total, style))
    if not replies:
        raise AzsdError("no store of any project on this machine has usage (try `azs import claude --all`)")
    if loose:
        run.out.hint(f"{len(loose)} file(s) of projects without a store read in place (azs import --all)")
    return 0


def _active_all(run: Invocation, roots: list[str]) -> int:
    """`azs usage --active --all`: the block going now, the account's (every store's turns in it
    together), one per agent; or one line saying there is none."""
    going: list[UsagePeriodView] = []
    for root in roots:
        try:
            going += run.client.usage(root, by="block", active=True, with_sessions=False).periods
        except RemoteError as exc:
            sys.stderr.write(terminal_safe(f"azs: {root}: {exc.message}") + "\n")
    merged = merge_blocks(going)
    limit = run.args.token_limit if isinstance(run.args.token_limit, int) else None
    run.out.results(merged, lambda views, style: block_lines(views, limit, style))
    if not merged:
        run.out.note(NO_ACTIVE_BLOCK)
    return 0


def merge_blocks(blocks: list[UsagePeriodView]) -> list[UsagePeriodView]:
    """Active blocks of several stores as the account's, one per agent: they began within the same 5
    hours (each is going), so the account's began with the earliest; tokens, costs and rates add up.

    >>> u = UsageView(input=10, cost_usd=0.5, cost_source="reported")
    >>> a = UsagePeriodView(period="d 09:00", start="2026-05-02T09:00:00+00:00", end="2026-05-02T14:00",
    ...     usage=u, total_tokens=10, agent="claude", active=True, remaining_minutes=60, usd_per_hour=1.0)
    >>> b = msgspec.structs.replace(a, period="d 10:00", start="2026-05-02T10:00:00+00:00",
    ...     end="2026-05-02T15:00", remaining_minutes=120)
    >>> [(m.period, m.total_tokens, m.usage.cost_usd, m.remaining_minutes) for m in merge_blocks([a, b])]
    [('d 09:00', 20, 1.0, 60)]
    """
    by_agent: dict[str, list[UsagePeriodView]] = {}
    for block in blocks:
        if block.active:
            by_agent.setdefault(block.agent, []).append(block)
    merged = []
    for views in by_agent.values():
        first = min(views, key=lambda v: v.start)
        usage = views[0].usage
        for view in views[1:]:
            usage = add_usage(usage, view.usage)
        rate = sum(v.usd_per_hour for v in views)
        merged.append(
            msgspec.structs.replace(
                first, usage=usage, total_tokens=sum(v.total_tokens for v in views),
                models=sorted({m for v in views for m in v.models}), turns=sum(v.turns for v in views),
                tokens_per_minute=sum(v.tokens_per_minute for v in views),
                usd_per_hour=rate,
                projected_tokens=sum(v.total_tokens for v in views)
                + round(sum(v.tokens_per_minute for v in views) * first.remaining_minutes),
                projected_usd=usage.cost_usd + rate * first.remaining_minutes / 60,
            )
        )  # fmt: skip
    return sorted(merged, key=lambda v: (v.agent != "claude", v.start))


def merge(replies: list[tuple[str, UsageReply]], *, instances: bool) -> UsageReply:
    """The replies of several stores as one: totals summed, periods of the same label (and model)
    summed (with `instances`, one period per project instead), and one `worktrees` row per store.

    >>> u = UsageView(input=1, cost_usd=0.5, cost_source="estimated")
    >>> day = UsagePeriodView(period="2026-05-02", start="a", end="b", usage=u, total_tokens=1, models=["m"])
    >>> r = UsageReply(sessions=[], worktrees=[], total=u, by="day", periods=[day])
    >>> both = merge([("/p", r), ("/q", r)], instances=False)
    >>> both.total.input, [(p.period, p.usage.input, p.total_tokens) for p in both.periods]
    (2, [('2026-05-02', 2, 2)])
    >>> [(p.period, p.usage.input) for p in merge([("/p", r), ("/q", r)], instances=True).periods]
    [('/p', 1), ('/q', 1)]
    """
    by = next((reply.by for _, reply in replies), "")
    periods: dict[tuple[str, str | None], UsagePeriodView] = {}
    rows: list[WorktreeUsageView] = []
    for root, reply in replies:
        rows.append(WorktreeUsageView(worktree=root, sessions=len(reply.sessions), usage=reply.total))
        for view in reply.periods:
            if instances:
                view = msgspec.structs.replace(view, period=root, name="")
            elif by == "session":
                view = msgspec.structs.replace(view, period=f"{root} {view.period}")
            key = (view.period, view.model)
            periods[key] = view if key not in periods else _added(periods[key], view)
    total = UsageView()
    for _, reply in replies:
        total = add_usage(total, reply.total)
    ordered = sorted(periods.values(), key=lambda v: (v.start, v.period, v.model or ""))
    return UsageReply(sessions=[], worktrees=rows, total=total, by=by, periods=ordered)


def _added(a: UsagePeriodView, b: UsagePeriodView) -> UsagePeriodView:
    return msgspec.structs.replace(
        a, start=min(a.start, b.start), end=max(a.end, b.end), usage=add_usage(a.usage, b.usage),
        total_tokens=a.total_tokens + b.total_tokens, models=sorted({*a.models, *b.models}),
        turns=a.turns + b.turns,
    )  # fmt: skip


def add_usage(a: UsageView, b: UsageView) -> UsageView:
    sources = {v.cost_source for v in (a, b) if v != UsageView()}
    source = "unpriced" if sources == {"unpriced"} else "estimated" if "estimated" in sources else "reported"
    return UsageView(
        **{k: getattr(a, k) + getattr(b, k) for k in _KINDS}, cost_usd=a.cost_usd + b.cost_usd,
        cost_source=source, unpriced_tokens=a.unpriced_tokens + b.unpriced_tokens,
    )  # fmt: skip
