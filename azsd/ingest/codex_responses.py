"""The model responses of a Codex thread, from its rollout: what keys a `codex exec --json` run's usage.

`codex exec --json` (the stream `azs run` follows) reports a turn's usage as the thread's running
total, with no id; the rollout Codex writes beside it (0.16x) has one `token_usage_record` line per
model response, with its `response_id` and its `turn_id`. A run's usage is keyed by those response
ids, as an import of the rollout keys it, so that the same response is counted once whichever way
it reached a store. :func:`turns_of_thread` reads the rollout's turns (pure: lines in);
:func:`thread_turns` finds the rollout of a thread under a Codex home and reads it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import msgspec

from azsd.files import open_regular
from azsd.ingest.agent_histories import codex_rollouts
from azsd.ingest.parsers.base import iter_lines
from azsd.ingest.parsers.codex_tools import codex_usage
from azsd.model import Usage

__all__ = ["Response", "thread_turns", "turns_of_thread"]

#: One model response: its id and usage.
Response = tuple[str, Usage]

#: Rollouts larger than this are not read for their responses (the run keeps the stream's totals).
ROLLOUT_MAX_BYTES: Final = 256 * 1024 * 1024
_DECODER: Final = msgspec.json.Decoder()


def turns_of_thread(lines: Iterable[bytes]) -> list[list[Response]]:
    """The rollout's turns in order (a `task_started`, or a record of a turn not seen started, opens
    one), each with the responses its `token_usage_record` lines count (none for a failed turn)."""
    turns: dict[str, list[Response]] = {}
    for line in lines:
        if b'"task_started"' not in line and b'"token_usage_record"' not in line:
            continue  # the cheap test first: most lines are neither
        try:
            obj = _DECODER.decode(line)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            continue
        payload = obj.get("payload") if isinstance(obj, dict) else None
        if not isinstance(payload, dict):
            continue
        turn = payload.get("turn_id")
        if not isinstance(turn, str):
            continue
        if obj.get("type") == "event_msg" and payload.get("type") == "task_started":
            turns.setdefault(turn, [])
        elif obj.get("type") == "token_usage_record":
            response, usage = payload.get("response_id"), payload.get("usage")
            if isinstance(response, str) and response and isinstance(usage, dict):
                turns.setdefault(turn, []).append((response, codex_usage(usage)))
    return list(turns.values())


def thread_turns(codex_home: Path, thread_id: str) -> list[list[Response]] | None:
    """The turns of thread `thread_id`'s rollout under `codex_home`, or None when there is none (or
    it cannot be read)."""
    for path in codex_rollouts(codex_home, thread_id):
        try:
            with open_regular(path, nofollow=True) as stream:
                if os.fstat(stream.fileno()).st_size > ROLLOUT_MAX_BYTES:
                    return None
                return turns_of_thread(iter_lines(stream))
        except OSError:
            continue
    return None
