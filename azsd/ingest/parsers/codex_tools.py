"""What the two Codex parsers share: JSON accessors, output normalization, usage, the mapping of
live exec items (rollout function calls are mapped in :mod:`azsd.ingest.parsers.codex_rollout`).

Mapping rules: spec/store-format.md §4.3; formats: agent-formats.md §3-§5.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from typing import Any, Final

import msgspec

from azsd import pricing
from azsd.events import AssistantText, Event, Hook, ToolCall, ToolResult
from azsd.ingest.parsers.base import MAX_INT, Usage, message_text
from azsd.model import Cost
from azsd.rusttext import is_blank, rust_lines, trim

__all__ = [
    "codex_cost",
    "codex_usage",
    "describe_write_stdin",
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
    """A token count or duration: a non-negative JSON integer, at most SQLite's INTEGER, else 0."""
    return min(value, MAX_INT) if type(value) is int and 0 <= value <= _U64_MAX else 0


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


#: How Codex begins a notice that it retries a request (``Reconnecting... 1/5 (…)``).
RETRY_PREFIX: Final = "Reconnecting..."


def _error_text(obj: Json) -> list[Event]:
    """A stream `error` (live, or a legacy `msg`): a retry notice is a Hook ``retry`` (it is neither
    an answer nor the end); a fatal error is shown as assistant text, as AZUREAL does."""
    message = _str(obj.get("message"), "Unknown error")
    if message.startswith(RETRY_PREFIX):
        return [Hook(name="retry", output=message)]
    return [AssistantText(text=f"Error: {message}")]


def reasoning_hooks(texts: Iterable[str]) -> list[Hook]:
    """A model's reasoning, kept as Hooks ``reasoning`` (never an answer, never in a context)."""
    return [Hook(name="reasoning", output=text) for text in texts if text.strip()]


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


def codex_cost(model: str | None, usage: Usage) -> Cost | None:
    """Codex reports no cost: an estimate from the model's prices (azsd.pricing), None when unknown."""
    usd = pricing.estimate(model, usage)
    return None if usd is None else Cost(usd, "estimated")


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
    text = message_text(fields.get("content"))
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
