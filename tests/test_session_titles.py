"""A session is named by the agent's own title of it when it made one (Claude's `summary` of the
conversation that ends in the file), else by its first prompt (issue 36: the summary was ignored)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from azsd.ingest.importer import import_source
from azsd.ingest.sources import Source
from azsd.store import Store


def transcript(path: Path, summaries: list[tuple[str, str]]) -> Path:
    lines: list[dict[str, Any]] = [
        {"type": "summary", "summary": text, "leafUuid": leaf} for text, leaf in summaries
    ]
    prompt = {"role": "user", "content": "fix the parser"}
    answer = {
        "id": "m",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "text", "text": "ok"}],
    }
    lines += [
        {"type": "user", "sessionId": "s", "uuid": "u1", "message": prompt},
        {"type": "assistant", "sessionId": "s", "uuid": "u2", "parentUuid": "u1", "message": answer},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def name_of(tmp_path: Path, path: Path) -> str:
    with Store.open(tmp_path / "wt") as store:
        outcome = import_source(store, Source(path, "claude", path.stat().st_size))
        return store.get_session(outcome.session_id).name


def test_claudes_summary_of_this_session_names_it(tmp_path: Path) -> None:
    path = transcript(tmp_path / "a.jsonl", [("Parser refactor: rename the module", "u2")])
    assert name_of(tmp_path, path) == "Parser refactor: rename the module"


def test_a_summary_of_another_session_does_not(tmp_path: Path) -> None:
    path = transcript(tmp_path / "b.jsonl", [("What an earlier session did", "elsewhere")])
    assert name_of(tmp_path, path) == "fix the parser"


def test_the_users_own_title_wins_then_claudes_ai_title(tmp_path: Path) -> None:
    """Claude Code 2.x writes `custom-title` (the user's `/rename`) and `ai-title` lines, the last of
    each kind winning, as Claude Code itself reads them."""
    path = transcript(tmp_path / "c.jsonl", [("a summary", "u2")])
    with path.open("a") as out:
        out.write(
            json.dumps({"type": "ai-title", "aiTitle": "Fix the parser's panic", "sessionId": "s"}) + "\n"
        )
    assert name_of(tmp_path / "1", path) == "Fix the parser's panic"
    with path.open("a") as out:
        for title in ("first name", "Parser work"):
            out.write(json.dumps({"type": "custom-title", "customTitle": title, "sessionId": "s"}) + "\n")
    assert name_of(tmp_path / "2", path) == "Parser work"
