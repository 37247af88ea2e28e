"""Session export: exact JSONL, a balanced and escaped HTML page, what every format shares (unknown
formats, empty sessions, paging), and every file of ../shared/corpus in every format.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from azsd.events import (
    AssistantText,
    Command,
    Filtered,
    Hook,
    Init,
    MayBeCompacting,
    Plan,
    ToolCall,
    ToolResult,
    UserMessage,
)
from azsd.export import FORMATS, render, render_page
from azsd.ingest.file import parse_file
from azsd.ipc import protocol as p
from azsd.server.handlers import handle
from azsd.store import Store
from tests.conftest import corpus_files, requires_corpus
from tests.export_helpers import EVENTS, INFO, check_html, check_jsonl, md_seqs, numbered, paged, session

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
