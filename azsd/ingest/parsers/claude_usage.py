"""The token usage of a Claude run: API messages counted once each, and the `result` line's totals.

Claude writes one API message over several lines (one content block each), every line repeating
the message's usage; streamed lines may carry a growing `output_tokens`. A message is therefore
counted once, keyed like ccusage keys it: its `message.id` with the line's `requestId` (the id alone
when a line has no `requestId`, where ccusage would count every line again), its input and cache
counts from the first line, its output the largest seen (ccusage keeps the first line's, which is
often a streamed snapshot: our output can be larger, never smaller). A run without a reported cost
is priced per message at the message's own model (azsd.pricing).

A stream-json `result` line is authoritative for the whole run: its per-model `modelUsage` (which
counts sub-agents and helper models too) replaces the messages' sums, with each model's reported
cost; without it, its `usage` does, for the run's model.

>>> from azsd.ingest.parsers.base import ParseReport
>>> usage = ClaudeUsage(ParseReport("claude-session"))
>>> line = {"id": "m1", "model": "claude-x", "usage": {"input_tokens": 5, "output_tokens": 1}}
>>> usage.note(line, "r1")
>>> usage.note({**line, "usage": {"input_tokens": 5, "output_tokens": 9}}, "r1")
>>> usage.report.usage.input, usage.report.usage.output
(5, 9)
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Final

import msgspec

from azsd import pricing
from azsd.ingest.parsers.base import ParseReport
from azsd.model import Cost, Usage

__all__ = ["MESSAGES_KEPT", "SYNTHETIC_MODEL", "ClaudeUsage", "claude_usage"]

#: The model Claude names on a message it made up itself (an API error shown as a reply).
SYNTHETIC_MODEL: Final = "<synthetic>"
#: Message ids remembered for regrouping the usage of a message split over several lines.
MESSAGES_KEPT: Final = 1024


def claude_usage(usage: dict[str, Any]) -> Usage:
    """Normalize an API `usage` object (counts that are not integers count as 0)."""

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and value > 0 else 0

    return Usage(
        input=count("input_tokens"),
        output=count("output_tokens"),
        cache_read=count("cache_read_input_tokens"),
        cache_write=count("cache_creation_input_tokens"),
    )


def _model_usage(value: Any) -> list[tuple[str, Usage, float | None]] | None:
    """A `result` line's `modelUsage` as (model, usage, reported cost), or None when unusable."""
    if not isinstance(value, dict) or not value:
        return None
    parts: list[tuple[str, Usage, float | None]] = []
    for model, entry in value.items():
        if not isinstance(entry, dict):
            return None
        usage = claude_usage(
            {
                "input_tokens": entry.get("inputTokens"),
                "output_tokens": entry.get("outputTokens"),
                "cache_read_input_tokens": entry.get("cacheReadInputTokens"),
                "cache_creation_input_tokens": entry.get("cacheCreationInputTokens"),
            }
        )
        cost = entry.get("costUSD")
        usd = float(cost) if isinstance(cost, int | float) and math.isfinite(cost) else None
        parts.append((str(model), usage, usd))
    return parts


class ClaudeUsage:
    """Keeps `report.usage` (and an estimated `report.cost_usd`) as a Claude run's lines arrive."""

    def __init__(self, report: ParseReport) -> None:
        self.report = report
        self._messages: OrderedDict[str, Usage] = OrderedDict()  # bounded: oldest forgotten first
        self._unnamed = 0

    def note(self, message: dict[str, Any], request_id: Any) -> None:
        """An assistant line's API `message` (and the line's `requestId`)."""
        report = self.report
        usage, model = message.get("usage"), message.get("model")
        if isinstance(model, str) and model != SYNTHETIC_MODEL:
            report.model = model
        if not isinstance(usage, dict) or model == SYNTHETIC_MODEL:
            return
        if "id" in message:
            key = str(message["id"])
            key = f"{key}:{request_id}" if isinstance(request_id, str) else key
        else:  # a message without an id is one of its own
            key = f"\0{self._unnamed}"
            self._unnamed += 1
        seen = self._messages.get(key)
        current = claude_usage(usage)
        total = report.usage
        if seen is not None:
            current = msgspec.structs.replace(seen, output=max(seen.output, current.output))
            total = msgspec.structs.replace(total, output=total.output - seen.output + current.output)
        else:
            total = total + current
        self._messages[key] = current
        self._price(model if isinstance(model, str) else report.model, seen, current)
        if len(self._messages) > MESSAGES_KEPT:
            self._messages.popitem(last=False)
        report.usage = total

    def _price(self, model: str | None, seen: Usage | None, current: Usage) -> None:
        """Add a message's usage, priced at its own model, to the run's estimate (a transcript
        reports no cost); a reported cost, once seen, is kept instead."""
        report = self.report
        if report.cost_usd is not None and report.cost_usd.source == "reported":
            return
        now = pricing.estimate(model, current)
        before = pricing.estimate(model, seen) if seen is not None else 0.0
        if now is None or before is None:
            return  # an unknown model: its tokens count, its cost is not guessed
        total = (report.cost_usd.usd if report.cost_usd else 0.0) + now - before
        report.cost_usd = Cost(total, "estimated")

    def result(self, obj: dict[str, Any], cost: float | None) -> float:
        """A stream-json `result` line, with the cost it reports (None: none); the run's cost."""
        report = self.report
        parts = _model_usage(obj.get("modelUsage"))
        usage = obj.get("usage")
        if parts is not None:
            report.usage = report.tally.replace(parts)
        elif isinstance(usage, dict):
            report.usage = report.tally.replace([(report.model or "", claude_usage(usage), None)])
        if parts is not None or isinstance(usage, dict):
            self._messages.clear()
        if cost is not None:
            report.cost_usd = Cost(cost, "reported")
            return cost
        estimated = pricing.estimate(report.model, report.usage)
        report.cost_usd = None if estimated is None else Cost(estimated, "estimated")
        return estimated or 0.0
