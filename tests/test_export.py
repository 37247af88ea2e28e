"""Session export: Markdown structure, exact JSONL, a balanced and escaped HTML page, and paging.

Every format is checked on a hand-built session and on every file of ../shared/corpus.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from azsd.events import (
    AssistantText,
    Command,
    Compacted,
    Compacting,
    Complete,
    Event,
    Filtered,
    Hook,
    Init,
    MayBeCompacting,
    ModelSwitch,
    Plan,
    ToolCall,
    ToolResult,
    UserMessage,
    decode_event,
    encode_event,
    event_kind,
)
from azsd.export import FORMATS, render, render_page
from azsd.ingest.file import parse_file
from azsd.ipc import protocol as p
from azsd.model import SessionInfo, StoredEvent
from azsd.server.handlers import handle
from azsd.store import Store
from tests.conftest import corpus_files, requires_corpus


def session(**changes: Any) -> SessionInfo:
    fields: dict[str, Any] = {
        "id": 12,
        "name": "fix parser",
        "worktree": "/home/me/proj",
        "created": "2025-05-06T07:08:09Z",
        "event_count": 0,
        "message_count": 0,
        "completed": None,
        "duration_ms": None,
        "cost_usd": None,
    }
    fields.update(changes)
    return SessionInfo(**fields)


def numbered(events: Sequence[Event], start: int = 1) -> list[StoredEvent]:
    return [StoredEvent(start + i, e) for i, e in enumerate(events)]


EVENTS: list[Event] = [
    Init(cwd="/home/me/proj", model="claude-sonnet-4"),
    UserMessage(content="The parser panics on empty input. Fix it and add a test."),
    AssistantText(text="Let me look at the parser first."),
    ToolCall(
        tool_use_id="t1",
        tool_name="Bash",
        input={"command": "grep -n 'fn parse' src/parser.rs", "description": "Find the parser"},
    ),
    ToolResult(
        tool_use_id="t1", tool_name="Bash", content="12:pub fn parse(input: &str) -> Ast {", is_error=False
    ),
    ToolCall(
        tool_use_id="t2",
        tool_name="Edit",
        file_path="src/parser.rs",
        input={
            "file_path": "src/parser.rs",
            "old_string": "let first = input[0];",
            "new_string": "let first = input.first()?;",
        },
    ),
    ToolResult(tool_use_id="t2", tool_name="Edit", content="String not found in file", is_error=True),
    Plan(name="fix", content="1. Guard against empty input\n2. Add a regression test"),
    Command(name="/compact"),
    Compacting(),
    Compacted(),
    ModelSwitch(model="claude-opus-4"),
    Hook(name="PostToolUse", output="formatted 1 file"),
    Complete(success=True, duration_ms=83_400, cost_usd=0.1234),
]

EXPECTED_MD = """\
# S12 — fix parser

`/home/me/proj` · created 2025-05-06T07:08:09Z · succeeded · 14 events · 1 min 23 s · $0.1234

*Session start in* `/home/me/proj` · model `claude-sonnet-4` · seq 1

## You · seq 2

The parser panics on empty input. Fix it and add a test.

## Assistant · seq 3

Let me look at the parser first.

**Bash** `grep -n 'fn parse' src/parser.rs` — Find the parser · seq 4

**Bash** output · seq 5

```
12:pub fn parse(input: &str) -> Ast {
```

**Edit** `src/parser.rs` · seq 6

```diff
-let first = input[0];
+let first = input.first()?;
```

**Edit** ✗ error · seq 7

```
String not found in file
```

## Plan: fix · seq 8

1. Guard against empty input
2. Add a regression test

**Command** `/compact` · seq 9

*Compacting the context…* · seq 10

*Context compacted* · seq 11

*Model switched to* `claude-opus-4` · seq 12

**Hook** `PostToolUse` · seq 13

```
formatted 1 file
```

**✓ Turn complete** · 1 min 23 s · $0.1234 · seq 14
"""

INFO = session(event_count=14, message_count=2, completed=True, duration_ms=83_400, cost_usd=0.1234)


# -- helpers: independent readers of the three formats ---------------------------------------------

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")


def md_outside_fences(text: str) -> list[str]:
    """The lines of a Markdown document that are outside fenced code blocks (CommonMark rules);
    fails when a fence is left open."""
    outside: list[str] = []
    opened: str | None = None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if opened is None:
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                opened = m.group(1)
            else:
                outside.append(line)
        elif m and m.group(1)[0] == opened[0] and len(m.group(1)) >= len(opened) and not m.group(2).strip():
            opened = None
    assert opened is None, "a fenced block is left open"
    return outside


def md_seqs(text: str) -> list[int]:
    """The seq of each event marker line outside the fenced blocks."""
    return [int(m.group(1)) for line in md_outside_fences(text) if (m := re.search(r" · seq (\d+)$", line))]


class TagChecker(HTMLParser):
    """Checks that start and end tags nest properly and records every tag seen."""

    VOID = frozenset({"meta", "br", "hr", "img", "link", "input", "wbr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: set[str] = set()
        self.doctype = ""
        self.ids: list[str] = []
        self.text: list[str] = []

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.ids += [v for k, v in attrs if k == "id" and v]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack, f"</{tag}> closes nothing"
        assert self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1]}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def check_html(page: str) -> TagChecker:
    checker = TagChecker()
    checker.feed(page)
    checker.close()
    assert checker.doctype.lower() == "doctype html"
    assert checker.stack == [], f"unclosed: {checker.stack}"
    assert "script" not in checker.tags
    return checker


def check_jsonl(text: str, events: Sequence[StoredEvent]) -> None:
    assert text.endswith("\n") or not events
    lines = text.split("\n")
    assert lines.pop() == ""
    assert len(lines) == len(events)
    for line, stored in zip(lines, events, strict=True):
        obj = json.loads(line)
        assert list(obj) == ["seq", "kind", "event"]
        assert obj["seq"] == stored.seq
        assert obj["kind"] == event_kind(stored.event)
        assert decode_event(json.dumps(obj["event"])) == stored.event
        expected = b'{"seq":%d,"kind":"%s","event":' % (stored.seq, obj["kind"].encode())
        assert line.encode() == expected + encode_event(stored.event) + b"}"


def paged(
    fmt: str, info: SessionInfo, events: Sequence[StoredEvent], size: int, *, empty_tail: bool = False
) -> str:
    """The export made page by page, `size` events a page (and an empty last page when asked)."""
    pages = [events[i : i + size] for i in range(0, len(events), size)] or [[]]
    if empty_tail:
        pages.append([])
    return "".join(
        render_page(fmt, info, page, first=i == 0, last=i == len(pages) - 1) for i, page in enumerate(pages)
    )


# -- Markdown --------------------------------------------------------------------------------------


def test_markdown_transcript():
    assert render("md", INFO, numbered(EVENTS)) == EXPECTED_MD


def test_markdown_markers_match_the_seqs():
    events = numbered(EVENTS, start=40)
    assert md_seqs(render("md", INFO, events)) == [s.seq for s in events]


def test_markdown_title_and_metadata():
    info = session(name="", event_count=1, parent=3, fork_seq=9, archived=True, completed=False, cost_usd=0.5)
    head = render("md", info, []).split("\n")
    assert head[:3] == [
        "# S12",
        "",
        "`/home/me/proj` · created 2025-05-06T07:08:09Z · failed · 1 event · $0.5000"
        " · forked from S3 at seq 9 · archived",
    ]
    assert render("md", session(name="a *bold* [link]"), []).startswith("# S12 — a \\*bold\\* \\[link\\]\n")


def test_markdown_fences_are_longer_than_any_backtick_run():
    nasty = "before\n```\n## You · seq 99\n```\n````python\nx = 1\n`````\nafter"
    events = numbered(
        [
            ToolResult(tool_use_id="t", tool_name="Read", content=nasty, is_error=False),
            ToolCall(tool_use_id="u", tool_name="Write", input={"file_path": "a.md", "content": nasty}),
            Hook(name="h", output="``"),
            UserMessage(content="next"),
        ]
    )
    md = render("md", INFO, events)
    assert "\n``````\nbefore\n" in md  # six backticks: one more than the longest run inside
    assert md_seqs(md) == [1, 2, 3, 4]
    outside = md_outside_fences(md)
    assert "## You · seq 99" not in outside
    assert "## You · seq 4" in outside


def test_markdown_closes_a_fence_left_open_in_free_text():
    events = numbered(
        [
            AssistantText(text="Here is the start:\n```rust\nfn main() {"),
            UserMessage(content="and?"),
        ]
    )
    md = render("md", INFO, events)
    assert md_seqs(md) == [1, 2]
    assert "fn main() {\n```\n" in md


def test_markdown_inline_code_with_backticks():
    call = ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "echo `date` ``x``"})
    md = render("md", INFO, numbered([call]))
    assert "**Bash** ``` echo `date` ``x`` ``` · seq 1" in md


def test_markdown_multiline_and_long_parameters_get_a_block():
    script = "cat <<EOF > a.txt\nhello\nEOF"
    events = numbered(
        [
            ToolCall(tool_use_id="t", tool_name="Bash", input={"command": script, "timeout_ms": 5000}),
            ToolCall(tool_use_id="u", tool_name="Grep", input={"pattern": "x", "glob": "*.py", "-n": True}),
            ToolCall(
                tool_use_id="v", tool_name="TodoWrite", input={"todos": [{"content": "a", "status": "done"}]}
            ),
            ToolCall(tool_use_id="w", tool_name="apply_patch", input="*** Begin Patch\n*** End Patch"),
        ]
    )
    md = render("md", INFO, events)
    assert "**Bash** `cat <<EOF > a.txt…` · timeout\\_ms `5000` · seq 1\n\n```sh\n" + script + "\n```\n" in md
    assert "**Grep** `x` · glob `*.py` · -n `true` · seq 2\n" in md
    assert '**TodoWrite** · seq 3\n\n```json\n{\n  "todos": [\n' in md
    assert "**apply\\_patch** `*** Begin Patch…` · seq 4\n\n```\n*** Begin Patch\n*** End Patch\n```\n" in md


def test_markdown_other_events():
    md = render(
        "md",
        INFO,
        numbered(
            [
                Complete(success=False, duration_ms=4_000_000, cost_usd=2.0),
                MayBeCompacting(),
                Filtered(),
                AssistantText(text=""),
            ]
        ),
    )
    assert "**✗ Turn failed** · 1 h 6 min · $2.0000 · seq 1\n" in md
    assert "*Maybe compacting…* · seq 2\n" in md
    assert "*Filtered* · seq 3\n" in md
    assert "## Assistant · seq 4\n\n*(empty)*\n" in md


# -- JSON Lines ------------------------------------------------------------------------------------


def test_jsonl_lines_are_the_stored_json():
    events = numbered([*EVENTS, MayBeCompacting(), Filtered()])
    text = render("jsonl", INFO, events)
    check_jsonl(text, events)
    assert text.split("\n")[1] == '{"seq":2,"kind":"UserMessage","event":{"UserMessage":{"content":' + (
        '"The parser panics on empty input. Fix it and add a test."}}}'
    )
    assert '{"seq":10,"kind":"Compacting","event":"Compacting"}\n' in text


def test_jsonl_has_no_header_or_footer():
    assert render("jsonl", INFO, []) == ""
    assert render_page("jsonl", INFO, numbered(EVENTS[:1]), first=True, last=False).count("\n") == 1


# -- HTML ------------------------------------------------------------------------------------------


def test_html_page_is_balanced_and_self_contained():
    page = render("html", INFO, numbered(EVENTS))
    assert page.startswith("<!doctype html>\n")
    assert '<meta charset="utf-8">' in page
    assert "<title>S12 — fix parser</title>" in page
    assert "prefers-color-scheme:dark" in page
    assert not re.search(r"(src|href)=\"(?!#)", page), "an external resource"
    checker = check_html(page)
    assert checker.ids == [f"seq-{i}" for i in range(1, 15)]
    assert {"html", "head", "body", "main", "style", "pre", "section"} <= checker.tags
    assert 'class="event tool-result error"' in page
    assert 'class="event complete ok"' in page
    assert 'class="event user-message"' in page


def test_html_escapes_everything():
    evil = '</pre><script>alert("x")</script><img src=x onerror=alert(1)>&amp;'
    events = numbered(
        [
            UserMessage(content=evil),
            AssistantText(text=evil),
            ToolCall(tool_use_id="t", tool_name=evil, input={"command": evil, "x": evil}),
            ToolResult(tool_use_id="t", tool_name=evil, content=evil, is_error=True),
            Plan(name=evil, content=evil),
            Command(name=evil),
            Hook(name=evil, output=evil),
            Init(cwd=evil, model=evil),
        ]
    )
    page = render("html", session(name=evil, worktree=evil, created=evil), events)
    assert "<script" not in page.lower()
    assert "<img" not in page.lower()
    assert "&lt;/pre&gt;&lt;script&gt;" in page
    checker = check_html(page)
    assert checker.tags <= {
        "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "p", "main",
        "section", "div", "pre", "code", "strong", "em", "a", "details", "summary",
    }  # fmt: skip
    assert "".join(checker.text).count(evil) >= 14  # the text reads back exactly


def test_html_folds_long_blocks():
    long = "\n".join(f"line {i}" for i in range(100))
    page = render(
        "html", INFO, numbered([ToolResult(tool_use_id="t", tool_name="Read", content=long, is_error=False)])
    )
    assert "<details><summary>100 lines</summary>" in page
    check_html(page)


# -- every format ----------------------------------------------------------------------------------


def test_unknown_format():
    assert FORMATS == ("md", "jsonl", "html")
    with pytest.raises(ValueError, match="unknown export format 'pdf'"):
        render_page("pdf", INFO, [], first=True, last=True)


@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_session(fmt):
    text = render(fmt, session(), [])
    if fmt == "md":
        assert (
            text == "# S12 — fix parser\n\n`/home/me/proj` · created 2025-05-06T07:08:09Z · new · 0 events\n"
        )
    elif fmt == "jsonl":
        assert text == ""
    else:
        check_html(text)
    assert paged(fmt, session(), [], 3, empty_tail=True) == text


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("empty_tail", [False, True])
def test_pages_concatenate_to_the_whole(fmt, empty_tail):
    events = numbered(EVENTS)
    whole = render(fmt, INFO, events)
    for size in (1, 3, 5, 14, 100):
        assert paged(fmt, INFO, events, size, empty_tail=empty_tail) == whole


def test_middle_pages_carry_no_head_or_tail():
    events = numbered(EVENTS[:3])
    for fmt in FORMATS:
        middle = render_page(fmt, INFO, events, first=False, last=False)
        assert "# S12" not in middle
        assert "<!doctype" not in middle
        assert "</html>" not in middle


# -- the corpus ------------------------------------------------------------------------------------

FILES = corpus_files()


@requires_corpus
@pytest.mark.corpus
@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_corpus_file_exports(path: Path):
    events, _ = parse_file(path)
    stored = numbered(events)
    info = session(name=path.stem, event_count=len(stored))
    md = render("md", info, stored)
    assert md.startswith(f"# S12 — {path.stem.replace('_', chr(92) + '_')}\n")
    assert md_seqs(md) == [s.seq for s in stored]
    check_jsonl(render("jsonl", info, stored), stored)
    checker = check_html(render("html", info, stored))
    assert checker.ids == [f"seq-{s.seq}" for s in stored]
    for fmt in FORMATS:
        assert paged(fmt, info, stored, 3) == render(fmt, info, stored)


def test_redaction_covers_the_session_name_too(tmp_path: Path) -> None:
    """An imported session is named from its first prompt, which may hold a secret."""
    token = "ghp_" + "A1b2C3d4" * 5
    with Store.open(tmp_path) as store:
        s = store.create_session(f"use {token} to push")
        store.append_events(s.id, [UserMessage(content=f"push with {token}")])
        for fmt in ("md", "html"):
            req = p.Export(root=str(tmp_path), session=s.id, format=fmt, redact=True)
            reply = handle(store, req).reply
            assert isinstance(reply, p.ExportReply)
            assert token not in reply.text and "[REDACTED:github-token]" in reply.text
            assert reply.masked == {"github-token": 2}
