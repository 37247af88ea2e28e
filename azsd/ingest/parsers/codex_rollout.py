"""Codex rollout files (``~/.codex/sessions/…/rollout-*.jsonl``), 0.40 to now.

Lines are envelopes ``{"timestamp","type","payload"}`` of kind ``session_meta``, ``turn_context``,
``response_item``, ``event_msg`` and ``compacted``. Files from before the envelope (mid-2025) start
with a bare header ``{id,timestamp,instructions}``, hold ``{"record_type":"state"}`` markers and
carry the response items bare; they map the same way. Prompts, assistant text and reasoning are
written twice (``event_msg`` and ``response_item``); a look-back over the recently emitted events
drops the second copy, as AZUREAL does.

Pure: decoded lines in, events out, run totals in :attr:`LineParser.report`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from datetime import datetime
from itertools import chain, islice
from typing import Any, ClassVar, Final

from azsd.context import sanitize
from azsd.events import AssistantText, Compacted, Complete, Event, Hook, Init, ToolCall, UserMessage
from azsd.ingest.parsers.base import LineParser, Usage, message_text
from azsd.ingest.parsers.codex_rollout_tools import map_tool_call, tool_output_text
from azsd.ingest.parsers.codex_tools import (
    ASSISTANT_DEDUP_WINDOW,
    BASH,
    ROLLOUT_INIT_MODEL,
    USER_DEDUP_WINDOW,
    Handler,
    Json,
    _command_text,
    _count,
    _custom_output_is_error,
    _function_output_is_error,
    _ignore,
    _is_injected_codex_context,
    _list,
    _obj,
    _opt_str,
    _result,
    _str,
    _with_ignored,
    codex_cost,
    codex_usage,
    normalize_tool_output,
    reasoning_hooks,
)
from azsd.ingest.parsers.tally import line_stamp

__all__ = ["CodexRolloutParser"]


_ROLLOUT_ITEMS_IGNORED: Final = frozenset(
    {
        "web_search_call",
        "ghost_snapshot",
        "compaction",
        "compaction_summary",
        "image_generation_call",
        "other",
    }
)

_ROLLOUT_MESSAGES_IGNORED: Final = frozenset(
    {
        "agent_reasoning_raw_content",
        "agent_reasoning_section_break",
        "context_compacted",
        "entered_review_mode",
        "exited_review_mode",
        "undo_started",
        "undo_completed",
        "thread_rolled_back",
        "turn_diff",
        "plan_update",
        "web_search_end",
        "exec_command_end",
        "patch_apply_end",
        "mcp_tool_call_end",
        "view_image_tool_call",
        "error",
        "warning",
        "stream_error",
        "thread_settings_applied",
        "item_completed",
        "item_started",
    }
)

#: Envelope kinds of today's rollouts that hold nothing azsd shows (0.16x: the thread's settings).
_ROLLOUT_KINDS_IGNORED: Final = frozenset({"world_state"})


class CodexRolloutParser(LineParser):
    """Codex rollout files (`~/.codex/sessions/…/rollout-*.jsonl`), envelope and pre-envelope.

    Choices beyond AZUREAL:

    - role-`user` items that are wholly a block Codex injects (`<environment_context>`,
      `<user_instructions>`, `# AGENTS.md instructions`) are dropped: they are never a prompt;
    - assistant dedup drops a text equal to *any* assistant text in the look-back (AZUREAL compares
      the latest one only), so a reasoning item with several summary parts does not repeat the
      `agent_reasoning` events written before it; reasoning is deduplicated too;
    - only the first `session_meta` gives an Init; `turn_aborted` gives `Complete{success:false}`;
      `compacted` gives `Compacted` (the `context_compacted` marker that accompanies it does not);
    - `local_shell_call` gives a Bash call; `shell` argv commands are joined; function-style
      `apply_patch` arguments `{"input": patch}` are unwrapped; list-shaped outputs are read.
    - rollouts carry no cost: a turn is priced from its usage and model (azsd.pricing), as an
      estimate; a turn's duration is `task_complete.duration_ms`, else the difference of the line
      `timestamp`s from the turn's start (`task_started`, else its first line) to its completion.
    - reasoning is kept as Hooks ``reasoning`` (AZUREAL makes it assistant text, which the next
      context then feeds back as the agent's answer);
    - a `task_complete` with an `error` (0.16x: the model failed) ends the turn failed, its error said;
    - 0.16x's `token_usage_record` lines count usage per model response, keyed by its
      `response_id` (a response another run counted is left out); older files' cumulative
      `token_count` is used only where there are none;
    - the Init names the model of the first `turn_context` (AZUREAL: ``codex``); it is written at the
      first line after `session_meta` that is not the session's injected context.
    """

    format: ClassVar[str] = "codex-rollout"

    def __init__(self) -> None:
        super().__init__()
        self._recent: deque[Event] = deque(maxlen=ASSISTANT_DEDUP_WINDOW)
        self._calls: dict[str, tuple[str, str | None]] = {}
        self._init_done = False
        self._pending_init: Init | None = None
        self._by_record = False  # whether usage comes from `token_usage_record` lines
        self._line_time: datetime | None = None
        self._turn_start: datetime | None = None
        self._by_kind: dict[str, Handler] = {
            "session_meta": self._on_session_meta,
            "turn_context": self._on_turn_context,
            "response_item": lambda payload: self._dispatch(self._by_item, payload),
            "event_msg": lambda payload: self._dispatch(self._by_msg, payload),
            "compacted": lambda _: [Compacted()],
            "token_usage_record": self._on_usage_record,
            **dict.fromkeys(_ROLLOUT_KINDS_IGNORED, _ignore),
        }
        self._by_item: dict[str, Handler] = _with_ignored(
            {
                "message": self._on_message,
                "reasoning": self._on_reasoning,
                "function_call": lambda p: self._on_tool_call(p, "shell_command"),
                "shell_command": lambda p: self._on_tool_call(p, "shell_command"),
                "custom_tool_call": lambda p: self._on_tool_call(p, "custom_tool"),
                "function_call_output": lambda p: self._on_tool_output(p, "unknown", custom=False),
                "custom_tool_call_output": lambda p: self._on_tool_output(p, "custom_tool", custom=True),
                "local_shell_call": self._on_local_shell_call,
            },
            _ROLLOUT_ITEMS_IGNORED,
        )
        self._by_msg: dict[str, Handler] = _with_ignored(
            {
                "user_message": lambda p: self._user(_str(p.get("message"))),
                "agent_message": lambda p: self._assistant([_str(p.get("message"))]),
                "agent_reasoning": lambda p: self._reasoning([_str(p.get("text"))]),
                "task_started": self._on_task_started,
                "task_complete": self._on_task_complete,
                "turn_aborted": lambda _: [
                    Complete(success=False, duration_ms=self._turn_ms(), cost_usd=0.0)
                ],
                "token_count": self._on_token_count,
                "function_call_output": self._on_event_tool_output,
            },
            _ROLLOUT_MESSAGES_IGNORED,
        )

    def handle(self, obj: Json) -> list[Event] | None:
        events = self._route(obj)
        if events and self._pending_init is not None:
            events = [self._pending_init, *events]
            self._pending_init = None
        if events:
            self._recent.extend(events)
        return events

    def finish(self) -> list[Event]:
        init, self._pending_init = self._pending_init, None
        return [init] if init is not None else []

    def _route(self, obj: Json) -> list[Event] | None:
        self._line_time = line_stamp(obj.get("timestamp"))
        if self._turn_start is None:
            self._turn_start = self._line_time
        kind, payload = obj.get("type"), obj.get("payload")
        if isinstance(kind, str) and isinstance(payload, dict):
            handler = self._by_kind.get(kind)
            if handler is _ignore:
                return self._ignore(kind)
            return None if handler is None else handler(payload)
        if isinstance(kind, str):  # a bare response item, from before the envelope
            return self._dispatch(self._by_item, obj)
        if "record_type" in obj:
            return []
        if "id" in obj and "timestamp" in obj:  # the pre-envelope header
            return self._on_session_meta(obj)
        return None

    def _dispatch(self, handlers: dict[str, Handler], payload: Json) -> list[Event] | None:
        kind = _str(payload.get("type"))
        handler = handlers.get(kind)
        if handler is _ignore:
            return self._ignore(kind)
        return None if handler is None else handler(payload)

    # -- session --------------------------------------------------------------------------------

    def _on_session_meta(self, payload: Json) -> list[Event]:
        if self._init_done:
            return []
        self._init_done = True
        session_id = payload.get("id")
        if isinstance(session_id, str) and session_id:
            self.report.agent_session_id = session_id
        self._pending_init = Init(cwd=_str(payload.get("cwd")), model=ROLLOUT_INIT_MODEL)
        return []

    def _on_turn_context(self, payload: Json) -> list[Event]:
        model = payload.get("model")
        if isinstance(model, str) and model:
            self.report.model = model
            if self._pending_init is not None:
                self._pending_init = Init(cwd=self._pending_init.cwd, model=model)
        return []

    def _on_task_started(self, _: Json) -> list[Event]:
        self._turn_start = self._line_time
        return []

    def _on_task_complete(self, payload: Json) -> list[Event]:
        duration = _count(payload.get("duration_ms")) or self._turn_ms()
        usd = self.report.cost_usd.usd if self.report.cost_usd else 0.0
        error = payload.get("error")
        if error is not None:
            message = _str(_obj(error).get("message")) or (error if isinstance(error, str) else "Turn failed")
            said = AssistantText(text=f"Error: {message}")
            end = Complete(success=False, duration_ms=duration, cost_usd=usd)
            return [end] if self._repeats_assistant(said.text, []) else [said, end]
        return [Complete(success=True, duration_ms=duration, cost_usd=usd)]

    def _turn_ms(self) -> int:
        """Milliseconds from the turn's first line to this one (0 when either has no timestamp);
        the next line starts the next turn."""
        start, end = self._turn_start, self._line_time
        self._turn_start = None
        if start is None or end is None:
            return 0
        return max(round((end - start).total_seconds() * 1000), 0)

    def _on_usage_record(self, payload: Json) -> list[Event]:
        """One model response's usage (0.16x), counted once by its `response_id`."""
        usage = payload.get("usage")
        if not isinstance(usage, dict):
            return []
        report = self.report
        if not self._by_record:  # from here on the records count, not the cumulative `token_count`
            self._by_record = True
            report.usage = Usage()
        key = _str(payload.get("response_id"))
        if key:
            if key in report.message_keys:
                return []
            asked = report.counted_elsewhere
            if asked is not None and asked(key):
                report.counted_before += 1
                return []
            report.message_keys.append(key)
        report.usage = report.usage + codex_usage(usage)
        report.cost_usd = codex_cost(report.model, report.usage)
        return []

    def _on_token_count(self, payload: Json) -> list[Event]:
        total = _obj(payload.get("info")).get("total_token_usage")
        if isinstance(total, dict) and not self._by_record:
            # Cumulative for the session: replaced, never added (agent-formats §4.3).
            self.report.usage = codex_usage(total)
            self.report.cost_usd = codex_cost(self.report.model, self.report.usage)
        return []

    # -- messages and their dedup ---------------------------------------------------------------

    def _user(self, raw: str) -> list[Event]:
        clean = sanitize(raw)
        if not clean or _is_injected_codex_context(clean) or self._repeats_user(clean):
            return []
        return [UserMessage(content=clean)]

    def _repeats_user(self, text: str) -> bool:
        """Whether `text` is the latest prompt of the current exchange (≤12 events back)."""
        for event in islice(reversed(self._recent), USER_DEDUP_WINDOW):
            if isinstance(event, UserMessage):
                return event.content == text
            if isinstance(event, AssistantText | Complete | Init):
                return False
        return False

    def _assistant(self, texts: Iterable[str]) -> list[Event]:
        out: list[Event] = []
        for text in texts:
            if text and not self._repeats_assistant(text, out):
                out.append(AssistantText(text=text))
        return out

    def _repeats_assistant(self, text: str | Hook, pending: list[Event]) -> bool:
        """Whether an assistant text (or a reasoning Hook) of the current exchange (≤20 events back)
        equals `text`."""
        for event in islice(chain(reversed(pending), reversed(self._recent)), ASSISTANT_DEDUP_WINDOW):
            if event == text or (isinstance(event, AssistantText) and event.text == text):
                return True
            if isinstance(event, UserMessage | Complete | Init):
                return False
        return False

    def _on_message(self, payload: Json) -> list[Event]:
        role = payload.get("role")
        text = message_text(payload.get("content"))
        if role == "user":
            return self._user(text)
        if role == "assistant":
            return self._assistant([text])
        return []  # developer / system: instructions, never shown

    def _on_reasoning(self, payload: Json) -> list[Event]:
        return self._reasoning(_str(_obj(part).get("text")) for part in _list(payload.get("summary")))

    def _reasoning(self, texts: Iterable[str]) -> list[Event]:
        """Reasoning (written twice, as for assistant text: once as an event, once as an item)."""
        out: list[Event] = []
        for hook in reasoning_hooks(texts):
            if not self._repeats_assistant(hook, out):
                out.append(hook)
        return out

    # -- tools ----------------------------------------------------------------------------------

    def _call(self, call_id: str, tool_name: str, file_path: str | None, tool_input: Any) -> list[Event]:
        self._calls[call_id] = (tool_name, file_path)
        return [ToolCall(tool_use_id=call_id, tool_name=tool_name, file_path=file_path, input=tool_input)]

    def _on_tool_call(self, payload: Json, default_name: str) -> list[Event]:
        tool_name, file_path, tool_input = map_tool_call(_str(payload.get("name"), default_name), payload)
        return self._call(_str(payload.get("call_id")), tool_name, file_path, tool_input)

    def _on_local_shell_call(self, payload: Json) -> list[Event]:
        action = _obj(payload.get("action"))
        call_id = _str(payload.get("call_id")) or _str(payload.get("id"))
        command = _command_text(action.get("command"))
        return self._call(call_id, BASH, _opt_str(action.get("working_directory")), {"command": command})

    def _on_tool_output(self, payload: Json, fallback: str, *, custom: bool) -> list[Event]:
        call_id = _str(payload.get("call_id"))
        tool_name, file_path = self._calls.get(call_id, (fallback, None))
        output = normalize_tool_output(tool_name, tool_output_text(payload.get("output")))
        is_error = _custom_output_is_error(output) if custom else _function_output_is_error(output)
        return [_result(call_id, tool_name, output, is_error, file_path)]

    @staticmethod
    def _on_event_tool_output(payload: Json) -> list[Event]:
        """An `event_msg` `function_call_output` (AZUREAL's rule, names it `shell_command`)."""
        call_id, output = _str(payload.get("call_id")), _str(payload.get("output"))
        if not call_id:
            return []
        is_error = output.startswith("Error") or "Exit code: 1" in output
        return [_result(call_id, "shell_command", output, is_error)]
