"""The live `codex exec --json` stream (a pure parser, like every other).

Mapping rules: spec/store-format.md §4.3 (what AZUREAL does); formats: agent-formats.md §3-§5.

**codex exec --json** (:class:`CodexExecParser`) has had three generations, told apart per line:

- *legacy* (before 0.44): a config line with human-style keys (``model``, ``provider``,
  ``sandbox``, ``workdir``, ``reasoning effort``…), a ``{"prompt":…}`` line, then protocol events
  ``{"id":…,"msg":{"type":…}}`` (``agent_message``, ``exec_command_begin/end``,
  ``patch_apply_begin/end``, ``mcp_tool_call_begin/end``, ``token_count``, ``task_complete``…);
- *experimental* (``--experimental-json``, about 0.41-0.43): ``session.created {session_id}`` and
  ``item.*`` events whose item kind is in ``item_type``, with ``assistant_message`` for text;
- *current* (0.44 and later): ``thread.started``, ``turn.*`` and ``item.*`` with the item kind in
  ``type`` and ``agent_message`` for text. ``turn.completed.usage`` is the thread's running total.

All three map to the same events. The stream carries no model: pass the one codex was started
with as ``model``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from azsd.context import sanitize
from azsd.events import AssistantText, Complete, Event, Init, ToolCall, UserMessage
from azsd.ingest.parsers.base import LineParser, Usage
from azsd.ingest.parsers.codex_tools import (
    _COLLAB_INPUT_KEYS,
    _EXEC_CONFIG_KEYS,
    _EXEC_IGNORED,
    _LEGACY_IGNORED,
    BASH,
    Handler,
    Json,
    _change_kind,
    _command_text,
    _edit_call,
    _edit_result,
    _edit_summary,
    _error_text,
    _exit_code,
    _ignore,
    _legacy_change,
    _legacy_exec_output,
    _legacy_mcp_result,
    _list,
    _mcp_error,
    _mcp_name,
    _mcp_result_text,
    _obj,
    _opt_str,
    _result,
    _str,
    _todo_status,
    _with_ignored,
    codex_cost,
    codex_usage,
    reasoning_hooks,
)

__all__ = ["CodexExecParser"]


class CodexExecParser(LineParser):
    """`codex exec --json` stdout, all three generations (module docstring), detected per line.

    Choices beyond AZUREAL (which reads only the current generation):

    - `error` *items* are non-fatal Codex warnings (model metadata, skills budget): they are
      dropped, so they never come back in the next turn's context as if the model had said them;
    - `web_search` gives a `WebSearch` call with an empty result; `todo_list` an `update_plan` call
      (the rollouts' name) with `{"plan":[{step,status}]}`; `collab_tool_call` a call named after
      its `tool` with the result `status`;
    - a `file_change` whose status is `failed` gives error results; MCP results given as
      `{content[],structured_content}` and errors given as `{message}` are read (AZUREAL expects
      strings and stores `""`);
    - `turn.failed` and legacy `turn_aborted` leave :attr:`ParseReport.cost_usd` alone.
    """

    format: ClassVar[str] = "codex-exec-json"

    def __init__(self, model: str = "") -> None:
        super().__init__()
        self._model = model
        if model:
            self.report.model = model
        self._init_done = False
        self._calls_out: set[str] = set()
        self._patches: dict[str, list[tuple[str, str, str]]] = {}
        self._legacy_usage: Json | None = None
        self._last: Event | None = None  # the latest event a line gave
        #: Turns the stream has ended (completed or failed): a rollout's last so many are this run's.
        self.turns_ended = 0
        self._by_type: dict[str, Handler] = _with_ignored(
            {
                "thread.started": lambda obj: self._on_session_id(obj.get("thread_id")),
                "session.created": lambda obj: self._on_session_id(obj.get("session_id")),
                "item.started": self._on_item_started,
                "item.completed": self._on_item_completed,
                "turn.completed": self._on_turn_completed,
                "turn.failed": self._on_turn_failed,
                "error": _error_text,
            },
            _EXEC_IGNORED,
        )
        self._by_item: dict[str, Handler] = {
            "agent_message": lambda item: [AssistantText(text=_str(item.get("text")))],
            "reasoning": lambda item: self._reasoning(_str(item.get("text"))),
            "command_execution": self._on_command_item,
            "file_change": self._on_file_change,
            "mcp_tool_call": self._on_mcp_item,
            "web_search": self._on_web_search,
            "todo_list": self._on_todo_list,
            "collab_tool_call": self._on_collab,
            "error": _ignore,
        }
        self._by_msg: dict[str, Handler] = _with_ignored(
            {
                "agent_message": lambda msg: [AssistantText(text=_str(msg.get("message")))],
                "agent_reasoning": lambda msg: self._reasoning(_str(msg.get("text"))),
                "exec_command_begin": self._on_exec_begin,
                "exec_command_end": self._on_exec_end,
                "patch_apply_begin": self._on_patch_begin,
                "patch_apply_end": self._on_patch_end,
                "mcp_tool_call_begin": self._on_mcp_begin,
                "mcp_tool_call_end": self._on_mcp_end,
                "token_count": self._on_token_count,
                "task_complete": self._on_task_complete,
                "turn_aborted": lambda _: [Complete(success=False, duration_ms=0, cost_usd=0.0)],
                "error": _error_text,
                "session_configured": self._on_session_configured,
            },
            _LEGACY_IGNORED,
        )

    def handle(self, obj: Json) -> list[Event] | None:
        kind = obj.get("type")
        if isinstance(kind, str):
            handler = self._by_type.get(kind)
            if handler is _ignore:
                return self._ignore(kind)
            return None if handler is None else handler(obj)
        msg = obj.get("msg")
        if isinstance(msg, dict):
            msg_handler = self._by_msg.get(_str(msg.get("type")))
            if msg_handler is _ignore:
                return self._ignore(f"msg/{_str(msg.get('type'))}")
            return None if msg_handler is None else msg_handler(msg)
        if "prompt" in obj:
            return self._on_prompt(obj)
        if _EXEC_CONFIG_KEYS & obj.keys():
            return self._on_config(obj)
        return None

    # -- session, turn, error -------------------------------------------------------------------

    def _init(self, cwd: str, model: str = "") -> list[Event]:
        if self._init_done:
            return []
        self._init_done = True
        return [Init(cwd=cwd, model=self._model or model)]

    def _on_session_id(self, session_id: Any, model: str = "") -> list[Event]:
        if isinstance(session_id, str) and session_id and self.report.agent_session_id is None:
            self.report.agent_session_id = session_id
        return self._init("", model)

    def adopt_responses(self, responses: Sequence[tuple[str, Usage]]) -> float | None:
        """Count the run's model responses (from its rollout: :mod:`azsd.ingest.codex_responses`)
        in place of the stream's running total: each once, keyed by its id, and none another run
        counted. The run's cost (None: its model has no price)."""
        report = self.report
        total, keys = Usage(), list[str]()
        for key, usage in responses:
            if key in keys:
                continue
            if report.counted_elsewhere is not None and report.counted_elsewhere(key):
                report.counted_before += 1
                continue
            keys.append(key)
            total += usage
        report.usage, report.message_keys = total, keys
        report.cost_usd = codex_cost(report.model, total)
        report.tally.follow(total, report.model, None, report.priced)
        return report.cost_usd.usd if report.cost_usd is not None else None

    def _on_turn_completed(self, obj: Json) -> list[Event]:
        self.turns_ended += 1
        usage = obj.get("usage")
        if not isinstance(usage, dict):
            return [Complete(success=True, duration_ms=0, cost_usd=0.0)]
        # A running total for the thread: replaced, never added (agent-formats §3.1).
        self.report.usage = codex_usage(usage)
        return self._priced_complete()

    def _priced_complete(self) -> list[Event]:
        """A finished turn, priced from its usage (Codex reports no cost)."""
        self.report.cost_usd = codex_cost(self.report.model, self.report.usage)
        usd = self.report.cost_usd.usd if self.report.cost_usd else 0.0
        return [Complete(success=True, duration_ms=0, cost_usd=usd)]

    def _on_turn_failed(self, obj: Json) -> list[Event]:
        """The turn's end, failed: its error said (unless the `error` line before it said it), then
        the failed `Complete` (AZUREAL stores them the other way round, and the text after the end
        took the session's ✗ away)."""
        self.turns_ended += 1
        message = _str(_obj(obj.get("error")).get("message"), "Turn failed")
        said = AssistantText(text=f"Error: {message}")
        end = Complete(success=False, duration_ms=0, cost_usd=0.0)
        return [end] if self._last == said else [said, end]

    def feed(self, line: bytes) -> list[Event]:
        events = super().feed(line)
        if events:
            self._last = events[-1]
        return events

    def _reasoning(self, text: str) -> list[Event]:
        return list(reasoning_hooks([text]))

    # -- items (current and experimental generations) -----------------------------------------------

    @staticmethod
    def _item_of(obj: Json) -> tuple[str, Json]:
        item = _obj(obj.get("item"))
        kind = _str(item.get("type")) or _str(item.get("item_type"))
        return ("agent_message" if kind == "assistant_message" else kind), item

    def _on_item_started(self, obj: Json) -> list[Event]:
        kind, item = self._item_of(obj)
        if kind != "command_execution":
            return []
        item_id = _str(item.get("id"))
        self._calls_out.add(item_id)
        return [self._bash_call(item_id, _str(item.get("command")))]

    def _on_item_completed(self, obj: Json) -> list[Event] | None:
        kind, item = self._item_of(obj)
        handler = self._by_item.get(kind)
        return None if handler is None else handler(item)

    @staticmethod
    def _bash_call(call_id: str, command: str) -> ToolCall:
        return ToolCall(tool_use_id=call_id, tool_name=BASH, file_path=None, input={"command": command})

    def _command_done(self, call_id: str, command: str, output: str, exit_code: int | None) -> list[Event]:
        events: list[Event] = []
        if call_id not in self._calls_out:
            events.append(self._bash_call(call_id, command))
        self._calls_out.discard(call_id)
        content = output or f"Exit code: {exit_code if exit_code is not None else 0}"
        is_error = exit_code is not None and exit_code != 0
        events.append(_result(call_id, BASH, content, is_error))
        return events

    def _on_command_item(self, item: Json) -> list[Event]:
        return self._command_done(
            _str(item.get("id")),
            _str(item.get("command")),
            _str(item.get("aggregated_output")),
            _exit_code(item.get("exit_code")),
        )

    def _on_file_change(self, item: Json) -> list[Event]:
        item_id, failed = _str(item.get("id")), item.get("status") == "failed"
        events: list[Event] = []
        for change in map(_obj, _list(item.get("changes"))):
            path = _str(change.get("path"))
            if not path:
                continue
            kind, move_path = _change_kind(change)
            diff = _str(change.get("unified_diff")) or _str(change.get("diff"))
            change_id = f"{item_id}-{path}"
            events.append(_edit_call(change_id, path, kind, move_path, diff))
            events.append(_edit_result(change_id, path, _edit_summary(kind, path, move_path), failed))
        return events

    @staticmethod
    def _call_pair(call_id: str, name: str, tool_input: Any, content: str, is_error: bool) -> list[Event]:
        return [
            ToolCall(tool_use_id=call_id, tool_name=name, file_path=None, input=tool_input),
            _result(call_id, name, content, is_error),
        ]

    def _on_mcp_item(self, item: Json) -> list[Event]:
        name = _mcp_name(item)
        error = _mcp_error(item.get("error"))
        content = error if error is not None else _mcp_result_text(item.get("result"))
        return self._call_pair(_str(item.get("id")), name, item.get("arguments"), content, error is not None)

    def _on_web_search(self, item: Json) -> list[Event]:
        query = _str(item.get("query")) or _str(_obj(item.get("action")).get("query"))
        return self._call_pair(_str(item.get("id")), "WebSearch", {"query": query}, "", False)

    def _on_todo_list(self, item: Json) -> list[Event]:
        plan = [
            {"step": _str(todo.get("text")), "status": _todo_status(todo)}
            for todo in map(_obj, _list(item.get("items")))
        ]
        return self._call_pair(_str(item.get("id")), "update_plan", {"plan": plan}, "Plan updated", False)

    def _on_collab(self, item: Json) -> list[Event]:
        tool_input = {key: item[key] for key in _COLLAB_INPUT_KEYS if item.get(key) is not None}
        status = _str(item.get("status"))
        name = _str(item.get("tool"), "collab_tool_call")
        return self._call_pair(_str(item.get("id")), name, tool_input, status, status == "failed")

    # -- legacy generation (before 0.44) ------------------------------------------------------------

    def _on_config(self, obj: Json) -> list[Event]:
        model = _str(obj.get("model"))
        if model:
            self.report.model = model
        return self._init(_str(obj.get("workdir")), model)

    def _on_prompt(self, obj: Json) -> list[Event]:
        clean = sanitize(_str(obj.get("prompt")))
        return [UserMessage(content=clean)] if clean else []

    def _on_session_configured(self, msg: Json) -> list[Event]:
        model = _str(msg.get("model"))
        if model:
            self.report.model = model
        return self._on_session_id(msg.get("session_id"), model)

    def _on_exec_begin(self, msg: Json) -> list[Event]:
        call_id = _str(msg.get("call_id"))
        self._calls_out.add(call_id)
        return [self._bash_call(call_id, _command_text(msg.get("command")))]

    def _on_exec_end(self, msg: Json) -> list[Event]:
        return self._command_done(
            _str(msg.get("call_id")),
            _command_text(msg.get("command")),
            _legacy_exec_output(msg),
            _exit_code(msg.get("exit_code")),
        )

    def _on_patch_begin(self, msg: Json) -> list[Event]:
        call_id = _str(msg.get("call_id"))
        events: list[Event] = []
        pending: list[tuple[str, str, str]] = []
        for path, change in _obj(msg.get("changes")).items():
            kind, fields = _legacy_change(change)
            move_path = _opt_str(fields.get("move_path"))
            change_id = f"{call_id}-{path}"
            events.append(_edit_call(change_id, path, kind, move_path, _str(fields.get("unified_diff"))))
            pending.append((change_id, path, _edit_summary(kind, path, move_path)))
        self._patches[call_id] = pending
        return events

    def _on_patch_end(self, msg: Json) -> list[Event]:
        pending = self._patches.pop(_str(msg.get("call_id")), [])
        ok = msg.get("success") is not False
        failure = _str(msg.get("stderr")) or _str(msg.get("stdout")) or "Patch failed"
        return [
            _edit_result(change_id, path, summary if ok else failure, not ok)
            for change_id, path, summary in pending
        ]

    def _mcp_call(self, call_id: str, invocation: Json) -> ToolCall:
        name = _mcp_name(invocation)
        arguments = invocation.get("arguments")
        return ToolCall(tool_use_id=call_id, tool_name=name, file_path=None, input=arguments)

    def _on_mcp_begin(self, msg: Json) -> list[Event]:
        call_id = _str(msg.get("call_id"))
        self._calls_out.add(call_id)
        return [self._mcp_call(call_id, _obj(msg.get("invocation")))]

    def _on_mcp_end(self, msg: Json) -> list[Event]:
        call_id = _str(msg.get("call_id"))
        call = self._mcp_call(call_id, _obj(msg.get("invocation")))
        events: list[Event] = [] if call_id in self._calls_out else [call]
        self._calls_out.discard(call_id)
        content, is_error = _legacy_mcp_result(msg.get("result"))
        events.append(_result(call_id, call.tool_name, content, is_error))
        return events

    def _on_token_count(self, msg: Json) -> list[Event]:
        # Early builds sent flat counts, later ones `info.total_token_usage`; both are running totals.
        raw = _obj(_obj(msg["info"]).get("total_token_usage")) if "info" in msg else msg
        if "input_tokens" in raw or "output_tokens" in raw:
            self._legacy_usage = raw
            self.report.usage = codex_usage(raw)
        return []

    def _on_task_complete(self, _: Json) -> list[Event]:
        if self._legacy_usage is None:
            return [Complete(success=True, duration_ms=0, cost_usd=0.0)]
        return self._priced_complete()
