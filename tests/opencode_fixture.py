"""OpenCode stores built for tests, both generations, since no real `opencode.db` or `storage/`
tree was found published (tests/data/SOURCES.md).

The database's tables follow OpenCode's own schema (`packages/opencode/src/session/session.sql.ts`
and `project/project.sql.ts` in anomalyco/opencode at 063e830: drizzle tables `project`, `session`,
`message`, `part`, times in Unix ms, `data` JSON), in WAL mode as OpenCode runs it. The messages and
parts have the shapes of OpenCode's `MessageV2` (`message-v2.ts`): user and assistant infos
(`modelID`, `providerID`, `cost`, `tokens {input, output, reasoning, cache {read, write}}`,
`path {cwd, root}`, `time {created, completed}`, `error {name, data {message}}`), and parts `text`,
`reasoning`, `tool` (`callID`, `tool`, `state {status, input, output, title, metadata, time}`),
`step-start`, `step-finish` (`cost`, `tokens`), `patch` (`hash`, `files`), `file`.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

__all__ = ["DDL", "OpenCodeBuilder", "conversation"]

DDL = """
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text,
    time_created integer NOT NULL, time_updated integer NOT NULL);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    workspace_id text, parent_id text, slug text NOT NULL, directory text NOT NULL, path text,
    title text NOT NULL, version text NOT NULL, share_url text, summary_additions integer,
    summary_deletions integer, summary_files integer, summary_diffs text, cost real DEFAULT 0 NOT NULL,
    tokens_input integer DEFAULT 0 NOT NULL, tokens_output integer DEFAULT 0 NOT NULL,
    revert text, permission text, agent text, model text,
    time_created integer NOT NULL, time_updated integer NOT NULL, time_compacting integer,
    time_archived integer);
CREATE INDEX session_project_idx ON session (project_id);
CREATE INDEX session_parent_idx ON session (parent_id);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id) ON DELETE CASCADE,
    time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL REFERENCES message(id) ON DELETE CASCADE,
    session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL,
    data text NOT NULL);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
"""

T0 = 1_764_000_000_000  # 2025-11-24, in ms


def conversation(n: int, *, cost: float = 0.0123) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The `n`-th turn of a session: a prompt, and a reply that reads a file, edits it and says so."""
    at = T0 + n * 60_000
    user = {"role": "user", "time": {"created": at}, "agent": "build",
            "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}  # fmt: skip
    reply: dict[str, Any] = {
        "role": "assistant", "time": {"created": at + 1000, "completed": at + 9000},
        "parentID": f"msg_{n:04}u",
        "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build", "agent": "build",
        "path": {"cwd": "/work/p", "root": "/work/p"}, "cost": cost, "finish": "stop",
        "tokens": {"input": 1200, "output": 340, "reasoning": 20, "cache": {"read": 5000, "write": 800}},
    }  # fmt: skip
    parts: list[dict[str, Any]] = [
        {"type": "step-start", "snapshot": "4b825dc6"},
        {"type": "reasoning", "text": f"Thinking about turn {n}.",
         "time": {"start": at + 1100, "end": at + 1500}},
        {"type": "text", "text": f"I will fix main.py (turn {n})."},
        {"type": "tool", "callID": f"toolu_{n}_a", "tool": "read",
         "state": {"status": "completed", "input": {"filePath": "/work/p/main.py"},
                   "output": "1\tprint('hi')\n",
                   "title": "main.py", "metadata": {}, "time": {"start": at + 2000, "end": at + 2100}}},
        {"type": "tool", "callID": f"toolu_{n}_b", "tool": "edit",
         "state": {"status": "completed",
                   "input": {"filePath": "/work/p/main.py", "oldString": "'hi'", "newString": f"'hi {n}'"},
                   "output": "", "title": "main.py", "metadata": {"diff": "-'hi'\n+'hi'"},
                   "time": {"start": at + 3000, "end": at + 3100}}},
        {"type": "tool", "callID": f"toolu_{n}_c", "tool": "bash",
         "state": {"status": "error", "input": {"command": "pytest -q", "description": "run the tests"},
                   "error": "exit code 1", "time": {"start": at + 4000, "end": at + 5000}}},
        {"type": "patch", "hash": "9f1c2d3", "files": ["/work/p/main.py"]},
        {"type": "text", "text": "Done."},
        {"type": "step-finish", "reason": "stop", "snapshot": "5c1d", "cost": cost,
         "tokens": {"input": 1200, "output": 340, "reasoning": 20, "cache": {"read": 5000, "write": 800}}},
    ]  # fmt: skip
    return [(user, [{"type": "text", "text": f"please fix main.py, step {n}"}]), (reply, parts)]


class OpenCodeBuilder:
    """Writes sessions into an `opencode.db` (WAL, as OpenCode runs it) or a `storage/` tree."""

    def __init__(self, data_dir: Path, *, json_tree: bool = False) -> None:
        self.data_dir = data_dir
        self.json_tree = json_tree
        data_dir.mkdir(parents=True, exist_ok=True)
        self.db = data_dir / "opencode.db"
        if not json_tree:
            with sqlite3.connect(self.db) as conn:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.executescript(DDL)
                conn.execute("INSERT INTO project VALUES ('prj_1', '/', 'git', 'p', ?, ?)", (T0, T0))
        self._n = 0

    def session(self, sid: str, directory: Path, title: str, parent: str | None = None) -> None:
        if self.json_tree:
            info = {"id": sid, "projectID": "prj_1", "directory": str(directory), "parentID": parent,
                    "title": title, "version": "0.15.0", "time": {"created": T0, "updated": T0}}  # fmt: skip
            _write(self.data_dir / "storage" / "session" / "prj_1" / f"{sid}.json", info)
            return
        with sqlite3.connect(self.db) as conn:
            conn.execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, "
                "time_created, time_updated) VALUES (?, 'prj_1', ?, ?, ?, ?, '1.0.0', ?, ?)",
                (sid, parent, sid, str(directory), title, T0 + len(sid), T0),
            )

    def message(self, sid: str, info: dict[str, Any], parts: list[dict[str, Any]]) -> str:
        self._n += 1
        mid = f"msg_{self._n:06}"
        at = info["time"]["created"]
        full = {"id": mid, "sessionID": sid, **info}
        if self.json_tree:
            _write(self.data_dir / "storage" / "message" / sid / f"{mid}.json", full)
            for i, part in enumerate(parts):
                body = {"id": f"prt_{self._n:06}_{i:03}", "sessionID": sid, "messageID": mid, **part}
                _write(self.data_dir / "storage" / "part" / mid / f"prt_{self._n:06}_{i:03}.json", body)
            return mid
        with sqlite3.connect(self.db) as conn:
            conn.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, at, at, json.dumps(info)))
            for i, part in enumerate(parts):
                conn.execute(
                    "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    (f"prt_{self._n:06}_{i:03}", mid, sid, at + i, at + i, json.dumps(part)),
                )
        return mid

    def turn(self, sid: str, n: int) -> None:
        for info, parts in conversation(n):
            self.message(sid, info, parts)


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
