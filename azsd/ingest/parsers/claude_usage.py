"""The token usage of a Claude run: API messages counted once each, and the `result` line's totals.

Claude writes one API message over several lines (one content block each), every line repeating
the message's usage; streamed lines may carry a growing `output_tokens`. A message is therefore
counted once, keyed like ccusage keys it: its `message.id` with the line's `requestId` (the id alone
when a line has no `requestId`, where ccusage would count every line again), its input and cache
counts from the first line, its output the largest seen (ccusage keeps the first line's, which is
often a streamed snapshot: our output can be larger, never smaller). Each message is priced on its
own: the line's `costUSD` when it has one (older Claude Code wrote it), else at its own model's
prices for its length (long-context prices above 200k input tokens), its 1-hour cache writes
(`usage.cache_creation.ephemeral_1h_input_tokens`) and its `usage.speed` (azsd.pricing). A message
of a model without a price is counted and left unpriced. The `<synthetic>` messages Claude makes up
itself (an API error shown as a reply) are neither (their zero usage is no API call).

A message another run of the store already counted (the same API message id: `claude --resume`
copies the session it resumes into its new file) is left out when the parse is told so
(`ParseReport.counted_elsewhere`); the ids the run counted are kept (`ParseReport.message_keys`) for
the store to claim.

A stream-json `result` line is authoritative for the whole run, unless some of it was counted
elsewhere: its per-model usage (which counts sub-agents, helper models and compactions too) replaces
the messages' sums, with each model's reported cost; without it, its `usage` does, for the run's
model. The per-model usage is `model_usage_since_last_result` where the line has it (2.1.3xx), since
its `modelUsage` and `total_cost_usd` are then the process's totals, which a resumed session carries on.

A transcript's `cost-state` line (2.1.3xx) holds the same totals since its process started: what a
run added is the difference from the previous line of the same process (`startTime`). Usage in it
that no message of the run accounts for (a compaction's calls, which write no message) is added to
the run's own, and the transcript's cost is then the sum of what Claude reported.

>>> from azsd.ingest.parsers.base import ParseReport
>>> usage = ClaudeUsage(ParseReport("claude-session"))
>>> line = {"id": "m1", "model": "claude-x", "usage": {"input_tokens": 5, "output_tokens": 1}}
>>> usage.note(line, "r1")
>>> usage.note({**line, "usage": {"input_tokens": 5, "output_tokens": 9}}, "r1")
>>> usage.report.usage.input, usage.report.usage.output
(5, 9)
>>> usage.report.priced, usage.unpriced
(Priced(reported=0.0, estimated=0.0), 1)
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Final

import msgspec

from azsd import pricing
from azsd.ingest.parsers.base import ParseReport
from azsd.ingest.parsers.tally import Priced, line_time
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


#: A message as counted: its usage, its cost (None: unpriced), and whether its line reported that cost.
_Message = tuple[Usage, float | None, bool]


def _line_cost(value: Any) -> float | None:
    """A line's own `costUSD`, or None when it has no usable one."""
    return float(value) if isinstance(value, int | float) and math.isfinite(value) and value >= 0 else None


def _message_cost(model: Any, usage: dict[str, Any], counted: Usage, at: float | None) -> float | None:
    """What one message costs at the prices in force when it was made (`at`, its line's time; None:
    now), None when its model has none."""
    if not isinstance(model, str):
        return None
    creation = usage.get("cache_creation")
    hour = creation.get("ephemeral_1h_input_tokens") if isinstance(creation, dict) else None
    hours = hour if isinstance(hour, int) else 0
    fast = usage.get("speed") == "fast"
    return pricing.active_table().message_cost(model, counted, cache_write_1h=hours, fast=fast, at=at)


class ClaudeUsage:
    """Keeps `report.usage` (and an estimated `report.cost_usd`) as a Claude run's lines arrive."""

    def __init__(self, report: ParseReport) -> None:
        self.report = report
        report.priced = Priced()
        # bounded, oldest forgotten first: each message's usage, cost and whether its line reported it
        self._messages: OrderedDict[str, _Message] = OrderedDict()
        self._unnamed = 0
        self.unpriced = 0  # messages whose model has no price
        self._ids: set[str] = set()  # the API message ids met in this run
        self._elsewhere: set[str] = set()  # those another run counted
        #: The latest `cost-state` totals of each process (by `startTime`): cost, duration, usage.
        self._states: dict[Any, tuple[float, float, Usage]] = {}
        #: What the messages added since the latest `cost-state`.
        self._since = Usage()

    def note(self, message: dict[str, Any], request_id: Any, line_cost: Any = None, at: Any = None) -> None:
        """An assistant line's API `message` (and the line's `requestId`, `costUSD` and `timestamp`)."""
        report = self.report
        usage, model = message.get("usage"), message.get("model")
        if isinstance(model, str) and model != SYNTHETIC_MODEL:
            report.model = model
        if not isinstance(usage, dict) or model == SYNTHETIC_MODEL:
            return
        if "id" in message and self._counted_elsewhere(str(message["id"])):
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
            current = msgspec.structs.replace(seen[0], output=max(seen[0].output, current.output))
            total = msgspec.structs.replace(total, output=total.output - seen[0].output + current.output)
        else:
            total = total + current
        self._since = self._since + (total - report.usage).floored()
        reported = _line_cost(line_cost)
        when = line_time(at)
        cost = reported if reported is not None else _message_cost(message.get("model"), usage, current, when)
        self._messages[key] = (current, cost, reported is not None)
        self._price(seen, (current, cost, reported is not None))
        if len(self._messages) > MESSAGES_KEPT:
            self._messages.popitem(last=False)
        report.usage = total

    def owns(self, message_id: Any) -> bool:
        """Whether this run counted the API message `message_id` (met it, and nobody else had)."""
        return isinstance(message_id, str) and message_id in self._ids and message_id not in self._elsewhere

    def _counted_elsewhere(self, message_id: str) -> bool:
        """Whether another run counted the message `message_id` (a copy of it: `--resume`); the first
        time it is met in this run, the id is kept for the store to claim, or the message skipped."""
        if message_id in self._ids:
            return message_id in self._elsewhere
        self._ids.add(message_id)
        asked = self.report.counted_elsewhere
        if asked is not None and asked(message_id):
            self._elsewhere.add(message_id)
            self.report.counted_before += 1
            return True
        self.report.message_keys.append(message_id)
        return False

    def _price(self, seen: _Message | None, now: _Message) -> None:
        """Put a message's cost (less what its earlier line of the same message had) into the run's
        priced total and its estimate (a transcript reports no cost); a run's reported cost, once
        seen, is kept instead."""
        report = self.report
        priced = report.priced if report.priced is not None else Priced()
        before = seen[1] or 0.0 if seen is not None else 0.0
        _, cost, by_line = now
        if cost is None:
            self.unpriced += seen is None  # an unknown model: its tokens count, its cost is not guessed
            return
        if by_line:
            report.priced = Priced(priced.reported + cost - before, priced.estimated)
        else:
            report.priced = Priced(priced.reported, priced.estimated + cost - before)
        if report.cost_usd is not None and report.cost_usd.source == "reported":
            return
        report.cost_usd = Cost((report.cost_usd.usd if report.cost_usd else 0.0) + cost - before, "estimated")

    def cost_state(self, obj: dict[str, Any]) -> tuple[float, float]:
        """A transcript's `cost-state` line: the run's (duration in ms, cost in USD), from the
        process's totals less those of its previous line; the run's unseen usage is added."""
        report = self.report
        start = obj.get("startTime")
        start = start if isinstance(start, int | float | str) else None
        total_cost = _line_cost(obj.get("totalCostUSD")) or 0.0
        total_ms = obj.get("totalDuration")
        total_ms = float(total_ms) if isinstance(total_ms, int | float) and math.isfinite(total_ms) else 0.0
        parts = _model_usage(obj.get("modelUsage")) or []
        totals = Usage()
        for _, usage, _ in parts:
            totals += usage
        before_cost, before_ms, before = self._states.get(start, (0.0, 0.0, Usage()))
        self._states[start] = (total_cost, total_ms, totals)
        ran = (totals - before).floored()
        unseen = (ran - self._since).floored()
        self._since = Usage()
        if not self._elsewhere:
            if unseen != Usage():
                report.usage = report.usage + unseen
            whole = sum(state[0] for state in self._states.values())
            report.cost_usd = Cost(whole, "reported")
        return max(total_ms - before_ms, 0.0), max(total_cost - before_cost, 0.0)

    def result(self, obj: dict[str, Any], cost: float | None) -> float:
        """A stream-json `result` line, with the cost it reports (None: none); the run's cost."""
        report = self.report
        if self._elsewhere:  # the run's totals hold messages another run counted: its own sums stay
            own = report.cost_usd.usd if report.cost_usd is not None else 0.0
            return cost if cost is not None else own  # the event shows what the line says, as ever
        since = obj.get("model_usage_since_last_result")
        if isinstance(since, dict):  # 2.1.3xx: the line's other totals are the process's
            parts = _model_usage(since)
            costs = [usd for _, _, usd in parts or []]
            if None not in costs and cost is not None:
                cost = sum(usd for usd in costs if usd is not None)
        else:
            parts = _model_usage(obj.get("modelUsage"))
        usage = obj.get("usage")
        if parts is not None:
            report.usage = report.tally.replace(parts)
        elif isinstance(usage, dict):
            report.usage = report.tally.replace([(report.model or "", claude_usage(usage), None)])
        if parts is not None or isinstance(usage, dict):
            self._messages.clear()
            report.priced = Priced()
        if cost is not None:
            report.cost_usd = Cost(cost, "reported")
            return cost
        estimated = pricing.estimate(report.model, report.usage)
        report.cost_usd = None if estimated is None else Cost(estimated, "estimated")
        return estimated or 0.0
