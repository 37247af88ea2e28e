"""How a Codex rollout's tool calls map to AZUREAL's events: each tool's name, file path and input
(spec/store-format.md §4.3), and a tool output's text. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from azsd.ingest.parsers.base import message_text
from azsd.ingest.parsers.codex_tools import (
    _INVALID,
    BASH,
    EDIT,
    Json,
    _argv_command,
    _decode,
    _list,
    _obj,
    _opt_str,
    _str,
    describe_write_stdin,
)
from azsd.rusttext import rust_lines, trim

__all__ = ["ToolMapping", "map_tool_call", "tool_output_text"]

_PATCH_FILE_PREFIXES: Final = ("*** Update File: ", "*** Add File: ")


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


def tool_output_text(output: Any) -> str:
    """A tool output: a string, or (newer builds) a list of content items whose texts are joined."""
    return output if isinstance(output, str) else message_text(_list(output))
