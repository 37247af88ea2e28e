"""The small rules of Claude Code's lines that both of its formats share: a tool call's file path,
AZUREAL's error heuristic for a tool result, the hooks reported in `<system-reminder>` blocks,
durations and costs as storable numbers, and a retry notice in words. Pure.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

from azsd.events import Event, Hook
from azsd.ingest.parsers.base import MAX_INT

__all__ = ["clamp", "file_path", "hooks_in", "is_prompt_hook", "looks_like_error", "retry_text", "usd_of"]

HOOK_REMINDER: Final = re.compile(
    r"<system-reminder>\s*(\S+) hook (success|failed): ?(.*?)\s*</system-reminder>", re.DOTALL
)


def file_path(tool_input: Any) -> str | None:
    if isinstance(tool_input, dict):
        for key in ("file_path", "path"):
            value = tool_input.get(key)
            if isinstance(value, str):
                return value
    return None


def looks_like_error(content: str) -> bool:
    """AZUREAL's heuristic when a tool result carries no `is_error` (§4.2)."""
    first = content.split("\n", 1)[0].lower()
    return (
        "<tool_use_error>" in first
        or (first.startswith("error") and not first.startswith("error:"))
        or "enoent" in first
    )


def hooks_in(text: str) -> list[Event]:
    """Hooks reported inside `<system-reminder>` blocks: `<Name> hook success: <out>`."""
    hooks: list[Event] = []
    for name, outcome, output in HOOK_REMINDER.findall(text):
        if outcome == "failed":
            hooks.append(Hook(name=name, output=f"FAILED: {output}"))
        elif output:
            hooks.append(Hook(name=name, output=f"[{name}]" if output == "..." else output))
    return hooks


def clamp(value: Any) -> int:
    """A duration as a storable integer: non-negative, at most :data:`MAX_INT`, 0 when unusable."""
    if not isinstance(value, int | float) or value != value or value <= 0:
        return 0
    return MAX_INT if value >= MAX_INT else int(value)


def usd_of(value: Any) -> float:
    """A cost in USD as a finite float (0 when missing or unusable)."""
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else 0.0


def retry_text(obj: dict[str, Any]) -> str:
    """A stream's `system/api_retry`: `API error 529 (overloaded): retry 1 of 10 in 0.5 s`."""
    status = obj.get("error_status")
    error = obj.get("error")
    what = "API error" + (f" {status}" if isinstance(status, int) else "")
    what += f" ({error})" if isinstance(error, str) and error else ""
    attempt, most, delay = obj.get("attempt"), obj.get("max_retries"), obj.get("retry_delay_ms")
    if isinstance(attempt, int):
        what += f": retry {attempt}" + (f" of {most}" if isinstance(most, int) else "")
        what += f" in {delay / 1000:.1f} s" if isinstance(delay, int | float) and math.isfinite(delay) else ""
    return what


def is_prompt_hook(event: Event) -> bool:
    return isinstance(event, Hook) and event.name == "UserPromptSubmit"
