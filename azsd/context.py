"""Injected session context: detection, stripping and building (spec §4.4, §5, §6).

Before each turn AZUREAL wraps the stored transcript around the user's prompt::

    <azureal-session-context>
    ## User
    ...
    </azureal-session-context>

    <the prompt the user typed>

The agent echoes that whole text back into its JSONL, so on the way in it is stripped again and
only the clean prompt is stored. Everything here is pure: values in, values out.

>>> p = build_context_prompt(ContextPayload(None, [UserMessage(content="hi")]), "next")
>>> strip(p)
'next'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from azsd.events import (
    AssistantText,
    Command,
    Complete,
    Event,
    Plan,
    ToolCall,
    ToolResult,
    UserMessage,
)
from azsd.rusttext import is_blank, rust_lines, trim, trim_end, trim_start
from azsd.tools import context_param

__all__ = [
    "AUTO_CONTINUE_CLOSE",
    "AUTO_CONTINUE_OPEN",
    "AUTO_CONTINUE_PROMPT",
    "CODEX_PROMPT_BUDGET",
    "CODEX_TRIM_NOTICE",
    "COMPACTION_PROMPT_START",
    "COMPACTION_THRESHOLD",
    "CONTEXT_CLOSE",
    "CONTEXT_OPEN",
    "HIDDEN_CODEX_PREFIX",
    "ContextPayload",
    "auto_continue_prompt",
    "build_compaction_prompt",
    "build_context_prompt",
    "cut_reminder",
    "fit_codex_budget",
    "has_context_tag",
    "is_auto_continue",
    "is_hidden_codex_context",
    "may_be_injected",
    "render_event",
    "render_transcript",
    "sanitize",
    "strip",
    "strip_flag",
    "strip_injected_context_from_events",
    "strip_injected_context_indexed",
    "strip_rendered",
]

CONTEXT_OPEN: Final = "<azureal-session-context>"
CONTEXT_CLOSE: Final = "</azureal-session-context>"
AUTO_CONTINUE_OPEN: Final = "<azureal-internal-auto-continue>"
AUTO_CONTINUE_CLOSE: Final = "</azureal-internal-auto-continue>"
AUTO_CONTINUE_PROMPT: Final = (
    f"{AUTO_CONTINUE_OPEN}\n"
    "Continue the in-progress work from the supplied Azureal session context. Do not treat this as "
    "a new user request, do not change objectives, and keep following the user's latest instructions.\n"
    f"{AUTO_CONTINUE_CLOSE}"
)
HIDDEN_CODEX_PREFIX: Final = "# AGENTS.md instructions for "
_HIDDEN_CODEX_MARK: Final = "<INSTRUCTIONS>"
_SYSTEM_REMINDER: Final = "<system-reminder>"
_SUMMARY_HEAD: Final = "[Previous conversation summary]\n"
_SUMMARY_TAIL: Final = "\n\n[Conversation continues]\n\n"

#: Stored `char_len` since the latest compaction at which a session is compacted.
COMPACTION_THRESHOLD: Final = 400_000
#: Codex receives its prompt on stdin; past this many UTF-8 bytes the context is trimmed (§5.3).
CODEX_PROMPT_BUDGET: Final = 180_000
CODEX_TRIM_NOTICE: Final = (
    "\n[Azureal omitted older raw session context here to keep the Codex input under its prompt "
    "budget. Use the previous summary above and the recent context below.]\n\n"
)


@dataclass(frozen=True)
class ContextPayload:
    """What a new turn is told about the session: the latest compaction summary and the events since.

    `rendered`, when given, holds :func:`render_event` of each event (a caller that keeps them, such
    as the store, saves rendering the same events again for every turn), and is what is rendered:
    the store's context read from its rendered blocks gives only `rendered` (`events` empty), its
    blocks possibly joined already (as :func:`render_transcript` joins them).
    """

    compaction_summary: str | None
    events: Sequence[Event] = field(default_factory=list)
    rendered: Sequence[str | None] | None = field(default=None, compare=False, repr=False)


# -- detection and stripping (§4.4) -------------------------------------------------------------


def strip(content: str) -> str:
    """Remove an injected context wrapper, keeping what follows its first close tag.

    A close tag without an open tag still strips; an open tag without a close tag is a malformed
    wrapper and gives ``""``.

    >>> strip("<azureal-session-context>\\nx\\n</azureal-session-context>\\n\\nhello")
    'hello'
    """
    at = content.find(CONTEXT_CLOSE)
    if at >= 0:
        return content[at + len(CONTEXT_CLOSE) :].lstrip("\n")
    if CONTEXT_OPEN in content:
        return ""
    return content


def is_hidden_codex_context(content: str) -> bool:
    """Codex's injected AGENTS.md instructions, which are never a user prompt."""
    return trim_start(content).startswith(HIDDEN_CODEX_PREFIX) and _HIDDEN_CODEX_MARK in content


def is_auto_continue(content: str) -> bool:
    """The hidden prompt AZUREAL sends after a mid-turn compaction (§5.4)."""
    t = trim(content)
    return t.startswith(AUTO_CONTINUE_OPEN) and t.endswith(AUTO_CONTINUE_CLOSE)


def has_context_tag(content: str) -> bool:
    """Whether `content` holds either context tag (a wrapped or a malformed injected prompt)."""
    return CONTEXT_OPEN in content or CONTEXT_CLOSE in content


def cut_reminder(content: str) -> str:
    """Tool output without its `<system-reminder>` tail (everything from the first one on), trim_end'ed."""
    at = content.find(_SYSTEM_REMINDER)
    return trim_end(content if at < 0 else content[:at])


def sanitize(content: str) -> str | None:
    """The clean user prompt inside `content`, or None when nothing of it is the user's.

    >>> sanitize("plain"), sanitize(AUTO_CONTINUE_PROMPT)
    ('plain', None)
    """
    if is_hidden_codex_context(content):
        return None
    stripped = strip(content)
    if is_auto_continue(stripped):
        return None
    if stripped == "" and has_context_tag(content):
        return None
    return stripped


def may_be_injected(content: str) -> bool:
    """Whether a user message could be injected context (a wrapper, hidden Codex instructions):
    a quick test that says yes to every one :func:`strip_injected_context_indexed` acts on."""
    return CONTEXT_CLOSE in content or CONTEXT_OPEN in content or HIDDEN_CODEX_PREFIX in content


def strip_injected_context_indexed(events: Sequence[Event]) -> list[tuple[int, Event]]:
    """Run-level stripping (§4.4), keeping each surviving event's index in `events`.

    Plain user messages next to a tagged one are the split-up hidden context of the same prompt and
    are dropped with it; a malformed opener swallows user messages until a close tag or the next
    non-user event.
    """
    if not any(
        isinstance(event, UserMessage) and may_be_injected(event.content) for event in events
    ):  # nothing to strip (most pages and transcripts): every event stays
        return list(enumerate(events))
    out: list[tuple[int, Event]] = []
    pend: list[tuple[int, Event]] = []
    inside = False

    def push_clean(i: int, msg: str) -> None:
        clean = sanitize(msg)
        if clean is not None and not is_blank(clean):
            out.append((i, UserMessage(content=clean)))

    for i, event in enumerate(events):
        if isinstance(event, UserMessage):
            msg = event.content
            if is_hidden_codex_context(msg):
                continue
            if inside:
                if CONTEXT_CLOSE in msg:
                    inside = False
                    push_clean(i, msg)
            elif has_context_tag(msg):
                pend.clear()
                if CONTEXT_CLOSE in msg:
                    push_clean(i, msg)
                else:
                    inside = True
            else:
                pend.append((i, event))
            continue
        if inside:
            pend.clear()
            inside = False
        else:
            out.extend(pend)
            pend.clear()
        out.append((i, event))
    if not inside:
        out.extend(pend)
    return out


def strip_injected_context_from_events(events: Sequence[Event]) -> list[Event]:
    """Drop injected context and hidden prompts from a run of events (§4.4)."""
    return [e for _, e in strip_injected_context_indexed(events)]


#: :func:`strip_flag` values: not a user message; a user message that cannot be injected context; one
#: that may be (stripping must look at its run of user messages).
NOT_USER: Final = 0
USER: Final = 1
USER_MAY_BE_INJECTED: Final = 2


def strip_flag(event: Event) -> int:
    """How `event` takes part in :func:`strip_injected_context_indexed` (kept beside its rendered
    block, so that stripping a context read as blocks rarely needs the events)."""
    if not isinstance(event, UserMessage):
        return NOT_USER
    return USER_MAY_BE_INJECTED if may_be_injected(event.content) else USER


def strip_rendered(
    blocks: Sequence[tuple[int, int, str | None]], load: Callable[[int, int], Sequence[Event]]
) -> list[str | None]:
    """:func:`render_event` of each event :func:`strip_injected_context_indexed` keeps, from the
    stored events' `(seq, strip_flag, rendered block)` in order.

    Stripping acts within a run of user messages (a non-user event ends every state it keeps), and
    leaves a run in which no message may be injected as it is: only the runs that hold one are
    stripped again from their events, `load(first_seq, last_seq)`.

    >>> tagged = f"{CONTEXT_OPEN}\\nold\\n{CONTEXT_CLOSE}\\n\\nnew"
    >>> events = {1: UserMessage(content="a"), 3: UserMessage(content="b"), 4: UserMessage(content=tagged)}
    >>> rows = [(1, USER, "## User\\na\\n"), (2, NOT_USER, None), (3, USER, "## User\\nb\\n"),
    ...         (4, USER_MAY_BE_INJECTED, "## User\\n…\\n")]
    >>> strip_rendered(rows, lambda a, b: [events[s] for s in range(a, b + 1)])
    ['## User\\na\\n', None, '## User\\nnew\\n']
    """
    if not any(flag == USER_MAY_BE_INJECTED for _, flag, _ in blocks):
        return [block for _, _, block in blocks]
    out: list[str | None] = []
    i, n = 0, len(blocks)
    while i < n:
        if blocks[i][1] == NOT_USER:
            out.append(blocks[i][2])
            i += 1
            continue
        j = i
        while j < n and blocks[j][1] != NOT_USER:
            j += 1
        run = blocks[i:j]
        if any(flag == USER_MAY_BE_INJECTED for _, flag, _ in run):
            kept = strip_injected_context_indexed(load(run[0][0], run[-1][0]))
            out.extend(render_event(event) for _, event in kept)
        else:
            out.extend(block for _, _, block in run)
        i = j
    return out


# -- rendering (§5.2) -----------------------------------------------------------------------------


def _shorten_result(content: str) -> str:
    text = cut_reminder(content)
    lines = rust_lines(text)
    if len(lines) <= 6:
        return text
    return "\n".join(lines[:3]) + f"\n(+{len(lines) - 6} more lines)\n" + "\n".join(lines[-3:])


def render_event(event: Event) -> str | None:
    """One event's block of the transcript (without the blank line after it); None: not shown."""
    match event:
        case UserMessage(content=content):
            return f"## User\n{content}\n"
        case AssistantText(text=text):
            return f"## Assistant\n{text}\n"
        case ToolCall(tool_name=name, input=tool_input):
            param = context_param(name, tool_input)
            return f"## Tool: {name} ({param})\n" if param else f"## Tool: {name}\n"
        case ToolResult(tool_name=name, content=content, is_error=is_error):
            label = "Error" if is_error else "Result"
            return f"[{label}: {name}] {_shorten_result(content)}\n"
        case Plan(name=name, content=content):
            return f"## Plan: {name}\n{content}\n"
        case Command(name=name):
            return f"## Command: {name}\n"
        case Complete(duration_ms=ms, cost_usd=cost):
            return f"[Session complete: {ms / 1000:.1f}s, ${cost:.4f}]\n"
        case _:
            return None


def render_transcript(
    summary: str | None, events: Iterable[Event], rendered: Iterable[str | None] | None = None
) -> str:
    """The transcript text that goes inside the context wrapper, `trim_end`ed (§5.2).

    `rendered`: :func:`render_event` of each event, already known (then `events` is not read).
    """
    return "".join(_transcript_pieces(summary, map(render_event, events) if rendered is None else rendered))


def _transcript_pieces(summary: str | None, blocks: Iterable[str | None]) -> list[str]:
    """:func:`render_transcript`'s text in pieces, which joined are it: the summary's, then each
    block (but None) and a newline between two (each block is followed by a blank line: the last
    one's goes with `trim_end`, taken off the last pieces). A caller that wraps the transcript joins
    its own pieces with these, copying the text once."""
    pieces: list[str] = [] if summary is None else [_SUMMARY_HEAD, summary, _SUMMARY_TAIL]
    between = False
    for block in blocks:
        if block is None:
            continue
        if between:
            pieces.append("\n")
        pieces.append(block)
        between = True
    while pieces:  # trim_end of the whole: of its last piece, and of those before while one is blank
        last = trim_end(pieces[-1])
        if last:
            pieces[-1] = last
            break
        pieces.pop()
    return pieces


def build_context_prompt(payload: ContextPayload | None, prompt: str, *, codex: bool = False) -> str:
    """The prompt to send: the transcript wrapped in context tags, then the user's prompt.

    With nothing to render (no payload, or only Init/Hook/ModelSwitch events) the raw prompt is
    returned. With ``codex=True`` the result is fitted into :data:`CODEX_PROMPT_BUDGET` (§5.3).
    """
    if payload is None:
        return prompt
    rendered = payload.rendered
    blocks = map(render_event, payload.events) if rendered is None else rendered
    pieces = _transcript_pieces(payload.compaction_summary, blocks)
    if not pieces:
        return prompt
    full = "".join([f"{CONTEXT_OPEN}\n", *pieces, f"\n{CONTEXT_CLOSE}\n\n", prompt])  # one copy of it
    return fit_codex_budget(full) if codex else full


def fit_codex_budget(prompt: str, budget: int = CODEX_PROMPT_BUDGET) -> str:
    """Trim the oldest raw context so the prompt fits in `budget` UTF-8 bytes (§5.3).

    Keeps everything through the open tag, the summary block, a notice, the newest whole lines of
    the transcript that fit, and everything from the close tag on. Returns the prompt untrimmed when
    a tag is missing or the fixed parts alone do not fit.
    """
    data = prompt.encode()
    if len(data) <= budget:
        return prompt
    open_b, close_b = CONTEXT_OPEN.encode(), CONTEXT_CLOSE.encode()
    start = data.find(open_b)
    if start < 0:
        return prompt
    body_at = start + len(open_b)
    close_at = data.find(close_b, body_at)
    if close_at < 0:
        return prompt
    head, body, tail = data[:body_at], data[body_at:close_at], data[close_at:]
    marker = _SUMMARY_TAIL.encode()
    summary_end = body.find(marker)
    summary = b"" if summary_end < 0 else body[: summary_end + len(marker)]
    rest = body[len(summary) :]
    fixed = len(head) + len(summary) + len(CODEX_TRIM_NOTICE.encode()) + len(tail)
    room = budget - fixed
    if room < 0:
        return prompt
    recent = rest[len(rest) - room :] if room else b""
    if recent and len(recent) < len(rest) and rest[len(rest) - len(recent) - 1] != ord("\n"):
        newline = recent.find(b"\n")
        recent = b"" if newline < 0 else recent[newline + 1 :]
    return (head + summary + CODEX_TRIM_NOTICE.encode() + recent + tail).decode()


def auto_continue_prompt(payload: ContextPayload | None, *, codex: bool = False) -> str:
    """The hidden prompt that resumes a turn after a mid-turn compaction (§5.4)."""
    return build_context_prompt(payload, AUTO_CONTINUE_PROMPT, codex=codex)


#: How azsd's compaction prompt begins: an agent's history that holds it is a compaction's run.
COMPACTION_PROMPT_START: Final = "You are compacting the history of a coding-agent session"


def build_compaction_prompt(payload: ContextPayload) -> str:
    """The prompt that asks an agent to summarise `payload` for a compaction (§6)."""
    transcript = render_transcript(payload.compaction_summary, payload.events, payload.rendered)
    return (
        f"{COMPACTION_PROMPT_START} so that later turns can continue "
        "from a summary instead of the full transcript. Read the transcript below carefully; it may "
        "begin with the summary of an earlier compaction, which your summary must carry forward.\n\n"
        f"<transcript>\n{transcript}\n</transcript>\n\n"
        "Write a summary of 2000 to 4000 characters, in the third person, covering: the decisions "
        "made and why, the files created or changed, the important context and constraints, the "
        "current state of the work, and the next steps. Output ONLY the summary text."
    )
