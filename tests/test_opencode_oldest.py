"""OpenCode 0.5's per-project ``storage/`` tree (``project/<slug>/storage/session/{info,message,part}``)
is found and imported as the later layouts are: files its real 0.5.29 wrote (tests/data/SOURCES.md).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from azsd.events import AssistantText, Complete, UserMessage, decode_event
from azsd.ingest.opencode import locations, open_source, project_slug, sessions_of
from tests.test_cli import Azs, azs
from tests.test_client import daemon, worktree

__all__ = ["azs", "daemon", "worktree"]  # the fixtures, re-exported for pytest

DATA = Path(__file__).parent / "data" / "opencode-0.5.29" / "storage"
SESSION = "ses_ddc2c9974ffedLlKJLmYAh2EP9"


def data_dir_of(tmp: Path, project: Path, *, with_path: bool = True) -> Path:
    """An OpenCode data directory holding the 0.5.29 tree of `project` (its reply's `path` naming the
    project, or, without `with_path`, nothing but the slug saying where it ran)."""
    data = tmp / "opencode-data"
    storage = data / "project" / project_slug(str(project)) / "storage"
    shutil.copytree(DATA, storage)
    for path in storage.rglob("*.json"):
        text = path.read_text()
        if "@ROOT@" in text:
            value = json.loads(text)
            if with_path:
                value["path"] = {"cwd": str(project), "root": str(project)}
            else:
                del value["path"]
            path.write_text(json.dumps(value))
    return data


def test_the_oldest_layout_is_found_and_its_session_read(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    data = data_dir_of(tmp_path, project)
    (location,) = locations(data)
    with open_source(location) as source:
        (session,) = sessions_of(source, project)
        assert (session.id, session.directory) == (SESSION, str(project))
        assert source.has_session(SESSION) and not source.has_session("ses_none")
        messages = list(source.messages(SESSION))
    assert [info["role"] for info, _, _ in messages if info] == ["user", "assistant"]


def test_without_a_reply_path_the_slug_names_the_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    data = data_dir_of(tmp_path, project, with_path=False)
    (location,) = locations(data)
    with open_source(location) as source:
        (session,) = sessions_of(source, project)
        assert session.directory == str(project)


def test_azs_import_opencode_takes_the_oldest_layout(azs: Azs, worktree: Path, tmp_path: Path) -> None:
    data = data_dir_of(tmp_path, worktree)
    (line, *_) = azs.json("import", "opencode", "--data-dir", str(data))
    assert line["created"], line
    with azs.daemon.client(timeout=10) as client:
        decoded = [decode_event(e.data) for e in client.get_events(worktree, 1)]
    assert UserMessage(content="an old question\n") in decoded
    assert AssistantText(text="Old answer.") in decoded
    assert isinstance(decoded[-1], Complete) and decoded[-1].success
    (view,) = [json.loads(row) for row in azs.ok("--json", "ls").splitlines()]
    assert view["name"] == "an old question"  # 0.5's placeholder title gives way to the prompt
    assert view["usage"]["input"] == 600 and view["usage"]["cost_usd"] == 0.002085
