"""A session rendered for people and for tools: Markdown, JSON Lines or one HTML page.

An export is made page by page (the daemon sends a session's events in pages): concatenating
``render_page(fmt, session, page, first=…, last=…)`` over the pages, ``first`` on the first and
``last`` on the last (both on a single page, which may hold no events at all), gives one
well-formed document, the same one whatever the page size.

- ``md``: a transcript to read. The first page has a title and a line of metadata; each event
  then starts with a line ending in ``· seq N`` (``## You · seq 3``), the number ``azs show``
  knows it by. Prompts and answers are as written; tool input and output sit in fenced blocks
  whose fence is longer than any run of backticks inside, so no content can close them.
- ``jsonl``: one line per event, ``{"seq":N,"kind":"UserMessage","event":{…}}``, where the event
  is its exact stored serde JSON (:func:`azsd.events.encode_event`). No header or footer lines.
- ``html``: one self-contained HTML5 page (inline CSS, light and dark, no script, nothing
  fetched), every piece of content escaped; the first page writes the head, the last the
  closing tags.

>>> from azsd.events import UserMessage
>>> info = SessionInfo(id=3, name="demo", worktree="/w", created="2025-01-02T03:04:05Z",
...     event_count=1, message_count=1, completed=None, duration_ms=None, cost_usd=None)
>>> print(render("md", info, [StoredEvent(1, UserMessage(content="hi"))]), end="")
# S3 — demo
<BLANKLINE>
`/w` · created 2025-01-02T03:04:05Z · ended · 1 event
<BLANKLINE>
## You · seq 1
<BLANKLINE>
hi
>>> render("jsonl", info, [StoredEvent(1, UserMessage(content="hi"))])
'{"seq":1,"kind":"UserMessage","event":{"UserMessage":{"content":"hi"}}}\\n'
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import msgspec

from azsd.errors import BadRequestError
from azsd.events import (
    AssistantText,
    Command,
    Complete,
    Event,
    Hook,
    Init,
    ModelSwitch,
    Plan,
    ToolCall,
    ToolResult,
    UserMessage,
    encode_event,
    event_kind,
)
from azsd.model import SessionInfo, StoredEvent
from azsd.tools import display_key

__all__ = ["FORMATS", "EventView", "Segment", "css_class", "event_view", "render", "render_page"]

#: The export formats, by the name the CLI and the protocol use.
FORMATS: Final = ("md", "jsonl", "html")

#: A tool call's main parameter is shown on its line up to this many characters.
_PARAM_MAX: Final = 200
#: A short scalar of a tool call's input is shown on its line; longer ones go in a block.
_EXTRA_MAX: Final = 60
#: HTML folds blocks of more lines than this into a <details>.
_FOLD_LINES: Final = 40

# -- a format-neutral view of an event ------------------------------------------------------------

#: A piece of a line: plain text, code, strong or emphasised.
Style = Literal["", "code", "b", "i"]
Segment = tuple[Style, str]


@dataclass
class EventView:
    """How an event is shown: a heading with free text, or a compact line, then code blocks."""

    kind: str
    seq: int
    heading: str | None = None
    text: str | None = None
    line: list[Segment] = field(default_factory=list)
    blocks: list[tuple[str, str]] = field(default_factory=list)
    flags: tuple[str, ...] = ()


_BLOCK_LANG: Final[dict[str, str]] = {"command": "sh", "cmd": "sh", "plan": "markdown"}


def _one_line(text: str, limit: int) -> str:
    """The first line of `text`, cut to `limit` characters; `…` marks anything left out."""
    first = text.split("\n", 1)[0].rstrip("\r")
    if len(first) > limit:
        return first[: limit - 1] + "…"
    return first + "…" if first != text.rstrip("\n") else first


def _json(value: Any) -> str:
    return msgspec.json.format(msgspec.json.encode(value), indent=2).decode()


def _is_short(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= _EXTRA_MAX and "\n" not in value
    return value is None or isinstance(value, bool | int | float)


def _call_view(view: EventView, call: ToolCall) -> None:
    """A tool call: its name, main parameter and description on the line, the rest in blocks."""
    view.line.append(("b", call.tool_name))
    tool_input = call.input
    if isinstance(tool_input, dict):
        _input_view(view, call.tool_name, dict(tool_input))
    elif isinstance(tool_input, str):
        _main_param(view, tool_input, "")
    elif tool_input is not None:
        view.blocks.append(("json", _json(tool_input)))


def _main_param(view: EventView, value: str, lang: str) -> None:
    """A main parameter: its first line on the line, all of it in a block when that is not all."""
    if value:
        view.line += [("", " "), ("code", _one_line(value, _PARAM_MAX))]
    if "\n" in value.rstrip("\n") or len(value) > _PARAM_MAX:
        view.blocks.append((lang, value))


def _input_view(view: EventView, tool_name: str, rest: dict[str, Any]) -> None:
    """A tool call's JSON object input (`rest` is a copy that is consumed)."""
    key = display_key(tool_name, rest)
    if key is not None:
        _main_param(view, rest.pop(key), _BLOCK_LANG.get(key, ""))
    note = rest.get("description")
    if isinstance(note, str) and note and _is_short(note):
        del rest["description"]
        view.line.append(("", " — " + note))
    old, new = rest.get("old_string"), rest.get("new_string")
    if isinstance(old, str) and isinstance(new, str):
        del rest["old_string"], rest["new_string"]
        diff = [f"-{line}" for line in old.split("\n")] + [f"+{line}" for line in new.split("\n")]
        view.blocks.append(("diff", "\n".join(diff)))
    content = rest.get("content")
    if isinstance(content, str):
        del rest["content"]
        view.blocks.append(("", content))
    if rest and all(_is_short(v) for v in rest.values()):
        for k, v in rest.items():
            shown = v if isinstance(v, str) else msgspec.json.encode(v).decode()
            view.line += [("", f" · {k} "), ("code", shown)]
    elif rest:
        view.blocks.append(("json", _json(rest)))


_UNIT_LINES: Final[dict[str, str]] = {
    "Compacting": "Compacting the context…",
    "Compacted": "Context compacted",
    "MayBeCompacting": "Maybe compacting…",
    "Filtered": "Filtered",
}


def _duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def event_view(stored: StoredEvent) -> EventView:
    """How `stored` is shown, whatever the format (the export's, and the web view's transcript)."""
    event: Event = stored.event
    view = EventView(kind=event_kind(event), seq=stored.seq)
    match event:
        case UserMessage(content=content):
            view.heading, view.text = "You", content
        case AssistantText(text=text):
            view.heading, view.text = "Assistant", text
        case Plan(name=name, content=content):
            view.heading, view.text = f"Plan: {name}" if name else "Plan", content
        case ToolCall():
            _call_view(view, event)
        case ToolResult(tool_name=name, content=content, is_error=is_error):
            view.line = [("b", name), ("", " ✗ error" if is_error else " output")]
            view.blocks.append(("", content if content else "(no output)"))
            view.flags = ("error",) if is_error else ()
        case Complete(success=success, duration_ms=ms, cost_usd=cost):
            label = "✓ Turn complete" if success else "✗ Turn failed"
            view.line = [("b", label), ("", f" · {_duration(ms)} · ${cost:.4f}")]
            view.flags = ("ok",) if success else ("failed",)
        case Command(name=name):
            view.line = [("b", "Command"), ("", " "), ("code", name)]
        case Hook(name=name, output=output):
            view.line = [("b", "Hook"), ("", " "), ("code", name)]
            if output:
                view.blocks.append(("", output))
        case Init(cwd=cwd, model=model):
            view.line = [
                ("i", "Session start in"),
                ("", " "),
                ("code", cwd),
                ("", " · model "),
                ("code", model),
            ]
        case ModelSwitch(model=model):
            view.line = [("i", "Model switched to"), ("", " "), ("code", model)]
        case _:  # the unit variants
            view.line = [("i", _UNIT_LINES.get(view.kind, view.kind))]
    return view


def _meta(session: SessionInfo) -> list[Segment]:
    """The metadata line under the title."""
    out: list[Segment] = [("code", session.worktree), ("", f" · created {session.created} · {session.state}")]
    count = session.event_count
    out.append(("", f" · {count} event" + ("" if count == 1 else "s")))
    if session.duration_ms is not None:
        out.append(("", f" · {_duration(session.duration_ms)}"))
    if session.cost_usd is not None:
        out.append(("", f" · ${session.cost_usd:.4f}"))
    if session.parent is not None:
        fork = f" · forked from S{session.parent}"
        out.append(("", fork if session.fork_seq is None else f"{fork} at seq {session.fork_seq}"))
    if session.archived:
        out.append(("", " · archived"))
    return out


def _title(session: SessionInfo) -> str:
    return f"S{session.id} — {session.name}" if session.name else f"S{session.id}"


# -- Markdown --------------------------------------------------------------------------------------

_MD_SPECIAL: Final = re.compile(r"([\\`*_\[\]<>|~#])")
_FENCE_LINE: Final = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")


def _md_escape(text: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", text.replace("\n", " "))


def _md_code(text: str) -> str:
    """An inline code span that holds `text` whatever backticks it has."""
    text = text.replace("\n", " ")
    if not text:
        return "` `"
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" or (text[0] == " " and text[-1] == " ") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _md_fence(text: str, lang: str = "") -> str:
    """A fenced block whose fence no line of `text` can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{lang}\n{body}{fence}\n"


def _md_close_fences(text: str) -> str:
    """`text` with a fence it leaves open closed, so it cannot swallow what follows it."""
    opened: str | None = None
    for line in text.split("\n"):
        m = _FENCE_LINE.match(line)
        if m is None:
            continue
        run, rest = m.groups()
        if opened is None:
            if not (run[0] == "`" and "`" in rest):
                opened = run
        elif run[0] == opened[0] and len(run) >= len(opened) and not rest.strip():
            opened = None
    return text if opened is None else f"{text}\n{opened}"


_MD_STYLE: Final[dict[str, Callable[[str], str]]] = {
    "": _md_escape,
    "code": _md_code,
    "b": lambda s: f"**{_md_escape(s)}**",
    "i": lambda s: f"*{_md_escape(s)}*",
}


def _md_line(segments: list[Segment]) -> str:
    return "".join(_MD_STYLE[style](text) for style, text in segments)


def _md_event(view: EventView) -> str:
    if view.heading is not None:
        text = (view.text or "").rstrip("\n")
        body = _md_close_fences(text) if text.strip() else "*(empty)*"
        out = f"\n## {_md_escape(view.heading)} · seq {view.seq}\n\n{body}\n"
    else:
        out = f"\n{_md_line(view.line)} · seq {view.seq}\n"
    for lang, text in view.blocks:
        out += "\n" + _md_fence(text, lang)
    return out


def _md_page(session: SessionInfo, events: Sequence[StoredEvent], first: bool) -> str:
    parts = [f"# {_md_escape(_title(session))}\n\n{_md_line(_meta(session))}\n"] if first else []
    parts += [_md_event(event_view(stored)) for stored in events]
    return "".join(parts)


# -- JSON Lines ------------------------------------------------------------------------------------


def _jsonl_page(events: Sequence[StoredEvent]) -> str:
    lines = [
        b'{"seq":%d,"kind":"%s","event":%s}\n' % (s.seq, event_kind(s.event).encode(), encode_event(s.event))
        for s in events
    ]
    return b"".join(lines).decode()


# -- HTML ------------------------------------------------------------------------------------------

_CSS: Final = """\
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--code:#f6f8fa;
--you:#ddf4ff;--bad:#cf222e;--good:#1a7f37;--tool:#8250df}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#8d96a0;--line:#30363d;
--code:#161b22;--you:#0c2d48;--bad:#f85149;--good:#3fb950;--tool:#d2a8ff}}
body{margin:0 auto;max-width:62rem;padding:1rem 1.5rem 3rem;background:var(--bg);color:var(--fg);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
h1{font-size:1.5rem;margin:.5rem 0}h2{font-size:1.05rem;margin:0 0 .4rem}
.meta,.seq{color:var(--muted)}.seq{font-size:.8rem;font-weight:normal;text-decoration:none}
.event{margin:.6rem 0}section.event{padding:.6rem .9rem;border:1px solid var(--line);border-radius:6px}
.user-message{background:var(--you)}.plan{border-style:dashed}
.text{white-space:pre-wrap;overflow-wrap:anywhere}
.line{margin:.2rem 0}.tool-call .line strong{color:var(--tool)}
code,pre{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
code{background:var(--code);padding:0 .25em;border-radius:4px}
pre{background:var(--code);border:1px solid var(--line);border-radius:6px;padding:.5rem .75rem;margin:.3rem 0;
overflow-x:auto;max-height:40rem}pre code{padding:0;background:none}
.error pre,.failed{color:var(--bad)}.error .line,.failed .line{color:var(--bad)}.ok .line{color:var(--good)}
.init,.model-switch,.compacting,.compacted,.may-be-compacting,.filtered{color:var(--muted)}
details summary{cursor:pointer;color:var(--muted)}
"""

_HTML_STYLE: Final[dict[str, Callable[[str], str]]] = {
    "": html.escape,
    "code": lambda s: f"<code>{html.escape(s)}</code>",
    "b": lambda s: f"<strong>{html.escape(s)}</strong>",
    "i": lambda s: f"<em>{html.escape(s)}</em>",
}


def _html_line(segments: list[Segment]) -> str:
    return "".join(_HTML_STYLE[style](text) for style, text in segments)


def css_class(kind: str) -> str:
    """An event kind as an HTML class: ``ToolCall`` is ``tool-call``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", kind).lower()


def _html_block(lang: str, text: str) -> str:
    cls = f' class="lang-{html.escape(lang)}"' if lang else ""
    pre = f"<pre{cls}><code>{html.escape(text)}</code></pre>\n"
    lines = text.count("\n") + 1
    if lines <= _FOLD_LINES:
        return pre
    return f"<details><summary>{lines} lines</summary>\n{pre}</details>\n"


def _html_event(view: EventView) -> str:
    classes = " ".join(("event", css_class(view.kind), *view.flags))
    anchor = f'<a class="seq" href="#seq-{view.seq}">seq {view.seq}</a>'
    if view.heading is not None:
        tag = "section"
        inner = (
            f"<h2>{html.escape(view.heading)} {anchor}</h2>\n"
            f'<div class="text">{html.escape((view.text or "").rstrip(chr(10)))}</div>\n'
        )
    else:
        tag = "div"
        inner = f'<p class="line">{_html_line(view.line)} {anchor}</p>\n'
    inner += "".join(_html_block(lang, text) for lang, text in view.blocks)
    return f'<{tag} class="{classes}" id="seq-{view.seq}">\n{inner}</{tag}>\n'


def _html_page(session: SessionInfo, events: Sequence[StoredEvent], first: bool, last: bool) -> str:
    parts: list[str] = []
    if first:
        title = html.escape(_title(session))
        parts.append(
            "<!doctype html>\n"
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<meta name="generator" content="azsd">\n'
            f"<title>{title}</title>\n<style>\n{_CSS}</style>\n</head>\n<body>\n"
            f'<header>\n<h1>{title}</h1>\n<p class="meta">{_html_line(_meta(session))}</p>\n</header>\n'
            "<main>\n"
        )
    parts += [_html_event(event_view(stored)) for stored in events]
    if last:
        parts.append("</main>\n</body>\n</html>\n")
    return "".join(parts)


# -- public ----------------------------------------------------------------------------------------


def render_page(
    fmt: str, session: SessionInfo, events: Sequence[StoredEvent], *, first: bool, last: bool
) -> str:
    """One page of the export of `session` in the format `fmt` (one of :data:`FORMATS`).

    Args:
        fmt: ``"md"``, ``"jsonl"`` or ``"html"``.
        session: the session exported (its title and metadata go on the first page).
        events: this page's events, in seq order; may be empty.
        first: this is the first page (it carries the document's head).
        last: this is the last page (it carries the document's end).

    Raises:
        ValueError: `fmt` is not a known format.

    >>> info = SessionInfo(id=1, name="", worktree="/w", created="2025-01-01T00:00:00Z",
    ...     event_count=0, message_count=0, completed=None, duration_ms=None, cost_usd=None)
    >>> render_page("html", info, [], first=True, last=True).endswith("</html>\\n")
    True
    """
    if fmt == "md":
        return _md_page(session, events, first)
    if fmt == "jsonl":
        return _jsonl_page(events)
    if fmt == "html":
        return _html_page(session, events, first, last)
    raise BadRequestError(f"unknown export format {fmt!r} (known: {', '.join(FORMATS)})")


def render(fmt: str, session: SessionInfo, events: Sequence[StoredEvent]) -> str:
    """The whole export of `session` as one page (see :func:`render_page`)."""
    return render_page(fmt, session, events, first=True, last=True)
