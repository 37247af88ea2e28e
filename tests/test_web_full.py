"""`azs web`'s full record (issue 36): a session as the agent wrote it, against the real daemon and
server: edits as coloured diffs and a Write as a new file, thinking folded, a sub-agent nested under
its Task call, a todo list as a list, Markdown rendered with the agent's raw HTML escaped, a time on
every message, and the compact view a link away."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from azsd_client import Client
from tests.daemon_fixture import daemon_in_tmpdir, short_tmpdir
from tests.test_web import tags
from tests.web_fixture import WebServer, web_server

ANSWER = "## Plan\n\n- **first** the `Todo` type\n- then <script>alert(1)</script> [x](javascript:alert(2))\n"


def _line(
    kind: str, uuid: str, message: dict[str, Any], *, parent: str | None = None, side: bool = False
) -> str:
    return json.dumps(
        {
            "type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": side, "sessionId": "s1",
            "cwd": "/w", "version": "1.0.108", "timestamp": f"2026-03-01T10:00:{len(uuid):02d}Z",
            "message": message,
        }
    )  # fmt: skip


def _assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"id": "m", "role": "assistant", "model": "claude-sonnet-4", "content": list(blocks)}


def _result(tool_id: str, text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": text}]}


def _history(path: Path) -> None:
    edit = {"file_path": "/w/todo.ts", "old_string": "let done = false", "new_string": "let done = true"}
    write = {"file_path": "/w/new.ts", "content": "export interface Todo {\n  id: number\n}\n"}
    todos = {
        "todos": [
            {"content": "write the type", "status": "completed"},
            {"content": "test it", "status": "pending"},
        ]
    }
    task = {"description": "look around", "prompt": "List the files.", "subagent_type": "general-purpose"}
    lines = [
        _line("user", "u1", {"role": "user", "content": "add a Todo type"}),
        _line("assistant", "a2", _assistant({"type": "thinking", "thinking": "The user wants a type."})),
        _line("assistant", "a3", _assistant({"type": "tool_use", "id": "t1", "name": "Edit", "input": edit})),
        _line("user", "u4", _result("t1", "edited")),
        _line(
            "assistant", "a5", _assistant({"type": "tool_use", "id": "t2", "name": "Write", "input": write})
        ),
        _line("user", "u6", _result("t2", "written")),
        _line(
            "assistant",
            "a7",
            _assistant({"type": "tool_use", "id": "t3", "name": "TodoWrite", "input": todos}),
        ),
        _line("user", "u8", _result("t3", "ok")),
        _line("assistant", "a9", _assistant({"type": "tool_use", "id": "t4", "name": "Task", "input": task})),
        _line("user", "side1", {"role": "user", "content": "List the files."}, side=True),
        _line(
            "assistant",
            "side2",
            _assistant({"type": "text", "text": "SUBAGENT-WAS-HERE"}),
            parent="side1",
            side=True,
        ),
        _line("user", "u10", _result("t4", "two files")),
        _line("assistant", "a11", _assistant({"type": "text", "text": ANSWER})),
    ]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def setup() -> Iterator[tuple[WebServer, str, int]]:
    base = short_tmpdir()
    with daemon_in_tmpdir() as daemon:
        root = base / "wt"
        root.mkdir()
        history = base / "s1.jsonl"
        _history(history)
        with daemon.client() as client:
            sid = client.create_session(root, "full").session.id
            client.ingest_file(root, sid, history)
            _kept(client, root)
        with web_server(daemon, [str(root)]) as web:
            yield web, str(root), sid
    shutil.rmtree(base, ignore_errors=True)


def _kept(client: Client, root: Path, wait_s: float = 20) -> None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        status = client.full_status(root)
        if status.source_bytes and not status.waiting_bytes:
            return
        time.sleep(0.1)
    raise AssertionError("the daemon kept no full record")


def test_the_full_record_shows_what_the_agent_wrote(setup: tuple[WebServer, str, int]) -> None:
    web, root, sid = setup
    status, _, page = web.get(f"/session?root={root}&id={sid}&full=1")
    assert status == 200
    assert (  # a line diff, and within the changed line what changed
        '<span class="del">let done = <b class="hot">fals</b>e</span>'
        '<span class="add">let done = <b class="hot">tru</b>e</span>'
    ) in page
    assert '<span class="add">export interface Todo {</span>' in page  # a Write, as a new file
    assert '<span class="done">write the type</span><span class="todo">test it</span>' in page
    assert re.search(r'class="event thinking".*?<details><summary><em>thinking</em>', page, re.S)
    assert "The user wants a type." in page
    task = page.index('data-tool="t4"')
    nested = page.index('<div class="subagent">', task)
    assert task < nested < page.index("SUBAGENT-WAS-HERE") < page.index("</details>", nested)
    assert "<h2>Plan</h2>" in page and "<strong>first</strong>" in page and "<code>Todo</code>" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the agent's HTML, as text
    assert not [a for t, a in tags(page) if t == "a" and "javascript" in (a.get("href") or "")]
    assert not [a for t, a in tags(page) if t == "script" and not (a.get("src") or "").startswith("/static/")]
    assert '<time class="at" datetime="2026-03-01T10:00:' in page
    assert "compact events</a>" in page  # the other view, a link away


def test_the_compact_view_links_to_the_full_record_and_says_when_there_is_none(
    setup: tuple[WebServer, str, int],
) -> None:
    web, root, sid = setup
    page = web.get(f"/session?root={root}&id={sid}")[2]
    assert "full=1" in page and 'id="full-link"' in page
    assert "SUBAGENT-WAS-HERE" in page  # (the compact events hold the sidechain's answer unmarked)
    status, _, _ = web.get(f"/session?root={root}&id={sid + 1000}&full=1")
    assert status == 404
