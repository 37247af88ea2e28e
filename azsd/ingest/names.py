"""What a session is named when azsd makes it from an agent's history: the agent's own title of it,
else its first prompt as the user typed it (:func:`session_name`, :func:`first_prompt_name`).

>>> first_prompt_name([UserMessage(content="\\n  fix   the parser\\nthen the tests")])
'fix the parser'
>>> session_name("Parser refactor: rename the module", [UserMessage(content="go")])
'Parser refactor: rename the module'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from azsd.context import sanitize
from azsd.events import Event, UserMessage
from azsd.rusttext import RUST_WHITESPACE, is_blank, rust_lines, trim, trim_end

__all__ = ["first_prompt_name", "session_name"]

_WHITESPACE: Final = re.compile(f"[{re.escape(RUST_WHITESPACE)}]+")
#: Control characters (a terminal would act on them), which a name never holds.
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Where a Codex prompt sent from an IDE extension starts the user's own request.
_IDE_REQUEST: Final = "## My request for Codex:"
#: An XML-like tag, which agents wrap around command names and the like.
_TAG: Final = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?>")
#: Claude Code's record of a slash command the user typed: its name and its arguments.
_COMMAND: Final = re.compile(r"<command-name>\s*([^<]*?)\s*</command-name>")
_ARGS: Final = re.compile(r"<command-args>\s*([^<]*?)\s*</command-args>", re.DOTALL)


def _slash_command(text: str, command: re.Match[str]) -> str:
    """A slash command's prompt as the user typed it (``/name args``)."""
    args = _ARGS.search(text)
    name = command.group(1)
    typed = f"{name} {args.group(1)}" if args and args.group(1) else name
    return typed if typed.startswith("/") else "/" + typed


def first_prompt_name(events: Sequence[Event], limit: int = 60) -> str | None:
    """A session's name: the first non-blank line of its first prompt (injected context removed),
    whitespace collapsed, cut to `limit` characters with ``…`` when longer; None with no prompt.

    >>> first_prompt_name([UserMessage(content=" \\n "), UserMessage(content="go\\nnow")])
    'go'
    >>> first_prompt_name([UserMessage(content="<azureal-session-context>…</azureal-session-context>hi")])
    'hi'
    >>> first_prompt_name([UserMessage(content="word " * 20)], limit=12)
    'word word w…'
    >>> first_prompt_name([UserMessage(content="\\x15/exit")])
    '/exit'
    >>> first_prompt_name([UserMessage(content="<command-message>init is analyzing</command-message>")])
    'init is analyzing'
    >>> slash = "<command-message>orchestrator is running…</command-message><command-name>/orchestrator"
    >>> first_prompt_name([UserMessage(content=slash + "</command-name><command-args>ship</command-args>")])
    '/orchestrator ship'
    >>> ide = "# Context from my IDE setup:\\n…\\n## My request for Codex:\\nfix it"
    >>> first_prompt_name([UserMessage(content=ide)])
    'fix it'
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    for event in events:
        if not isinstance(event, UserMessage):
            continue
        clean = sanitize(event.content)
        if clean is not None and _IDE_REQUEST in clean:  # Codex from an IDE: the request follows its context
            clean = clean.split(_IDE_REQUEST, 1)[1]
        if clean is not None and (command := _COMMAND.search(clean)) is not None:
            clean = _slash_command(clean, command)  # what the user typed, not Claude's note of it
        if clean is not None:
            clean = _TAG.sub("", clean)  # e.g. Claude's <command-message>…</command-message>
        if clean is None or is_blank(clean):
            continue
        line = next(line for line in rust_lines(clean) if not is_blank(line))
        name = _WHITESPACE.sub(" ", trim(_CONTROL.sub("", line)))
        return name if len(name) <= limit else trim_end(name[: limit - 1]) + "…"
    return None


def session_name(title: str | None, head: Sequence[Event]) -> str | None:
    """A new session's name: the agent's own title of it (Claude's summary) when it made one, else
    its first prompt (:func:`first_prompt_name`), cleaned and cut alike."""
    named = first_prompt_name([UserMessage(content=title)]) if title else None
    return named or first_prompt_name(head)
