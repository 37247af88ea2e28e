"""`azs statusline`: one short line for a shell prompt, tmux or Claude Code's `statusLine` hook.

It shows today's cost across the account's stores (every store the daemon has opened), the 5-hour
block still going (Claude's: every store's turns in it together) (its cost, the time left, its burn
rate) and the current session's context meter. Claude Code runs the command with a JSON object on
stdin (`session_id`, `transcript_path`, `model`, …): the meter is then that session's context, the
input, cache read and cache write tokens of the transcript's latest message against the model's
window; without it (a prompt, tmux), the azs meter of this worktree's latest session, characters
against the compaction threshold. Two requests to the running daemon, no more (three without a
hook) for each store, and the figures are left in a small file from which the next runs print the line without
asking (:mod:`azsd_client.statusfile`, the fast path `azs` takes first).
"""

from __future__ import annotations

import os
import time
from datetime import date, datetime
from typing import Any

from azsd.errors import RemoteError
from azsd.ipc.protocol import UsageView
from azsd_client import statusfile
from azsd_client.costs import format_cost
from azsd_client.statusfile import context_tokens

from .invocation import Invocation
from .machine import add_usage, merge_blocks

__all__ = ["context_tokens", "statusline"]


def statusline(run: Invocation) -> int:
    hook = statusfile.hook_input()
    client, root = run.client, run.root
    asked = time.time()
    today = date.today().isoformat()
    roots = account_roots(run)
    spent, going = UsageView(), []
    for where in roots:  # the account's: every store's today, and its 5-hour block
        try:
            spent = add_usage(spent, client.usage(where, since=today, until=today, with_sessions=False).total)
            going += client.usage(where, by="block", active=True, with_sessions=False).periods
        except RemoteError as exc:
            if exc.code not in ("no_such_root", "not_a_store"):
                raise
            # no store there (yet): nothing spent in it
    # Claude's billing block (other agents' usage makes blocks of its own, beside it)
    blocks = [b for b in merge_blocks(going) if b.agent in ("claude", "")]
    parts = [f"{format_cost(spent.cost_usd, spent.cost_source, spent.unpriced_tokens) or '$0'} today"]
    for block in blocks[-1:]:
        cost = format_cost(block.usage.cost_usd, block.usage.cost_source) or "$0"
        hours, minutes = divmod(round(block.remaining_minutes), 60)
        rate = format_cost(block.usd_per_hour, block.usage.cost_source) or "$0"
        parts.append(f"block {cost} ({hours}h {minutes:02d}m left, {rate}/h)")
    meter, latest = _meter(run, hook)
    if meter:
        parts.append(meter)
    line = " · ".join(parts)
    figures: dict[str, Any] = {
        "today": [spent.cost_usd, spent.cost_source, spent.unpriced_tokens],
        "block": _block(blocks[-1]) if blocks else None,
        "meter": latest,
    }
    name = statusfile.key(run.args.root, run.args.runtime_dir, run.environ)
    statusfile.save(name, root, run.environ, figures, asked, others=[r for r in roots if r != root])
    shown = {"line": line, "today": spent, "block": blocks[-1] if blocks else None, "context": meter}
    run.out.result(shown, lambda value, _style: [str(value["line"])])
    return 0


def account_roots(run: Invocation) -> list[str]:
    """This worktree's root, then every other store the daemon has opened (its `stores` file) that
    is still there: the account's stores."""
    try:
        listed = run.config.stores_path.read_text().splitlines()
    except OSError:
        listed = []
    others = [
        r
        for r in listed
        if r and r != run.root and os.path.exists(os.path.join(r, ".azureal", "sessions.azs"))
    ]
    return [run.root, *dict.fromkeys(others)]


def _block(block: Any) -> list[Any]:
    """An active block for the statusline's file: its cost, kind, rate and end (it is going until its
    end: its last turn is after its start, so less than 5 hours before the end)."""
    end = datetime.fromisoformat(block.end).timestamp()
    return [block.usage.cost_usd, block.usage.cost_source, block.usd_per_hour, end]


def _meter(run: Invocation, hook: dict[str, Any]) -> tuple[str, list[int] | None]:
    """The meter shown, and (without a hook) the latest session's [id, characters, threshold]."""
    shown = statusfile.hook_meter(hook)
    if shown is not None:
        return shown, None
    try:
        listed = run.client.list_sessions(run.root, limit=1, with_meter=True).sessions
    except RemoteError:
        return "", None
    if not listed or listed[0].context_chars is None:
        return "", None
    chars, threshold = listed[0].context_chars, run.config.compaction_threshold
    return f"S{listed[0].id} ctx {chars:,} chars ({chars / threshold:.0%})", [listed[0].id, chars, threshold]
