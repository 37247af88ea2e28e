"""OpenCode's sessions: messages and their parts (JSON objects) in, events out.

OpenCode keeps each message's info (`role`, `time`, the assistant's `modelID`, `providerID`, `cost`,
`tokens`, `error`) apart from its parts (`text`, `reasoning`, `tool` with its `state`, `file`,
`patch`, `step-start`, `step-finish`…), in JSON files (older versions) or as JSON in the `message`
and `part` tables of `opencode.db` (current ones). Where they come from is not this module's
business (:mod:`azsd.ingest.opencode`): it is handed one message and its parts at a time.

- a user message's own text parts are a `UserMessage` (synthetic parts, which OpenCode adds for
  attached files, are not what the user typed and are left out);
- an assistant message opens with `Init` when its model changes; its text is `AssistantText`, its
  reasoning a `Hook` named ``reasoning`` (kept, never put into another agent's prompt), each tool
  part a `ToolCall` (named and shaped as Claude's tools are, so context and export show them alike)
  and, once it ran, a `ToolResult`; a `patch` part is a `Hook` naming the files;
- its tokens and cost are usage (the step-finish parts' when the message has none), priced as
  OpenCode reported;
- a turn is a user message and every assistant message answering it: OpenCode 1.x keeps one per
  model *step* (``finish: "tool-calls"`` while the model goes on after its tools ran), so the turn's
  `Complete` (its cost and duration those of all its steps; failed when OpenCode recorded an error)
  comes after the step that ends it (any other `finish`, an error, or, where OpenCode writes no
  `finish`, a message completed), never between steps. A turn that a new prompt cut short ends
  failed before it; one still going has no `Complete` yet.

Unknown part types are skipped and counted (``unknown_part``).

>>> parser = OpenCodeParser()
>>> user = {"id": "msg_1", "role": "user", "time": {"created": 1}}
>>> [type(e).__name__ for e in parser.feed_message(user, [{"type": "text", "text": "hi"}])]
['UserMessage']
>>> reply = {"id": "msg_2", "role": "assistant", "modelID": "m", "providerID": "p", "cost": 0.5,
...          "tokens": {"input": 3, "output": 2, "cache": {"read": 1, "write": 0}},
...          "time": {"created": 1, "completed": 2}}
>>> [type(e).__name__ for e in parser.feed_message(reply, [{"type": "text", "text": "hello"}])]
['Init', 'AssistantText', 'Complete']
>>> parser.report.usage.input, parser.report.cost_usd.usd
(3, 0.5)
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar, Final

from azsd.events import (
    AssistantText,
    Complete,
    Event,
    Hook,
    Init,
    ToolCall,
    ToolResult,
    UserMessage,
    event_kind,
)
from azsd.ingest.parsers.base import LineParser
from azsd.model import Cost, Usage

__all__ = ["TOOL_NAMES", "OpenCodeParser", "iso_ms", "usage_key"]

#: OpenCode's tool names and the names AZUREAL (and Claude) give the same tools.
TOOL_NAMES: Final = {
    "bash": "Bash", "read": "Read", "edit": "Edit", "write": "Write", "glob": "Glob", "grep": "Grep",
    "webfetch": "WebFetch", "websearch": "WebSearch", "task": "Task", "todowrite": "TodoWrite",
    "todoread": "TodoRead", "patch": "Edit", "apply_patch": "Edit", "multiedit": "MultiEdit", "list": "LS",
}  # fmt: skip

_KEYS: Final = {"filePath": "file_path", "oldString": "old_string", "newString": "new_string",
                "replaceAll": "replace_all", "patchText": "patch"}  # fmt: skip
_SKIPPED_PARTS: Final = frozenset(
    {"step-start", "snapshot", "agent", "retry", "subtask", "compaction", "file"}
)


def iso_ms(ms: Any) -> str | None:
    """OpenCode's times (Unix milliseconds) as ISO 8601, or None.

    >>> iso_ms(1706459830000)
    '2024-01-28T16:37:10+00:00'
    """
    if not isinstance(ms, int | float) or isinstance(ms, bool) or not 0 < ms < 2**53:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


class OpenCodeParser(LineParser):
    """One OpenCode session's messages in, in order; its parse report as the line parsers keep one.

    A message comes whole (:meth:`feed_message`), or as one JSON line ``{"info": …, "parts": […]}``
    (:meth:`feed`, as a live follow reads them).
    """

    format: ClassVar[str] = "opencode"

    def __init__(self) -> None:
        super().__init__()
        self._model = ""
        #: The turn going on: its steps' cost and the time its first step began (None: no step yet).
        self._turn_cost = 0.0
        self._turn_start: int | None = None
        self._keys: set[str] = set()  # the usage keys met in this run

    def feed_message(self, info: dict[str, Any], parts: list[dict[str, Any]]) -> list[Event]:
        """The events of one message (its info and its parts, in order). Never raises on bad input."""
        self.report.lines += 1
        try:
            events = self._message(info, parts)
        except Exception:  # a shape nobody expected: the message is skipped, never raised
            self.report.skipped["malformed"] += 1
            return []
        if events is None:
            self.report.skipped["unknown_type"] += 1
            return []
        self.report.events.update(event_kind(e) for e in events)
        return events

    def handle(self, obj: dict[str, Any]) -> list[Event] | None:
        info, parts = obj.get("info"), obj.get("parts")
        if not isinstance(info, dict) or not isinstance(parts, list):
            return None
        return self._message(info, [p for p in parts if isinstance(p, dict)])

    def skip(self, reason: str) -> None:
        """Count a record the reader could not use (bad JSON, a message without its parts…)."""
        self.report.skipped[reason] += 1

    def _message(self, info: dict[str, Any], parts: list[dict[str, Any]]) -> list[Event] | None:
        role = info.get("role")
        if role == "user":
            return self._user(parts)
        if role == "assistant":
            return self._assistant(info, parts)
        return None

    def _user(self, parts: list[dict[str, Any]]) -> list[Event]:
        texts = [p["text"] for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str)
                 and not p.get("synthetic") and not p.get("ignored")]  # fmt: skip
        text = "\n".join(texts)
        if not text.strip():
            return []
        cut = [self._end_turn(success=False, end=None)] if self._turn_start is not None else []
        return [*cut, UserMessage(content=text)]

    def _end_turn(self, *, success: bool, end: Any) -> Complete:
        """The `Complete` of the turn going on (its steps' cost, its time from its first step's start
        to `end`), and none going on after it."""
        start = self._turn_start
        duration = int(end - start) if isinstance(start, int) and isinstance(end, int) and end >= start else 0
        done = Complete(success=success, duration_ms=duration, cost_usd=round(self._turn_cost, 12))
        self._turn_cost, self._turn_start = 0.0, None
        return done

    def _assistant(self, info: dict[str, Any], parts: list[dict[str, Any]]) -> list[Event]:
        out: list[Event] = []
        model = _model(info)
        if model and model != self._model:
            self._model = model
            self.report.model = model
            cwd = _dict(info.get("path")).get("cwd")
            out.append(Init(cwd=cwd if isinstance(cwd, str) else "", model=model))
        steps, step_cost = self._parts(parts, out)
        usage = _usage(info.get("tokens"))
        cost = _number(info.get("cost")) if "cost" in info else step_cost
        if usage.is_zero:
            usage, cost = steps, cost or step_cost
        self._count(usage, cost, info)
        error = info.get("error")
        if isinstance(error, dict):
            out.append(_error_text(error))
        time = _dict(info.get("time"))
        start = time.get("created")
        if self._turn_start is None:
            self._turn_start = start if isinstance(start, int) and not isinstance(start, bool) else 0
        self._turn_cost += cost
        if _ends_turn(info):
            out.append(self._end_turn(success=not isinstance(error, dict), end=time.get("completed")))
        return out

    def _parts(self, parts: list[dict[str, Any]], out: list[Event]) -> tuple[Usage, float]:
        """An assistant message's parts as events (into `out`); the usage and cost of its step-finish
        parts."""
        steps = Usage()
        step_cost = 0.0
        for part in parts:
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("text"), str):
                if part["text"].strip() and not part.get("synthetic"):
                    out.append(AssistantText(text=part["text"]))
            elif kind == "reasoning" and isinstance(part.get("text"), str):
                if part["text"].strip():
                    out.append(Hook(name="reasoning", output=part["text"]))
            elif kind == "tool":
                out += _tool(part)
            elif kind == "patch":
                files = [f for f in part.get("files") or [] if isinstance(f, str)]
                out.append(Hook(name="patch", output="\n".join(files)))
            elif kind == "step-finish":
                steps = steps + _usage(part.get("tokens"))
                step_cost += _number(part.get("cost"))
            elif kind not in _SKIPPED_PARTS:
                self.report.skipped["unknown_part"] += 1
        return steps, step_cost

    def _count(self, usage: Usage, cost: float, info: dict[str, Any]) -> None:
        report = self.report
        if usage.is_zero and not cost:
            return
        key = usage_key(info, usage)
        if key is not None:
            if key in self._keys:
                return
            self._keys.add(key)
            asked = report.counted_elsewhere
            if asked is not None and asked(key):  # a copy of a response another session counted: a fork's
                report.counted_before += 1
                return
            report.message_keys.append(key)
        report.usage = report.usage + usage
        spent = (report.cost_usd.usd if report.cost_usd else 0.0) + cost
        report.cost_usd = Cost(round(spent, 12), "reported")
        time = _dict(info.get("time"))
        report.tally.follow(
            report.usage,
            self._model,
            iso_ms(time.get("completed") or time.get("created")),
            reported_usd=cost,
        )


def usage_key(info: dict[str, Any], usage: Usage) -> str | None:
    """What names a model response OpenCode recorded, wherever a copy of it is (OpenCode keeps no
    response id, and ``--fork`` copies messages under new ids, keeping their times and tokens): its
    model, the millisecond it began and its tokens. None without a time.

    >>> usage_key({"providerID": "p", "modelID": "m", "time": {"created": 7}}, Usage(input=3, output=2))
    'opencode:p/m@7:3/2/0/0'
    """
    created = _dict(info.get("time")).get("created")
    if not isinstance(created, int) or isinstance(created, bool):
        return None
    u = usage
    return f"opencode:{_model(info)}@{created}:{u.input}/{u.output}/{u.cache_read}/{u.cache_write}"


def _error_text(error: dict[str, Any]) -> AssistantText:
    """What OpenCode recorded of a step's failure, as the answer shows it."""
    data = error.get("data")
    message = data.get("message") if isinstance(data, dict) else None
    return AssistantText(text=f"Error: {message or error.get('name') or 'unknown error'}")


def _ends_turn(info: dict[str, Any]) -> bool:
    """Whether an assistant message is the last step of its turn: not one the model goes on after
    (``finish: "tool-calls"``), nor one still being written (no `finish`, not completed)."""
    if isinstance(info.get("error"), dict):
        return True
    finish = info.get("finish")
    if isinstance(finish, str):
        return finish != "tool-calls"
    return "completed" in _dict(info.get("time"))


def _model(info: dict[str, Any]) -> str:
    """`providerID/modelID` (the price list reads past the provider), or the model alone."""
    model, provider = info.get("modelID"), info.get("providerID")
    if not isinstance(model, str) or not model:
        return ""
    return f"{provider}/{model}" if isinstance(provider, str) and provider else model


def _number(value: Any) -> float:
    return (
        float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else 0.0
    )


def _count_of(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0


def _usage(tokens: Any) -> Usage:
    """OpenCode's `tokens` {input, output, reasoning, cache {read, write}}: input is the fresh part."""
    if not isinstance(tokens, dict):
        return Usage()
    cache = _dict(tokens.get("cache"))
    return Usage(
        input=_count_of(tokens.get("input")),
        output=_count_of(tokens.get("output")),
        cache_read=_count_of(cache.get("read")),
        cache_write=_count_of(cache.get("write")),
        reasoning=_count_of(tokens.get("reasoning")),
    )


def _tool(part: dict[str, Any]) -> list[Event]:
    state = _dict(part.get("state"))
    raw = part.get("tool")
    raw = raw if isinstance(raw, str) else "tool"
    name: str = TOOL_NAMES.get(raw, raw)
    given_id = part.get("callID")
    call_id = given_id if isinstance(given_id, str) else str(part.get("id", ""))
    given = state.get("input")
    data: Any = {_KEYS.get(k, k): v for k, v in given.items()} if isinstance(given, dict) else given
    path = data.get("file_path") if isinstance(data, dict) else None
    path = path if isinstance(path, str) else None
    out: list[Event] = [ToolCall(tool_use_id=call_id, tool_name=name, file_path=path, input=data)]
    status = state.get("status")
    if status == "completed":
        output = state.get("output")
        text = output if isinstance(output, str) else "" if output is None else str(output)
        out.append(
            ToolResult(tool_use_id=call_id, tool_name=name, file_path=path, content=text, is_error=False)
        )
    elif status == "error":
        error = state.get("error")
        text = error if isinstance(error, str) else "error"
        out.append(
            ToolResult(tool_use_id=call_id, tool_name=name, file_path=path, content=text, is_error=True)
        )
    return out


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
