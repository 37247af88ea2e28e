"""Interop with the real `sqlite3` and `zstd` programs: what azsd writes, others read, and back."""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from azsd.events import (
    AssistantText,
    Compacting,
    Complete,
    Event,
    Init,
    ToolCall,
    ToolResult,
    UserMessage,
    encode_event,
)
from azsd.store import Store, store_path
from azsd.store.schema import AZUREAL_DDL

pytestmark = pytest.mark.interop

SQLITE3 = shutil.which("sqlite3")
ZSTD = shutil.which("zstd")
needs_sqlite3 = pytest.mark.skipif(SQLITE3 is None, reason="the sqlite3 program is not installed")
needs_zstd = pytest.mark.skipif(ZSTD is None, reason="the zstd program is not installed")

EVENTS: list[Event] = [
    Init(cwd="/home/u/p", model="claude-sonnet"),
    UserMessage(content='héllo\twörld \u2028 "quoted" \\ end'),
    AssistantText(text="Hi there!"),
    ToolCall(
        tool_use_id="tc1", tool_name="Read", file_path="/src/main.rs", input={"file_path": "/src/main.rs"}
    ),
    ToolResult(
        tool_use_id="tc1", tool_name="Read", file_path="/src/main.rs", content="fn main() {}", is_error=False
    ),
    Compacting(),
    Complete(success=True, duration_ms=5000, cost_usd=0.05),
]


def sqlite3_cli(db: Path, *sql: str) -> str:
    assert SQLITE3 is not None
    out = subprocess.run([SQLITE3, str(db), *sql], check=True, capture_output=True, text=True)
    return out.stdout


def normalize_ddl(text: str) -> list[str]:
    """Statements with whitespace collapsed and `IF NOT EXISTS` dropped (SQLite stores them so)."""
    statements: list[str] = []
    pending = ""
    for piece in text.split(";"):  # a trigger's body keeps its own semicolons
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            statements.append(pending.rstrip(";"))
            pending = ""
    statements = [s for s in statements if s.strip() and not s.strip().startswith("INSERT")]
    return sorted(
        re.sub(r"\s+", " ", s.replace("IF NOT EXISTS ", "")).replace("( ", "(").replace(" )", ")").strip()
        for s in statements
    )


@needs_sqlite3
def test_schema_and_journal_mode_as_the_sqlite3_program_sees_them(store: Store) -> None:
    store.create_session()
    schema = sqlite3_cli(store.path, ".schema")
    ours = [s for s in normalize_ddl(schema) if "sqlite_sequence" not in s and "azsd_" not in s]
    assert ours == normalize_ddl(AZUREAL_DDL)
    assert sqlite3_cli(store.path, "PRAGMA journal_mode;").strip() == "delete"
    assert sqlite3_cli(store.path, "SELECT value FROM meta WHERE key = 'schema_version';").strip() == "3"
    assert sqlite3_cli(store.path, "PRAGMA integrity_check;").strip() == "ok"


@needs_sqlite3
@needs_zstd
def test_every_blob_decompresses_with_the_zstd_program(store: Store, tmp_path: Path) -> None:
    s = store.create_session()
    result = store.append_events(s.id, EVENTS)
    out = sqlite3_cli(store.path, "SELECT seq, typeof(data), hex(data) FROM events ORDER BY seq;")
    rows = [line.split("|") for line in out.splitlines()]
    assert len(rows) == len(EVENTS)
    assert ZSTD is not None
    for (seq, typ, hexdata), stored in zip(rows, result.events, strict=True):
        assert int(seq) == stored.seq
        assert typ == "blob"
        frame = tmp_path / f"row{seq}.zst"
        frame.write_bytes(bytes.fromhex(hexdata))
        plain = subprocess.run([ZSTD, "-d", "-c", str(frame)], check=True, capture_output=True).stdout
        assert plain == encode_event(stored.event)


def test_exact_json_of_the_stored_rows(store: Store) -> None:
    s = store.create_session()
    store.append_events(s.id, EVENTS[:2] + EVENTS[5:])
    with sqlite3.connect(store.path) as conn:
        blobs = [row[0] for row in conn.execute("SELECT data FROM events ORDER BY seq")]
    import zstandard

    texts = [zstandard.ZstdDecompressor().decompressobj().decompress(b) for b in blobs]
    assert texts == [
        b'{"Init":{"cwd":"/home/u/p","model":"claude-sonnet"}}',
        '{"UserMessage":{"content":"héllo\\twörld \u2028 \\"quoted\\" \\\\ end"}}'.encode(),
        b'"Compacting"',
        b'{"Complete":{"success":true,"duration_ms":5000,"cost_usd":0.05}}',
    ]


@needs_zstd
def test_a_store_built_the_way_azureal_writes_it_reads_correctly(root: Path, tmp_path: Path) -> None:
    """AZUREAL's frames come from a streaming encoder (no content size); old rows hold raw JSON."""
    assert ZSTD is not None
    path = store_path(root)
    path.parent.mkdir()
    rows: list[tuple[int, str, bytes | str]] = []
    for seq, event in enumerate(EVENTS[:4], start=1):
        # `zstd -3` reading a pipe cannot know the size: the frame has no content size, as in Rust.
        frame = subprocess.run(
            [ZSTD, "-3", "-q", "-c"], input=encode_event(event), check=True, capture_output=True
        ).stdout
        assert frame[:4] == b"\x28\xb5\x2f\xfd"
        rows.append((seq, type(event).__name__, frame))
    rows.append((5, "ToolResult", encode_event(EVENTS[4])))  # raw JSON blob
    rows.append((6, "Compacting", encode_event(EVENTS[5]).decode()))  # TEXT-typed raw JSON
    with sqlite3.connect(path) as conn:
        conn.executescript(AZUREAL_DDL)
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("INSERT INTO sessions (worktree) VALUES ('main')")
        conn.executemany(
            "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (1, ?, ?, ?, 0)", rows
        )
    with Store.open(root) as store:
        loaded = store.load_events(1)
        assert loaded.skipped == 0
        assert loaded.plain() == EVENTS[:6]
        # And azsd appends after them without touching them.
        appended = store.append_events(1, [AssistantText(text="next")])
        assert [e.seq for e in appended.events] == [7]
    with sqlite3.connect(path) as conn:
        stored = conn.execute("SELECT seq, kind, data FROM events WHERE seq <= 6 ORDER BY seq").fetchall()
    assert stored == rows


@needs_sqlite3
def test_the_sqlite3_program_searches_the_index_and_deletes_around_it(store: Store) -> None:
    """The FTS5 index is plain SQLite: another program can query it, and AZUREAL's delete still works."""
    s = store.create_session()
    store.append_events(s.id, EVENTS)
    found = sqlite3_cli(
        store.path,
        "SELECT e.seq FROM azsd_search JOIN events AS e ON e.id = azsd_search.rowid "
        "WHERE azsd_search MATCH 'main' ORDER BY e.seq;",
    )
    assert found.split() == ["4", "5"]
    sqlite3_cli(store.path, "PRAGMA foreign_keys = ON; DELETE FROM sessions WHERE id = 1;")
    assert sqlite3_cli(store.path, "SELECT COUNT(*) FROM events;").strip() == "0"
    assert sqlite3_cli(store.path, "PRAGMA integrity_check;").strip() == "ok"
    assert store.search("main") == []
