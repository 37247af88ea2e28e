"""What a tool call of the full record did, line by line: a Write as a new file, an Edit, a MultiEdit
and an apply_patch as a diff, a todo list as a list, a command as it was typed, any other input as
JSON; and a result as the tool gave it. Pure: `azs show --full` paints the lines for a terminal and
the web view as HTML.

>>> edit = {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
>>> body(ToolCall(tool_use_id="t", tool_name="Edit", input=edit))
[('-', 'x = 1'), ('+', 'x = 2')]
>>> edit = {"old_string": "a\\nb\\nc", "new_string": "a\\nB\\nc"}
>>> body(ToolCall(tool_use_id="t", tool_name="Edit", input=edit))
[(' ', 'a'), ('-', 'b'), ('+', 'B'), (' ', 'c')]
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Any, Final, Literal, TypeAlias

import msgspec

from azsd.events import ToolCall

__all__ = ["Kind", "Row", "body", "changed_within", "result_rows"]

#: A row's kind: added, removed, context, a heading (a file or hunk), a todo done / not done, text.
Kind: TypeAlias = Literal["+", "-", " ", "@", "☑", "☐", "="]
Row: TypeAlias = tuple[Kind, str]

#: The most (old lines × new lines) an edit may have to be diffed line by line.
_DIFF_CELLS: Final = 4_000_000
#: Keys shown in a tool call's one-line header (`key_param`), left out of its JSON body.
_SHOWN: Final = frozenset({"file_path", "path", "command", "cmd", "pattern", "url", "description"})


def body(call: ToolCall) -> list[Row]:
    """The rows of what `call` did (after its one-line header), empty when the header says it all."""
    data: dict[str, Any] = call.input if isinstance(call.input, dict) else {}
    name = call.tool_name
    if name == "Write" and isinstance(data.get("content"), str):
        return [("+", line) for line in _lines(data["content"])]
    if name == "Edit" and isinstance(data.get("old_string"), str):
        return _edit(data["old_string"], data.get("new_string"))
    if name == "MultiEdit" and isinstance(data.get("edits"), list):
        rows: list[Row] = []
        for i, edit in enumerate(data["edits"]):
            if isinstance(edit, dict) and isinstance(edit.get("old_string"), str):
                rows += [("@", f"edit {i + 1}"), *_edit(edit["old_string"], edit.get("new_string"))]
        return rows
    patch = _patch_text(name, data)
    if patch is not None:
        return _patch(patch)
    if name == "TodoWrite" and isinstance(data.get("todos"), list):
        return [_todo(item) for item in data["todos"] if isinstance(item, dict)]
    if name in ("Bash", "shell", "exec_command", "local_shell"):
        command = data.get("command", data.get("cmd"))
        text = " ".join(map(str, command)) if isinstance(command, list) else command
        return [("=", line) for line in _lines(text)] if isinstance(text, str) and "\n" in text else []
    rest = {k: v for k, v in data.items() if k not in _SHOWN}
    if not rest:
        return []
    pretty = msgspec.json.format(msgspec.json.encode(rest), indent=2).decode()
    return [("=", line) for line in pretty.splitlines()]


def changed_within(rows: list[Row]) -> dict[int, list[tuple[int, int]]]:
    """Where a line that an edit changed differs from the line it replaced: for each run of removed
    lines followed by as many added ones, the `[start, end)` character ranges that differ in each
    (by row index; a line rewritten whole has none). What a reader's eye looks for in a diff.

    >>> changed_within([("-", "x = 1"), ("+", "x = 2")])
    {0: [(4, 5)], 1: [(4, 5)]}
    """
    found: dict[int, list[tuple[int, int]]] = {}
    i = 0
    while i < len(rows):
        removed = 0
        while i + removed < len(rows) and rows[i + removed][0] == "-":
            removed += 1
        added = 0
        while i + removed + added < len(rows) and rows[i + removed + added][0] == "+":
            added += 1
        if removed and removed == added:
            for k in range(removed):
                old, new = rows[i + k][1], rows[i + removed + k][1]
                spans = _spans(old, new)
                if spans is not None:
                    found[i + k], found[i + removed + k] = spans
        i += max(1, removed + added)
    return found


def _spans(old: str, new: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]] | None:
    """The ranges of `old` and of `new` that differ, or None when the two have little in common."""
    if len(old) * len(new) > _DIFF_CELLS:
        return None
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    if matcher.ratio() < 0.5:
        return None
    before: list[tuple[int, int]] = []
    after: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            if i2 > i1:
                before.append((i1, i2))
            if j2 > j1:
                after.append((j1, j2))
    return before, after


def result_rows(content: str) -> list[str]:
    """A tool result's lines, every one (CR LF as LF)."""
    return content.replace("\r\n", "\n").rstrip("\n").split("\n") if content else ["(no output)"]


def _lines(text: str) -> list[str]:
    return text.rstrip("\n").split("\n") if text else []


def _edit(old: str, new: Any) -> list[Row]:
    """The lines an edit removed and added, with the lines it kept between them (a line diff, as
    `diff -u` reads); an edit too big to diff line by line is its old lines, then its new ones."""
    before, after = _lines(old), _lines(new if isinstance(new, str) else "")
    if len(before) * len(after) > _DIFF_CELLS:
        return [("-", line) for line in before] + [("+", line) for line in after]
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            rows += [(" ", line) for line in before[i1:i2]]
        else:
            rows += [("-", line) for line in before[i1:i2]] + [("+", line) for line in after[j1:j2]]
    return rows


def _patch_text(name: str, data: dict[str, Any]) -> str | None:
    """The patch an apply_patch call carries (Codex: as `input`, `patch`, or the command's last word)."""
    if name not in ("apply_patch", "ApplyPatch"):
        command = data.get("command")
        if isinstance(command, list) and command and command[0] == "apply_patch" and len(command) > 1:
            return str(command[-1])
        return None
    for key in ("input", "patch", "content"):
        if isinstance(data.get(key), str):
            return str(data[key])
    command = data.get("command")
    return str(command[-1]) if isinstance(command, list) and command else None


def _patch(text: str) -> list[Row]:
    rows: list[Row] = []
    for line in _lines(text):
        if line.startswith(("*** ", "@@")):
            rows.append(("@", line))
        elif line.startswith("+"):
            rows.append(("+", line[1:]))
        elif line.startswith("-"):
            rows.append(("-", line[1:]))
        else:
            rows.append((" ", line[1:] if line.startswith(" ") else line))
    return rows


def _todo(item: dict[str, Any]) -> Row:
    done = item.get("status") == "completed"
    text = str(item.get("content") or item.get("activeForm") or "")
    if item.get("status") == "in_progress":
        text += " (in progress)"
    return ("☑" if done else "☐", text)
