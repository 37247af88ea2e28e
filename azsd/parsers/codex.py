"""OpenAI Codex CLI JSONL: the live `codex exec --json` stream and the on-disk rollout files.

Mapping rules: spec/store-format.md §4.3 (what AZUREAL does), formats: agent-formats.md §3-§5.

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

**Rollouts** (:class:`CodexRolloutParser`, ``~/.codex/sessions/…/rollout-*.jsonl``) are envelopes
``{"timestamp","type","payload"}`` of kind ``session_meta``, ``turn_context``, ``response_item``,
``event_msg`` and ``compacted`` (0.40 to now). Files from before the envelope (mid-2025) start with
a bare header ``{id,timestamp,instructions}``, hold ``{"record_type":"state"}`` markers and carry
the response items bare; they map the same way. Prompts, assistant text and reasoning are written
twice (``event_msg`` and ``response_item``); a look-back over the recently emitted events drops the
second copy, as AZUREAL does.

Both parsers are pure: decoded lines in, events out, run totals in :attr:`LineParser.report`.
"""

from __future__ import annotations

import shlex
from collections import deque
from collections.abc import Callable, Iterable
from itertools import chain, islice
from typing import Any, ClassVar, Final

import msgspec

from azsd.context import sanitize
from azsd.events import AssistantText, Compacted, Complete, Event, Init, ToolCall, ToolResult, UserMessage
from azsd.parsers.base import LineParser, Usage
from azsd.rusttext import is_blank, rust_lines, trim

__all__ = [
    "CodexExecParser",
    "CodexRolloutParser",
    "codex_cost_usd",
    "codex_usage",
    "describe_write_stdin",
    "map_tool_call",
    "normalize_tool_output",
]

Json = dict[str, Any]
Handler = Callable[[Json], list[Event] | None]

BASH: Final = "Bash"
EDIT: Final = "Edit"
#: Rollouts put this in Init (the real model arrives later, in `turn_context`).
ROLLOUT_INIT_MODEL: Final = "codex"
#: How far back a prompt / an assistant text is compared against what was already emitted.
USER_DEDUP_WINDOW: Final = 12
ASSISTANT_DEDUP_WINDOW: Final = 20
#: A `write_stdin` preview longer than this (in escaped chars) is cut to 29 chars + `...`.
STDIN_PREVIEW_CHARS: Final = 32

_U64_MAX: Final = 2**64 - 1
_DECODER: Final = msgspec.json.Decoder()
_INVALID: Final = object()

_FUNCTION_ERROR_PREFIXES: Final = ("Error", "write_stdin failed:", "exec_command failed:")
_CHUNK_OUTPUT: Final = "\nOutput:\n"
_PROCESS_EXITED: Final = "Process exited with code "
_PROCESS_RUNNING: Final = "Process running with session ID "
_PATCH_FILE_PREFIXES: Final = ("*** Update File: ", "*** Add File: ")
_RUST_ESCAPES: Final = {"\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\", "'": "\\'", '"': '\\"'}

#: Blocks Codex itself puts into role-`user` items: (opening, closing) of the whole text.
_INJECTED_CONTEXT: Final = (
    ("<environment_context>", "</environment_context>"),
    ("<user_instructions>", "</user_instructions>"),
    ("# AGENTS.md instructions", "</INSTRUCTIONS>"),
)
_COLLAB_INPUT_KEYS: Final = ("prompt", "receiver_thread_ids")
#: Keys of the legacy exec config line (the first line before 0.44).
_EXEC_CONFIG_KEYS: Final = frozenset(
    {"model", "provider", "approval", "sandbox", "workdir", "reasoning effort", "reasoning summaries"}
)
_EXEC_IGNORED: Final = frozenset({"turn.started", "item.updated", "item.plan.delta", "request_user_input"})
_LEGACY_IGNORED: Final = frozenset(
    {
        "task_started",
        "agent_message_delta",
        "agent_reasoning_delta",
        "agent_reasoning_raw_content",
        "agent_reasoning_raw_content_delta",
        "agent_reasoning_section_break",
        "exec_command_output_delta",
        "exec_approval_request",
        "apply_patch_approval_request",
        "background_event",
        "stream_error",
        "turn_diff",
        "plan_update",
        "get_history_entry_response",
        "mcp_list_tools_response",
        "web_search_begin",
        "web_search_end",
        "user_message",
        "shutdown_complete",
    }
)
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
        "task_started",
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
    }
)


# -- small JSON accessors ---------------------------------------------------------------------------


def _str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _obj(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _count(value: Any) -> int:
    """A token count or duration: a non-negative JSON integer that fits a u64, else 0."""
    return value if type(value) is int and 0 <= value <= _U64_MAX else 0


def _exit_code(value: Any) -> int | None:
    """An exit code (Rust `as_i64`): any JSON integer, else None."""
    return value if type(value) is int else None


def _decode(text: str) -> Any:
    try:
        return _DECODER.decode(text)
    except msgspec.DecodeError:
        return _INVALID


def _ignore(_: Json) -> list[Event]:
    return []


def _result(
    call_id: str, tool_name: str, content: str, is_error: bool, file_path: str | None = None
) -> ToolResult:
    return ToolResult(
        tool_use_id=call_id, tool_name=tool_name, file_path=file_path, content=content, is_error=is_error
    )


def _error_text(obj: Json) -> list[Event]:
    """A fatal stream `error` (live, or a legacy `msg`): shown as assistant text, as AZUREAL does."""
    return [AssistantText(text=f"Error: {_str(obj.get('message'), 'Unknown error')}")]


def _with_ignored(handlers: dict[str, Handler], ignored: Iterable[str]) -> dict[str, Handler]:
    return {**dict.fromkeys(ignored, _ignore), **handlers}


# -- shared rules -------------------------------------------------------------------------------


def codex_usage(raw: Json) -> Usage:
    """Normalize one Codex usage object (agent-formats §5): `input_tokens` includes the cached part."""
    total_in = _count(raw.get("input_tokens"))
    cached = _count(raw.get("cached_input_tokens"))
    return Usage(
        input=max(total_in - cached, 0),
        output=_count(raw.get("output_tokens")),
        cache_read=cached,
        cache_write=_count(raw.get("cache_write_input_tokens")),
        reasoning=_count(raw.get("reasoning_output_tokens")),
    )


def codex_cost_usd(raw: Json) -> float:
    """AZUREAL's estimate for a live turn: $10/M input tokens (cached included), $30/M output."""
    return (_count(raw.get("input_tokens")) * 10.0 + _count(raw.get("output_tokens")) * 30.0) / 1_000_000.0


def _argv_command(value: Any) -> str | None:
    """An argv list as one command line, quoted the way Codex prints commands (`bash -lc 'ls -a'`)."""
    if isinstance(value, list) and all(isinstance(arg, str) for arg in value):
        return shlex.join(value)
    return None


def _command_text(value: Any) -> str:
    """A command given as a string or as an argv list."""
    if isinstance(value, str):
        return value
    return _argv_command(value) or ""


def _rust_escape_default(text: str) -> str:
    """Rust `str::escape_default`: `\\t \\r \\n \\' \\" \\\\`, printable ASCII as is, else `\\u{hex}`."""
    return "".join(
        _RUST_ESCAPES.get(ch) or (ch if " " <= ch <= "~" else f"\\u{{{ord(ch):x}}}") for ch in text
    )


def describe_write_stdin(args: Any) -> str:
    """The `command` AZUREAL shows for a `write_stdin` call: a poll, a Ctrl-C, or a short preview."""
    fields = _obj(args)
    session = fields.get("session_id")
    suffix = f" {session}" if isinstance(session, str | int | float) and not isinstance(session, bool) else ""
    chars = _str(fields.get("chars"))
    if not chars:
        return f"poll session{suffix}"
    if chars == "\x03":
        return f"send Ctrl-C to session{suffix}"
    preview = _rust_escape_default(chars)
    if len(preview) > STDIN_PREVIEW_CHARS:
        preview = preview[: STDIN_PREVIEW_CHARS - 3] + "..."
    return f'send "{preview}" to session{suffix}'


def _unwrap_output_envelope(output: str) -> str | None:
    """The text inside a 0.40-style `{"output":…,"metadata":{"exit_code":n}}` output, if it is one."""
    envelope = _decode(output)
    if not isinstance(envelope, dict):
        return None
    inner = envelope.get("output")
    if not isinstance(inner, str):
        return None
    if not is_blank(inner):
        return inner
    code = _exit_code(_obj(envelope.get("metadata")).get("exit_code"))
    if code is None:
        return None
    return "" if code == 0 else f"Exit code: {code}"


def _unwrap_chunk(output: str) -> str:
    """The useful part of a unified-exec `Chunk ID: …` report (Bash outputs only)."""
    _, found, tail = output.partition(_CHUNK_OUTPUT)
    if found:
        actual = tail.rstrip("\n")
        if not is_blank(actual):
            return actual
    lines = rust_lines(output)
    for line in lines:
        if line.startswith(_PROCESS_EXITED):
            code = trim(line[len(_PROCESS_EXITED) :])
            return "" if code == "0" else f"Exit code: {code}"
    for line in lines:
        if line.startswith(_PROCESS_RUNNING):
            return _PROCESS_RUNNING + trim(line[len(_PROCESS_RUNNING) :])
    return output


def normalize_tool_output(tool_name: str, output: str) -> str:
    """A rollout tool output as AZUREAL stores it (§4.3 output normalization)."""
    unwrapped = _unwrap_output_envelope(output)
    if unwrapped is not None:
        output = unwrapped
    if tool_name in (BASH, "bash") and output.startswith("Chunk ID:"):
        return _unwrap_chunk(output)
    return output


def _function_output_is_error(output: str) -> bool:
    return output.startswith(_FUNCTION_ERROR_PREFIXES) or (
        output.startswith("Exit code: ") and not output.startswith("Exit code: 0")
    )


def _custom_output_is_error(output: str) -> bool:
    return output.startswith("Error")


def _message_text(content: Any) -> str:
    """A message's text: the string itself, or the `text` of each content item joined with `\\n`."""
    if isinstance(content, str):
        return content
    return "\n".join(text for item in _list(content) if isinstance(text := _obj(item).get("text"), str))


def _is_injected_codex_context(text: str) -> bool:
    """A role-`user` item that is wholly a block Codex injects (environment, AGENTS.md, instructions)."""
    body = trim(text)
    return any(body.startswith(opening) and body.endswith(closing) for opening, closing in _INJECTED_CONTEXT)


# -- live exec helpers --------------------------------------------------------------------------


def _edit_summary(kind: str, path: str, move_path: str | None) -> str:
    return f"File {kind}: {path}" if move_path is None else f"File {kind}: {path} -> {move_path}"


def _edit_call(change_id: str, path: str, kind: str, move_path: str | None, diff: str) -> ToolCall:
    tool_input: Json = {"file_path": path, "kind": kind}
    if move_path is not None:
        tool_input["move_path"] = move_path
    if diff:
        tool_input["unified_diff"] = diff
    return ToolCall(tool_use_id=change_id, tool_name=EDIT, file_path=path, input=tool_input)


def _edit_result(change_id: str, path: str, content: str, is_error: bool) -> ToolResult:
    return _result(change_id, EDIT, content, is_error, path)


def _change_kind(change: Json) -> tuple[str, str | None]:
    """A `file_change` entry's kind and rename target (`kind` a string, or `{type, move_path}`)."""
    kind = change.get("kind")
    if isinstance(kind, dict):
        return _str(kind.get("type"), "update"), _opt_str(kind.get("move_path")) or _opt_str(
            change.get("move_path")
        )
    return _str(kind, "update"), _opt_str(change.get("move_path"))


def _todo_status(todo: Json) -> str:
    return "completed" if todo.get("completed") is True else "pending"


def _legacy_change(change: Any) -> tuple[str, Json]:
    """A legacy `patch_apply_begin` change: `{"add":{…}}`, `{"update":{…}}`, `"delete"` or tagged."""
    if isinstance(change, str):
        return change, {}
    fields = _obj(change)
    if isinstance(fields.get("type"), str):
        return fields["type"], fields
    if len(fields) == 1:
        ((kind, inner),) = fields.items()
        return kind, _obj(inner)
    return "update", fields


def _mcp_name(call: Json) -> str:
    """An MCP tool as AZUREAL names it: `<server>:<tool>`."""
    return f"{_str(call.get('server'), 'mcp')}:{_str(call.get('tool'), 'unknown')}"


def _mcp_result_text(result: Any) -> str:
    """An MCP result as text: a string, or the `text` of its content blocks, or its structured content."""
    if isinstance(result, str):
        return result
    fields = _obj(result)
    text = _message_text(fields.get("content"))
    structured = fields.get("structured_content", fields.get("structuredContent"))
    if not text and structured is not None:
        return msgspec.json.encode(structured).decode()
    return text


def _mcp_error(error: Any) -> str | None:
    """An MCP call's error message (a string or `{message}`), None when there is none."""
    if error is None:
        return None
    if isinstance(error, dict):
        return _str(error.get("message"))
    return error if isinstance(error, str) else msgspec.json.encode(error).decode()


def _legacy_mcp_result(result: Any) -> tuple[str, bool]:
    """A legacy `mcp_tool_call_end.result` (`{"Ok":{content,isError}}` or `{"Err":…}`): text and error."""
    fields = _obj(result)
    if "Err" in fields:
        err = fields["Err"]
        return (err if isinstance(err, str) else msgspec.json.encode(err).decode()), True
    ok = _obj(fields["Ok"]) if "Ok" in fields else fields
    return _mcp_result_text(ok), ok.get("isError") is True or ok.get("is_error") is True


def _legacy_exec_output(msg: Json) -> str:
    """A legacy `exec_command_end` output: `aggregated_output` if any, else stdout then stderr."""
    aggregated = _str(msg.get("aggregated_output"))
    if aggregated:
        return aggregated
    stdout, stderr = _str(msg.get("stdout")), _str(msg.get("stderr"))
    if stdout and stderr and not stdout.endswith("\n"):
        return f"{stdout}\n{stderr}"
    return stdout + stderr


# -- rollout tool calls -------------------------------------------------------------------------


def _tool_args(payload: Json) -> Any:
    """The parsed `arguments` (a JSON string; an object is taken as is), else `input`, else `{}`."""
    arguments = payload.get("arguments")
    if isinstance(arguments, dict):
        return arguments
    text = arguments if isinstance(arguments, str) else _str(payload.get("input"), "{}")
    parsed = _decode(text)
    return {} if parsed is _INVALID else parsed


def _with_command(args: Any, command: str) -> Json:
    """`args` with `command` set (replaced in place when present), or `{"command"}` for a non-object."""
    return {**args, "command": command} if isinstance(args, dict) else {"command": command}


def _workdir(args: Any) -> str | None:
    return _opt_str(_obj(args).get("workdir"))


def _patch_text(payload: Json) -> str:
    """The raw patch of an `apply_patch` call.

    The freeform tool sends it as `input`; the function-style tool sends `arguments` as a JSON
    object `{"input": patch}`, which is unwrapped here (AZUREAL keeps the JSON text, so it finds no
    file path in it).
    """
    arguments = payload.get("arguments")
    raw = arguments if isinstance(arguments, str) else _str(payload.get("input"))
    if raw.lstrip().startswith("{"):
        inner = _obj(_decode(raw)).get("input")
        if isinstance(inner, str):
            return inner
    return raw


def _patch_file_path(patch: str) -> str | None:
    for line in rust_lines(patch):
        for prefix in _PATCH_FILE_PREFIXES:
            if line.startswith(prefix):
                return trim(line[len(prefix) :])
    return None


ToolMapping = tuple[str, str | None, Any]


def _map_shell_command(payload: Json) -> ToolMapping:
    args = _tool_args(payload)
    return BASH, _workdir(args), args


def _map_shell(payload: Json) -> ToolMapping:
    """0.40's `shell` tool: `{"command": [argv], "workdir"}`; the argv is joined into one command."""
    args = _tool_args(payload)
    command = _argv_command(_obj(args).get("command"))
    if command is not None:
        args = _with_command(args, command)
    return BASH, _workdir(args), args


def _map_exec_command(payload: Json) -> ToolMapping:
    args = _tool_args(payload)
    fields = _obj(args)
    command = fields["command"] if "command" in fields else fields.get("cmd")
    return BASH, None, _with_command(args, _str(command))


def _map_write_stdin(payload: Json) -> ToolMapping:
    args = _tool_args(payload)
    return BASH, None, _with_command(args, describe_write_stdin(args))


def _map_apply_patch(payload: Json) -> ToolMapping:
    patch = _patch_text(payload)
    return EDIT, _patch_file_path(patch), {"patch": patch}


_TOOL_MAPPERS: Final[dict[str, Callable[[Json], ToolMapping]]] = {
    "shell_command": _map_shell_command,
    "shell": _map_shell,
    "exec_command": _map_exec_command,
    "write_stdin": _map_write_stdin,
    "apply_patch": _map_apply_patch,
}


def map_tool_call(name: str, payload: Json) -> ToolMapping:
    """A rollout call's (tool name, file path, input); unknown names keep their parsed arguments."""
    mapper = _TOOL_MAPPERS.get(name)
    return mapper(payload) if mapper is not None else (name, None, _tool_args(payload))


def _tool_output_text(output: Any) -> str:
    """A tool output: a string, or (newer builds) a list of content items whose texts are joined."""
    return output if isinstance(output, str) else _message_text(_list(output))


# -- live exec ----------------------------------------------------------------------------------


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
            return None if handler is None else handler(obj)
        msg = obj.get("msg")
        if isinstance(msg, dict):
            msg_handler = self._by_msg.get(_str(msg.get("type")))
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

    def _on_turn_completed(self, obj: Json) -> list[Event]:
        usage = obj.get("usage")
        if not isinstance(usage, dict):
            return [Complete(success=True, duration_ms=0, cost_usd=0.0)]
        # A running total for the thread: replaced, never added (agent-formats §3.1).
        self.report.usage = codex_usage(usage)
        self.report.cost_usd = codex_cost_usd(usage)
        return [Complete(success=True, duration_ms=0, cost_usd=self.report.cost_usd)]

    def _on_turn_failed(self, obj: Json) -> list[Event]:
        message = _str(_obj(obj.get("error")).get("message"), "Turn failed")
        return [Complete(success=False, duration_ms=0, cost_usd=0.0), AssistantText(text=f"Error: {message}")]

    def _reasoning(self, text: str) -> list[Event]:
        return [AssistantText(text=text)] if text else []

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
        self.report.cost_usd = codex_cost_usd(self._legacy_usage)
        return [Complete(success=True, duration_ms=0, cost_usd=self.report.cost_usd)]


# -- rollouts -----------------------------------------------------------------------------------


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
    Rollouts carry no cost, so :attr:`ParseReport.cost_usd` stays None.
    """

    format: ClassVar[str] = "codex-rollout"

    def __init__(self) -> None:
        super().__init__()
        self._recent: deque[Event] = deque(maxlen=ASSISTANT_DEDUP_WINDOW)
        self._calls: dict[str, tuple[str, str | None]] = {}
        self._init_done = False
        self._by_kind: dict[str, Handler] = {
            "session_meta": self._on_session_meta,
            "turn_context": self._on_turn_context,
            "response_item": lambda payload: self._dispatch(self._by_item, payload),
            "event_msg": lambda payload: self._dispatch(self._by_msg, payload),
            "compacted": lambda _: [Compacted()],
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
                "agent_reasoning": lambda p: self._assistant([_str(p.get("text"))]),
                "task_complete": lambda p: [
                    Complete(success=True, duration_ms=_count(p.get("duration_ms")), cost_usd=0.0)
                ],
                "turn_aborted": lambda _: [Complete(success=False, duration_ms=0, cost_usd=0.0)],
                "token_count": self._on_token_count,
                "function_call_output": self._on_event_tool_output,
            },
            _ROLLOUT_MESSAGES_IGNORED,
        )

    def handle(self, obj: Json) -> list[Event] | None:
        events = self._route(obj)
        if events:
            self._recent.extend(events)
        return events

    def _route(self, obj: Json) -> list[Event] | None:
        kind, payload = obj.get("type"), obj.get("payload")
        if isinstance(kind, str) and isinstance(payload, dict):
            handler = self._by_kind.get(kind)
            return None if handler is None else handler(payload)
        if isinstance(kind, str):  # a bare response item, from before the envelope
            return self._dispatch(self._by_item, obj)
        if "record_type" in obj:
            return []
        if "id" in obj and "timestamp" in obj:  # the pre-envelope header
            return self._on_session_meta(obj)
        return None

    @staticmethod
    def _dispatch(handlers: dict[str, Handler], payload: Json) -> list[Event] | None:
        handler = handlers.get(_str(payload.get("type")))
        return None if handler is None else handler(payload)

    # -- session --------------------------------------------------------------------------------

    def _on_session_meta(self, payload: Json) -> list[Event]:
        if self._init_done:
            return []
        self._init_done = True
        session_id = payload.get("id")
        if isinstance(session_id, str) and session_id:
            self.report.agent_session_id = session_id
        return [Init(cwd=_str(payload.get("cwd")), model=ROLLOUT_INIT_MODEL)]

    def _on_turn_context(self, payload: Json) -> list[Event]:
        model = payload.get("model")
        if isinstance(model, str) and model:
            self.report.model = model
        return []

    def _on_token_count(self, payload: Json) -> list[Event]:
        total = _obj(payload.get("info")).get("total_token_usage")
        if isinstance(total, dict):
            # Cumulative for the session: replaced, never added (agent-formats §4.3).
            self.report.usage = codex_usage(total)
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

    def _repeats_assistant(self, text: str, pending: list[Event]) -> bool:
        """Whether an assistant text of the current exchange (≤20 events back) equals `text`."""
        for event in islice(chain(reversed(pending), reversed(self._recent)), ASSISTANT_DEDUP_WINDOW):
            if isinstance(event, AssistantText) and event.text == text:
                return True
            if isinstance(event, UserMessage | Complete | Init):
                return False
        return False

    def _on_message(self, payload: Json) -> list[Event]:
        role = payload.get("role")
        text = _message_text(payload.get("content"))
        if role == "user":
            return self._user(text)
        if role == "assistant":
            return self._assistant([text])
        return []  # developer / system: instructions, never shown

    def _on_reasoning(self, payload: Json) -> list[Event]:
        return self._assistant(_str(_obj(part).get("text")) for part in _list(payload.get("summary")))

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
        output = normalize_tool_output(tool_name, _tool_output_text(payload.get("output")))
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
