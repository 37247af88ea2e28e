"""What the web view's pages show, from protocol values: pure functions, no I/O.

- :func:`transcript`: a page of stored events as the items of a transcript, each tool call folded
  with its result, compaction boundaries and failed turns marked, and events this client cannot
  read shown by their kind rather than dropped.
- :func:`session_rows` / :func:`filter_sessions`: the sessions table: which sessions a filter keeps,
  in the order of their latest activity, with their badge, context meter and cost.
- :func:`clean`: agent text made safe to show (control characters, ANSI escapes and bidi overrides
  shown as visible symbols); the templates' autoescaping does the HTML.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final
from urllib.parse import urlencode

from azsd.events import (
    REASONING_HOOKS,
    AssistantText,
    EventDecodeError,
    Hook,
    ToolCall,
    ToolResult,
    decode_event,
)
from azsd.export import EventView, css_class, event_view
from azsd.ipc.protocol import SessionView, WireEvent
from azsd.model import StoredEvent
from azsd_client.render import full as full_rows
from azsd_client.render.events import FOLD_CHARS as SHOW_FOLD_CHARS
from azsd_client.render.sessions import by_latest, usage_summary
from azsd_client.render.text import format_cost, format_duration, format_time
from azsd_client.render.turns import ERROR_PREFIX

__all__ = [
    "FOLD_CHARS",
    "Filters",
    "Item",
    "Row",
    "clean",
    "filter_sessions",
    "session_rows",
    "transcript",
]

#: Compaction markers of the event stream (the agent's own compaction, and AZUREAL's).
_BOUNDARIES: Final = frozenset({"Compacting", "Compacted", "MayBeCompacting"})
#: C0 and C1 controls but tab and newline, and the bidi controls that reorder what is shown.
_CONTROLS: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_BADGES: Final = {"succeeded": "✓", "failed": "✗", "running": "●", "ended": "○", "new": "new"}


def _picture(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␀ for NUL…
    return "␡" if code == 0x7F else f"\\u{code:04x}"


def clean(text: str) -> str:
    """`text` with every control character shown as a visible symbol (``ESC`` is ``␛``), so that an
    ANSI escape or a bidi override written by an agent is seen, not obeyed.

    >>> clean("\\x1b[31mred\\x1b[0m \\u202eevil")
    '␛[31mred␛[0m \\\\u202eevil'
    """
    return _CONTROLS.sub(_picture, text)


@dataclass
class Item:
    """One entry of a transcript: an event (a tool call with its result folded in), or one this client
    cannot read (`view` None, `kind` and `raw` as stored)."""

    seq: int
    kind: str
    css: str
    view: EventView | None
    raw: str = ""
    result: EventView | None = None
    result_seq: int | None = None
    tool_use_id: str = ""
    boundary: bool = False
    failed: bool = False
    flags: tuple[str, ...] = field(default_factory=tuple)
    #: How many characters the event (its result too, for a call) shows in all when it was cut to
    #: :data:`FOLD_CHARS` (0: shown whole), and where the whole of it is.
    folded: int = 0
    href: str = ""
    #: Of the full record: what a tool call did as rows (a diff, a new file, a todo list: see
    #: :func:`azsd_client.render.full.body`), when its line was written, an answer as HTML rendered from
    #: its Markdown, the sub-agent's items nested under the Task call that began them, and whether it
    #: is a model's thinking (shown folded).
    rows: list[tuple[str, list[tuple[str, bool]]]] = field(default_factory=list)
    at: str = ""
    html: str = ""
    children: list[Item] = field(default_factory=list)
    thinking: bool = False


#: The most characters of one event a page shows, as `azs show` prints (an agent's 10 MB line made a
#: 26 MB page that took a browser a minute); the rest is a link away.
FOLD_CHARS: Final = SHOW_FOLD_CHARS


def _fold(view: EventView) -> int:
    """Cut `view`'s text and blocks to :data:`FOLD_CHARS` in all; how many it held when it was cut
    (0: it was not)."""
    total = len(view.text or "") + sum(len(text) for _, text in view.blocks)
    if total <= FOLD_CHARS:
        return 0
    room = FOLD_CHARS
    if view.text is not None:
        view.text, room = view.text[:room], max(0, room - len(view.text))
    blocks = []
    for lang, text in view.blocks:
        blocks.append((lang, text[:room] + ("\n…" if len(text) > room else "")))
        room = max(0, room - len(text))
    view.blocks = blocks
    return total


def _item(wire: WireEvent, where: tuple[str, int] | None = None) -> tuple[Item, ToolCall | ToolResult | None]:
    try:
        event = decode_event(wire.data)
    except EventDecodeError:
        raw = wire.data if len(wire.data) <= FOLD_CHARS else wire.data[:FOLD_CHARS] + "…"
        return Item(wire.seq, wire.kind, "unknown", None, raw=raw, failed="Fail" in wire.kind), None
    view = event_view(StoredEvent(wire.seq, event))
    folded = _fold(view)
    html = ""
    if isinstance(event, AssistantText) and event.text.startswith(ERROR_PREFIX):
        # how a turn failed, stored where it failed (by `azs run`, or AZUREAL for a Codex turn)
        view.heading, view.flags = "✗ Error", ("failed",)
    elif isinstance(event, AssistantText) and not folded:
        html = markdown_html(clean(event.text))
    item = Item(
        wire.seq,
        view.kind,
        css_class(view.kind),
        view,
        boundary=view.kind in _BOUNDARIES,
        failed="failed" in view.flags or "error" in view.flags,
        flags=view.flags,
        folded=folded,
        href=_whole(where, wire.seq) if folded else "",
        html=html,
    )
    if isinstance(event, ToolCall | ToolResult):
        item.tool_use_id = event.tool_use_id
        return item, event
    return item, None


def _whole(where: tuple[str, int] | None, seq: int) -> str:
    """The link to the whole of a folded event of the session `where` (root, id)."""
    if where is None:
        return ""
    return "/session/event?" + urlencode({"root": where[0], "id": where[1], "seq": seq})


def transcript(
    events: Iterable[WireEvent], where: tuple[str, int] | None = None, *, full: bool = False
) -> list[Item]:
    """`events` (one page, in seq order) as transcript items: each tool result folded into the call it
    answers when that call is on the page (else shown alone, as a call whose result is yet to come is);
    `where` (root, session id) gives a long event the link to the whole of it. With `full` (events of
    the full record), each item also gets its rows, time and rendered Markdown, and a sub-agent's
    items go under the Task call that began them."""
    items: list[Item] = []
    calls: dict[str, Item] = {}
    tasks: dict[str, Item] = {}
    for wire in events:
        item, event = _item(wire, None if full else where)
        if full:
            _fill(item, wire)
            if isinstance(event, ToolCall):
                tasks[event.tool_use_id] = item
            lane = wire.subagent if isinstance(wire.subagent, str) else ""
            if lane and lane in tasks and not isinstance(event, ToolResult):
                tasks[lane].children.append(item)
                if isinstance(event, ToolCall):
                    calls[event.tool_use_id] = item
                continue
        if isinstance(event, ToolResult):
            call = calls.pop(event.tool_use_id, None)
            if call is not None and call.result is None:
                call.result, call.result_seq, call.failed = item.view, item.seq, item.failed
                if item.folded:
                    call.folded, call.href = item.folded, item.href
                continue
        elif isinstance(event, ToolCall):
            calls[event.tool_use_id] = item
        lane = wire.subagent if full and isinstance(wire.subagent, str) else ""
        if lane and lane in tasks:
            tasks[lane].children.append(item)  # (a sub-agent's result that answers no call on the page)
            continue
        items.append(item)
    return items


def _fill(item: Item, wire: WireEvent) -> None:
    """What an item of the full record shows beyond a compact event's view."""
    item.at = wire.at if isinstance(wire.at, str) else ""
    try:
        event = decode_event(wire.data)
    except EventDecodeError:
        return
    if isinstance(event, ToolCall):
        rows = full_rows.body(event)
        within = full_rows.changed_within(rows)
        item.rows = [
            (_ROW_CLASS[kind], _pieces(text, within.get(i, []))) for i, (kind, text) in enumerate(rows)
        ]
    elif isinstance(event, Hook) and event.name in REASONING_HOOKS:
        item.thinking = True


def _pieces(text: str, spans: list[tuple[int, int]]) -> list[tuple[str, bool]]:
    """`text` cut at `spans`: each piece, and whether it is one the edit changed."""
    pieces: list[tuple[str, bool]] = []
    at = 0
    for start, end in spans:
        if start > at:
            pieces.append((text[at:start], False))
        pieces.append((text[start:end], True))
        at = end
    if at < len(text) or not pieces:
        pieces.append((text[at:], False))
    return pieces


#: The CSS class of each kind of row of a tool call (:func:`azsd_client.render.full.body`).
_ROW_CLASS: Final = {"+": "add", "-": "del", " ": "ctx", "@": "hunk", "☑": "done", "☐": "todo", "=": "text"}


@functools.cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    # CommonMark with tables and strikethrough; raw HTML in the text is escaped, not passed through
    # (`html` off), and links to javascript:, vbscript:, file: and data: (but images) are refused.
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])


def markdown_html(text: str) -> str:
    """An agent's answer as HTML from its Markdown: headings, lists, code, tables, links; any HTML it
    wrote is shown as text (the Content-Security-Policy would refuse its scripts anyway).

    >>> markdown_html("**bold** <script>x</script>").strip()
    '<p><strong>bold</strong> &lt;script&gt;x&lt;/script&gt;</p>'
    """
    return str(_markdown().render(text))


@dataclass(frozen=True)
class Filters:
    """What the sessions page keeps: a worktree (branch label), a state, an agent (``claude``,
    ``codex``, ``aider``, ``opencode``), and text found in the name, id or label; empty keeps everything."""

    worktree: str = ""
    state: str = ""
    agent: str = ""
    text: str = ""

    def keeps(self, root: str, view: SessionView, agents: frozenset[str]) -> bool:
        if self.worktree and view.worktree != self.worktree:
            return False
        if self.state and view.state != self.state:
            return False
        if self.agent and self.agent not in agents:
            return False
        if self.text:
            needle = self.text.casefold()
            haystack = f"S{view.id} {view.name} {view.display_name} {view.worktree} {root}".casefold()
            return needle in haystack
        return True


@dataclass(frozen=True)
class Row:
    """One row of the sessions table."""

    root: str
    view: SessionView
    badge: str
    cost: str
    took: str
    tokens: str
    agents: str
    meter: int | None
    threshold: int
    #: When it was last active (its latest turn's real time, from the agent's lines; else when it was
    #: made), for people, and as stored (UTC).
    active: str = ""
    when: str = ""


def agent_of(model: str) -> str:
    """The agent a model name belongs to: ``claude``, ``codex`` (OpenAI models), or "" when unknown
    (a session imported from Aider or OpenCode is known by its import instead: they run any model).

    >>> agent_of("claude-sonnet-4-5"), agent_of("gpt-5-codex"), agent_of("")
    ('claude', 'codex', '')
    """
    name = model.rsplit("/", 1)[-1].lower()
    if name.startswith("claude"):
        return "claude"
    if name.startswith(("gpt", "o1", "o3", "o4", "codex")):
        return "codex"
    return ""


def filter_sessions(
    listed: Sequence[tuple[str, Sequence[SessionView]]],
    filters: Filters,
    agents: dict[tuple[str, int], frozenset[str]],
) -> list[tuple[str, SessionView]]:
    """The sessions of each store (`listed`: root and its sessions, latest activity first) that
    `filters` keeps, every store's in `azs ls`'s order, stores in the order given."""
    kept: list[tuple[str, SessionView]] = []
    if filters == Filters():
        return [(root, view) for root, views in listed for view in by_latest(views)]
    for root, views in listed:
        for view in by_latest(views):
            if filters.keeps(root, view, agents.get((root, view.id), frozenset())):
                kept.append((root, view))
    return kept


def session_rows(
    sessions: Sequence[tuple[str, SessionView]],
    agents: dict[tuple[str, int], frozenset[str]],
    threshold: int,
    now: datetime | None = None,
) -> list[Row]:
    """The table rows of `sessions` (their times relative to `now`, else the time now)."""
    rows = []
    for root, v in sessions:
        cost = v.cost_usd if v.cost_usd else v.usage.cost_usd if v.usage else None
        when = v.last_activity or v.created
        rows.append(
            Row(
                root=root,
                view=v,
                badge=_BADGES.get(v.state, "?"),
                cost=format_cost(cost, v.cost_source, v.usage.unpriced_tokens if v.usage else 0),
                took=format_duration(v.duration_ms),
                tokens=usage_summary(v.usage),
                agents=", ".join(sorted(agents.get((root, v.id), ()))),
                meter=v.context_chars,
                threshold=threshold,
                active=format_time(when, now),
                when=f"{when} UTC" + ("" if v.last_activity else " (made; no turn's time is known)"),
            )
        )
    return rows
