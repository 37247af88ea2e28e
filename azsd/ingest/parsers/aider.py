"""Aider's chat history (`.aider.chat.history.md`): Markdown, appended to by every Aider run.

Aider writes (its `io.py`): ``# aider chat started at <local time>`` to open a run, each prompt as
``#### `` lines, each reply verbatim after a blank line, and its own output as ``> `` lines ending
in two spaces (a message of several lines carries ``> `` on its first line only, and the two spaces
on its last). This parser reads it one line at a time, as the JSONL parsers do:

- a run's header opens a session (`Init`, with the model its ``> Model:`` line names);
- a prompt is a `UserMessage` (``/run cmd`` and ``!cmd`` are also a `Bash` call);
- a reply is `AssistantText`, except its SEARCH/REPLACE blocks, which are `Edit` calls (file, old and
  new text, a short summary); ``> Applied edit to F`` is the result of the calls on F;
- ``> Running cmd`` is a `Bash` call, the rest of its block its result;
- ``> Tokens: 4.2k sent, 312 received. Cost: $0.02 message, $0.15 session.`` is usage, its cost as
  reported; other ``> `` lines are kept as a `Hook` (shown nowhere, searchable in exports);
- the next run's header ends the run (`Complete`, success, the run's reported cost).

A block is held until the line after it shows it ended (a torn last block waits, as a torn JSONL
line does); :meth:`AiderParser.finish` lets the last one go. Aider writes no session ids, no
per-message times and no tool timing: usage is dated by the run's start.

>>> parser = AiderParser()
>>> lines = ["# aider chat started at 2024-08-05 19:33:32", "", "> Model: gpt-4o with diff edit format  ",
...          "", "#### fix it  ", "", "Done.", "",
...          "> Tokens: 1.2k sent, 30 received. Cost: $0.01 message, $0.01 session.  "]
>>> events = [e for line in lines for e in parser.feed(line.encode())] + parser.finish()
>>> [type(e).__name__ for e in events]
['Init', 'Hook', 'UserMessage', 'AssistantText', 'Hook']
>>> parser.report.usage.input, parser.report.usage.output, parser.report.cost_usd.usd
(1200, 30, 0.01)
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
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
from azsd.ingest.parsers.aider_text import HEADER, parse_input_history, parse_tokens, segment_time
from azsd.ingest.parsers.base import MAX_LINE_BYTES, TOO_LONG, LineParser
from azsd.model import Cost

__all__ = [
    "HEADER", "NOT_IN_HISTORY", "AiderParser", "is_aider", "parse_input_history", "parse_tokens",
    "segment_time",
]  # fmt: skip

#: The result of a ``/run`` or ``!`` command whose output Aider kept out of its chat history (it
#: writes the command's output to the terminal and, when told to, into the chat it sends the model,
#: never into ``.aider.chat.history.md``): said, rather than an empty result that reads as none.
NOT_IN_HISTORY: Final = (
    "(output not recorded: Aider writes a command's output to the terminal, not to its chat history)"
)

_HEADER_B: Final = HEADER.encode()

_MODEL: Final = re.compile(r"^(?:Main model|Model|Models): (\S+)")
_FENCE: Final = re.compile(r"^(`{3,})")
_SEARCH: Final = re.compile(r"^\s*<{5,9} SEARCH\s*$")
_DIVIDER: Final = re.compile(r"^\s*={5,9}\s*$")
_REPLACE: Final = re.compile(r"^\s*>{5,9} REPLACE\s*$")
_APPLIED: Final = "Applied edit to "
#: How many input-history entries past the last one matched a prompt is looked for among.
_LOOKAHEAD: Final = 64
_RUNNING: Final = "Running "
#: Aider's question after a shell command's output (0.48: "Add the output to the chat?"; later:
#: "Add command output to the chat?", "Add 1.2k tokens of command output to the chat?").
_QUESTION: Final = re.compile(r"Add .*\bto the chat\?")


class AiderParser(LineParser):
    """Lines of an Aider chat history in, events out (see the module docstring).

    `closed` says the input is a whole run that a later one followed (an import's closed segment):
    :meth:`finish` then ends it with its `Complete` too.
    """

    format: ClassVar[str] = "aider"

    def __init__(self, *, closed: bool = False, prompts: Sequence[tuple[float, str]] = ()) -> None:
        super().__init__()
        self.closed = closed
        #: (Unix time, text) of the prompts in `.aider.input.history`, oldest first: each prompt of
        #: the chat history found there dates the usage after it (else the run's start does).
        self._prompts = prompts
        self._next_prompt = 0
        self._stamp: str | None = None
        self._mode = ""  # "", "user", "tool", "assistant"
        self._lines: list[str] = []
        self._starts: list[int] = []  # where in `_lines` each `> ` message of a tool block begins
        self._tool_open = False  # the last `> ` message has more lines (no two-space ending yet)
        self._fence = ""  # the fence the reply is inside, if any
        self._segment = 0
        self._calls = 0
        self._started: str | None = None  # ISO time of the run's start, for usage
        self._run_cost = 0.0
        self._in_run = False
        self._init_sent = True
        self._pending: dict[str, list[str]] = {}  # file -> Edit calls awaiting "Applied edit to"
        self._shell: str | None = None  # a Bash call whose output is the rest of the tool block
        self._last_call = ""

    def handle(self, obj: dict[str, Any]) -> list[Event] | None:  # pragma: no cover - lines are text
        return None

    def feed(self, line: bytes) -> list[Event]:
        self.report.lines += 1
        if line is TOO_LONG or len(line) > MAX_LINE_BYTES:
            return self._skip("too_long")
        try:
            text = line.decode("utf-8").rstrip("\n").rstrip("\r")
        except UnicodeDecodeError:
            return self._skip("invalid_utf8")
        before = self.report.usage
        events = self._line(text)
        if self.report.usage is not before:
            self.report.tally.follow(self.report.usage, self.report.model, self._stamp or self._started)
        if events:  # most lines only add to a block
            self.report.events.update(event_kind(e) for e in events)
        return events

    def finish(self) -> list[Event]:
        before = self.report.usage
        events = self._flush()  # the last block: a one-shot run's reply and its `Tokens:` line
        if self.closed and self._in_run:
            events += self._end_run()
        if self.report.usage is not before:  # in the parts a session's usage is made of too
            self.report.tally.follow(self.report.usage, self.report.model, self._stamp or self._started)
        self.report.events.update(event_kind(e) for e in events)
        return events

    # -- one line ---------------------------------------------------------------------------------

    def _line(self, text: str) -> list[Event]:
        if text.startswith(HEADER):
            return self._new_run(text)
        if self._mode == "tool" and self._tool_open:
            self._lines.append(_body(text))
            self._tool_open = not text.endswith("  ")
            return []
        if self._mode == "assistant" and self._fence:
            if text.startswith("> Tokens: "):  # a reply whose fence never closed
                return self._flush() + self._line(text)
            if _closes(text, self._fence):
                self._fence = ""
            self._lines.append(text)
            return []
        if text.startswith("#### ") or text == "####":
            out = self._flush() if self._mode != "user" else []
            self._mode = "user"
            self._lines.append(_body(text[5:]))
            return out
        if text.startswith("> ") or text == ">":
            out = self._flush() if self._mode != "tool" else []
            self._mode = "tool"
            self._starts.append(len(self._lines))
            self._lines.append(_body(text[2:]))
            self._tool_open = text != ">" and not text.endswith("  ")
            return out
        if not text.strip():
            if self._mode in ("user", "tool"):
                return self._flush()
            if self._mode == "assistant":
                self._lines.append("")
            return []
        out = self._flush() if self._mode != "assistant" else []
        self._mode = "assistant"
        fence = _FENCE.match(text) if text.startswith("```") else None  # (most lines: no regex)
        if fence:
            self._fence = fence.group(1)
        self._lines.append(text)
        return out

    def _new_run(self, header: str) -> list[Event]:
        out = self._flush()
        if self._in_run:
            out += self._end_run()
        self._segment += 1
        self._in_run, self._run_cost, self._init_sent = True, 0.0, False
        stamp = segment_time(header)
        self._started = stamp.isoformat() if stamp is not None else None
        self._stamp = None
        if stamp is not None:  # the input history's prompts of this run come at or after its start
            self._next_prompt = max(self._next_prompt, bisect_left(self._prompts, (stamp.timestamp() - 1,)))
        if self.report.agent_session_id is None:
            self.report.agent_session_id = f"aider {header[len(HEADER) :].strip()}"
        self._pending.clear()
        return out

    def _end_run(self) -> list[Event]:
        self._in_run = False
        out = self._init()
        return [*out, Complete(success=True, duration_ms=0, cost_usd=round(self._run_cost, 10))]

    def _init(self) -> list[Event]:
        if self._init_sent:
            return []
        self._init_sent = True
        return [Init(cwd="", model=self.report.model or "")]

    # -- blocks -----------------------------------------------------------------------------------

    def _flush(self) -> list[Event]:
        mode, lines, starts = self._mode, self._lines, self._starts
        self._mode, self._lines, self._starts, self._tool_open, self._fence = "", [], [], False, ""
        if not mode:
            return []
        if mode == "tool":
            return self._tool_block(lines, starts)
        out = self._init()
        if mode == "user":
            return out + self._prompt("\n".join(lines))
        return out + self._reply(lines)

    def _prompt(self, text: str) -> list[Event]:
        out: list[Event] = [UserMessage(content=text)]
        self._date(text)
        self._shell = None
        command = text[5:] if text.startswith("/run ") else text[1:] if text.startswith("!") else None
        if command and command.strip():
            out.append(self._call("Bash", None, {"command": command.strip()}))
            self._shell = self._last_call
        return out

    def _date(self, text: str) -> None:
        """Date what follows by `text`'s entry in the input history (looked for a little ahead)."""
        want = text.strip()
        for i in range(self._next_prompt, min(len(self._prompts), self._next_prompt + _LOOKAHEAD)):
            at, typed = self._prompts[i]
            if typed.strip() == want:
                self._stamp = datetime.fromtimestamp(at, UTC).isoformat()
                self._next_prompt = i + 1
                return

    def _tool_block(self, lines: list[str], starts: list[int]) -> list[Event]:
        """A block of Aider's `> ` messages: usage reports, applied edits, shell commands and their
        output (the first message after the command, unless it is Aider's question whether to add
        the output to the chat), and the rest as Aider's notes."""
        out: list[Event] = []
        notes: list[str] = []
        shell_out: list[str] = []
        taken = False  # the shell's output message has begun
        for line, first in _joined_costs(lines, set(starts)):
            model = _MODEL.match(line)
            if model and not self._init_sent:
                self.report.model = model.group(1)
            tokens = parse_tokens(line) if line.startswith("Tokens: ") else None
            if tokens is not None:
                usage, cost = tokens
                self.report.usage = self.report.usage + usage
                if cost is not None:
                    self._run_cost += cost
                    spent = (self.report.cost_usd.usd if self.report.cost_usd else 0.0) + cost
                    self.report.cost_usd = Cost(round(spent, 10), "reported")
                notes.append(line)
            elif line.startswith(_APPLIED) and self._pending.get(line[len(_APPLIED) :].strip()):
                path = line[len(_APPLIED) :].strip()
                for call in self._pending.pop(path):
                    out.append(
                        ToolResult(
                            tool_use_id=call, tool_name="Edit", file_path=path, content=line, is_error=False
                        )
                    )
            elif line.startswith(_RUNNING) and line[len(_RUNNING) :].strip():
                out += self._shell_result(shell_out)
                out.append(self._call("Bash", None, {"command": line[len(_RUNNING) :].strip()}))
                self._shell, shell_out, taken = self._last_call, [], False
            elif self._shell is not None and not (first and (taken or _QUESTION.match(line))):
                shell_out.append(line)
                taken = taken or first
            else:
                out += self._shell_result(shell_out)  # (none when no shell command is open)
                shell_out = []
                notes.append(line)
        out += self._shell_result(shell_out)
        text = "\n".join(notes).strip("\n")
        if text.strip():
            out.append(Hook(name="aider", output=text))
        if self._in_run and not self._init_sent and self.report.model:
            out = self._init() + out
        return out

    def _shell_result(self, lines: list[str]) -> list[Event]:
        call, self._shell = self._shell, None
        if call is None:
            return []
        content = "\n".join(lines).strip("\n") or NOT_IN_HISTORY
        return [
            ToolResult(tool_use_id=call, tool_name="Bash", file_path=None, content=content, is_error=False)
        ]

    def _reply(self, lines: list[str]) -> list[Event]:
        while lines and not lines[-1].strip():
            lines = lines[:-1]
        out: list[Event] = []
        text: list[str] = []
        i = 0
        while i < len(lines):
            if not _SEARCH.match(lines[i]):
                text.append(lines[i])
                i += 1
                continue
            path, keep = _edit_target(text)
            end = _block_end(lines, i)
            if path is None or end is None:
                text.append(lines[i])
                i += 1
                continue
            out += _text(text[:keep])
            divider, stop = end
            search, replace = lines[i + 1 : divider], lines[divider + 1 : stop]
            out.append(self._edit(path, "\n".join(search), "\n".join(replace)))
            text, i = [], stop + 1
            if i < len(lines) and _FENCE.match(lines[i]) and not lines[i].strip("`").strip():
                i += 1  # the block's closing fence
        return out + _text(text)

    def _edit(self, path: str, old: str, new: str) -> ToolCall:
        old_n, new_n = old.count("\n") + 1 if old else 0, new.count("\n") + 1 if new else 0
        summary = f"create {path} ({new_n} lines)" if not old else f"replace {old_n} lines with {new_n}"
        call = self._call(
            "Edit", path, {"file_path": path, "old_string": old, "new_string": new, "summary": summary}
        )
        self._pending.setdefault(path, []).append(call.tool_use_id)
        return call

    def _call(self, name: str, path: str | None, data: dict[str, Any]) -> ToolCall:
        self._calls += 1
        self._last_call = f"aider-{self._segment}-{self._calls}"
        return ToolCall(tool_use_id=self._last_call, tool_name=name, file_path=path, input=data)


def _joined_costs(lines: list[str], starts: set[int]) -> list[tuple[str, bool]]:
    """The block's lines, each with whether it begins a message, a ``Cost:`` line put back on the
    ``Tokens:`` line before it (Aider 0.51 wrote the report over two lines)."""
    out: list[tuple[str, bool]] = []
    for i, line in enumerate(lines):
        before = out[-1][0] if out else ""
        if line.startswith("Cost: $") and before.startswith("Tokens: ") and "Cost:" not in before:
            out[-1] = (f"{before} {line}", out[-1][1])
        else:
            out.append((line, i in starts))
    return out


def _body(text: str) -> str:
    """A line without the two spaces Aider ends its Markdown line breaks with."""
    return text[:-2] if text.endswith("  ") else text


def _closes(text: str, fence: str) -> bool:
    stripped = text.strip()
    return stripped.startswith(fence) and not stripped.strip("`")


def _text(lines: list[str]) -> list[Event]:
    body = "\n".join(lines).strip("\n")
    return [AssistantText(text=body)] if body.strip() else []


def _edit_target(text: list[str]) -> tuple[str | None, int]:
    """The file a SEARCH block edits (named on the line before its fence, or inside it) and how many
    of the reply's lines before it are prose."""
    n = len(text)
    while n and not text[n - 1].strip():
        n -= 1
    if not n:
        return None, 0
    last = text[n - 1]
    if _FENCE.match(last.strip()):
        n -= 1
        while n and not text[n - 1].strip():
            n -= 1
        return (_file_name(text[n - 1]), n - 1) if n else (None, 0)
    if n >= 2 and _FENCE.match(text[n - 2].strip()):  # diff-fenced: the name inside the fence
        return _file_name(last), n - 2
    return _file_name(last), n - 1


def _file_name(line: str) -> str | None:
    name = line.strip().rstrip(":").strip("#").strip().strip("`*").strip()
    return name or None


def _block_end(lines: list[str], start: int) -> tuple[int, int] | None:
    """Where a SEARCH block's divider and REPLACE marker are, or None when it is not whole."""
    divider = None
    for j in range(start + 1, len(lines)):
        if divider is None and _DIVIDER.match(lines[j]):
            divider = j
        elif divider is not None and _REPLACE.match(lines[j]):
            return divider, j
    return None


def is_aider(lines: list[bytes]) -> bool:
    """Whether the first lines of a file are an Aider chat history's."""
    return any(line.startswith(_HEADER_B) for line in lines)
