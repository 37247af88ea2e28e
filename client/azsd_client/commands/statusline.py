"""`azs statusline`: one short line for a shell prompt, tmux or Claude Code's `statusLine` hook.

It shows today's cost in this store, the 5-hour block still going (its cost, the time left, its burn
rate) and the current session's context meter. Claude Code runs the command with a JSON object on
stdin (`session_id`, `transcript_path`, `model`, …): the meter is then that session's context, the
input, cache read and cache write tokens of the transcript's latest message against the model's
window; without it (a prompt, tmux), the azs meter of this worktree's latest session, characters
against the compaction threshold. Two requests to the running daemon, no more.
"""

from __future__ import annotations

import os
import sys
from datetime import date
from pathlib import Path
from typing import Any, Final

import msgspec

from azsd.errors import RemoteError
from azsd.ipc.protocol import UsageView
from azsd_client.render.text import format_cost

from .invocation import Invocation

__all__ = ["context_tokens", "statusline"]

#: How much of a transcript's end is read for its latest message's usage.
TAIL_BYTES: Final = 256 * 1024
#: A Claude model's context window, unless its name says 1M (``[1m]``).
WINDOW: Final = 200_000


def statusline(run: Invocation) -> int:
    hook = _hook_input()
    client, root = run.client, run.root
    today = date.today().isoformat()
    try:
        spent = client.usage(root, since=today, until=today, with_sessions=False).total
        blocks = client.usage(root, by="block", active=True, with_sessions=False).periods
    except RemoteError as exc:
        if exc.code not in ("no_such_root", "not_a_store"):
            raise
        spent, blocks = UsageView(), []  # no store here (yet): nothing spent in it
    parts = [f"{format_cost(spent.cost_usd, spent.cost_source, spent.unpriced_tokens) or '$0'} today"]
    for block in blocks[-1:]:
        cost = format_cost(block.usage.cost_usd, block.usage.cost_source) or "$0"
        hours, minutes = divmod(round(block.remaining_minutes), 60)
        rate = format_cost(block.usd_per_hour, block.usage.cost_source) or "$0"
        parts.append(f"block {cost} ({hours}h {minutes:02d}m left, {rate}/h)")
    meter = _meter(run, hook)
    if meter:
        parts.append(meter)
    line = " · ".join(parts)
    shown = {"line": line, "today": spent, "block": blocks[-1] if blocks else None, "context": meter}
    run.out.result(shown, lambda value, _style: [str(value["line"])])
    return 0


def _hook_input() -> dict[str, Any]:
    """Claude Code's statusline JSON on stdin, or {} (a terminal, nothing, or not JSON)."""
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    try:
        value = msgspec.json.decode(sys.stdin.buffer.read(1 << 20) or b"{}")
    except (msgspec.DecodeError, OSError):
        return {}
    return value if isinstance(value, dict) else {}


def _meter(run: Invocation, hook: dict[str, Any]) -> str:
    path = hook.get("transcript_path")
    if isinstance(path, str) and path:
        model = hook.get("model")
        name = str(model.get("id", "")) if isinstance(model, dict) else ""
        window = 1_000_000 if "[1m]" in name else WINDOW
        used = context_tokens(Path(path))
        return "" if used is None else f"ctx {used:,} ({used / window:.0%})"
    try:
        listed = run.client.list_sessions(run.root, limit=1, with_meter=True).sessions
    except RemoteError:
        return ""
    if not listed or listed[0].context_chars is None:
        return ""
    chars, threshold = listed[0].context_chars, run.config.compaction_threshold
    return f"S{listed[0].id} ctx {chars:,} chars ({chars / threshold:.0%})"


def context_tokens(path: Path) -> int | None:
    """The context of a Claude transcript's latest API message: its input, cache read and cache write
    tokens (None: no message with usage near the file's end, or no file)."""
    try:
        with path.open("rb") as stream:
            size = stream.seek(0, os.SEEK_END)
            stream.seek(max(0, size - TAIL_BYTES))
            tail = stream.read()
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        if b'"usage"' not in line or b'"assistant"' not in line:
            continue
        try:
            obj = msgspec.json.decode(line)
        except msgspec.DecodeError:
            continue
        message = obj.get("message") if isinstance(obj, dict) else None
        usage = message.get("usage") if isinstance(message, dict) else None
        if isinstance(message, dict) and isinstance(usage, dict) and message.get("model") != "<synthetic>":
            keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            return sum(v for k in keys if isinstance(v := usage.get(k), int))
    return None
