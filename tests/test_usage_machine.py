"""The whole machine: `azs import claude --all` puts each project's sessions into its own directory's
store (those of a directory gone, into this worktree's, and says so), and `azs usage --all` reports
every store together, by period, and one row per project with `--instances`, as ccusage does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from azsd.ingest.importer import claude_slug
from azsd.model import Usage
from azsd.store import store_path
from tests.test_cli import Azs, azs
from tests.test_client import daemon, worktree
from tests.test_usage_counted import prompt, reply, tokens_of
from tests.test_usage_prices import write

__all__ = ["azs", "daemon", "worktree"]  # the fixtures, re-exported for pytest


def session_of(config: Path, project: Path, n: int, *, at: str) -> Path:
    """A Claude session of `project` (its `cwd` named in its lines), message `msg_<n>`."""
    slug = config / "projects" / claude_slug(project)
    slug.mkdir(parents=True, exist_ok=True)
    sid = f"{n:08d}-0000-4000-8000-000000000000"
    cwd = {"cwd": str(project)}
    lines = [{**prompt(sid, "go", at), **cwd}, {**reply(sid, n, at, 100 * n), **cwd}]
    return write(slug / f"{sid}.jsonl", lines)


def two_projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A private Claude config dir (and no Codex home), and two project directories."""
    config, one, two = tmp_path / "claude", tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    return config, one, two


def resumed_in(config: Path, project: Path, original: Path, n: int, tokens: int) -> Path:
    """`claude --resume` of `original` run in `project`: a new file in that project's folder, a copy
    of the earlier lines, then one more turn (message `msg_<n>`, `tokens` of input)."""
    slug = config / "projects" / claude_slug(project)
    slug.mkdir(parents=True, exist_ok=True)
    lines = [{**json.loads(line), "cwd": str(project)} for line in original.read_text().splitlines()]
    sid = lines[0]["sessionId"]
    return write(slug / "ffffffff-0000-4000-8000-00000000000f.jsonl", [
        *lines, {**prompt(sid, "more", "2026-05-02T10:00:00Z"), "cwd": str(project)},
        {**reply(sid, n, "2026-05-02T10:00:05Z", tokens), "cwd": str(project)},
    ])  # fmt: skip


def test_import_all_then_usage_all(
    azs: Azs, worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "claude"
    one, two, gone = tmp_path / "one", tmp_path / "two", tmp_path / "gone"
    one.mkdir()
    two.mkdir()
    files = [
        session_of(config, one, 1, at="2026-05-01T10:00:00Z"),
        session_of(config, two, 2, at="2026-05-02T10:00:00Z"),
        session_of(config, gone, 3, at="2026-05-02T11:00:00Z"),  # its directory no longer exists
    ]
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    kinds = ("input", "output", "cache_read", "cache_write")
    azs.ok("new", "a store here")  # nothing imported yet: every project's files are read in place
    (in_place,) = azs.json("usage", "--all")
    assert Usage(**{k: in_place["total"][k] for k in kinds}) == tokens_of(*files)
    said = azs.ok("import", "claude", "--all")
    assert f"1 project(s) whose directory is gone went into this worktree's store ({worktree})" in said
    assert str(gone) in said
    assert all(store_path(root).exists() for root in (one, two, worktree))
    (whole,) = azs.json("usage", "--all")
    assert Usage(**{k: whole["total"][k] for k in kinds}) == tokens_of(*files)  # imported: nothing twice
    assert {row["worktree"] for row in whole["worktrees"]} == {str(one), str(two), str(worktree)}
    (days,) = azs.json("usage", "--all", "--by", "day", "--timezone", "UTC")
    by_day = [(p["period"], p["usage"]["input"]) for p in days["periods"]]
    assert by_day == [("2026-05-01", 100), ("2026-05-02", 500)]
    (per_project,) = azs.json("usage", "--all", "--by", "day", "--instances", "--timezone", "UTC")
    assert {p["period"]: p["usage"]["input"] for p in per_project["periods"]} == {
        str(one): 100, str(two): 200, str(worktree): 300,
    }  # fmt: skip
    (only,) = azs.json("usage", "--all", "--project", "two")
    assert only["total"]["input"] == 200
    again = azs.json("import", "claude", "--all")  # one summary per store; nothing new in any
    assert sorted(s["root"] for s in again) == sorted([str(one), str(two), str(worktree)])
    assert all((s["created"], s["current"]) == (0, 1) for s in again)


@pytest.mark.parametrize("copy_first", [False, True])
def test_a_session_resumed_in_another_project_counts_each_message_once(
    azs: Azs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copy_first: bool
) -> None:
    """`claude --resume` from another directory: the new file, in that project's folder, copies the
    earlier messages. Each project has its store; every message is counted once on the machine,
    whichever store took it first, and whatever `usage --all` reads in place beside them."""
    config, one, two = two_projects(tmp_path, monkeypatch)
    n = 50 if copy_first else 40  # message ids of this test's own (the daemon counts each once)
    original = session_of(config, one, n + 1, at="2026-05-01T10:00:00Z")
    resumed = resumed_in(config, two, original, n + 2, 700)
    want = tokens_of(original, resumed)
    first = 100 * (n + 1)
    assert want.input == first + 700
    kinds = ("input", "output", "cache_read", "cache_write")
    for project in (two, one) if copy_first else (one, two):
        azs.ok("--root", str(project), "import", "claude", "--project", str(project))
    (whole,) = azs.json("usage", "--all", "--project", str(tmp_path))
    assert Usage(**{k: whole["total"][k] for k in kinds}) == want, whole["worktrees"]
    (days,) = azs.json("usage", "--all", "--project", str(tmp_path), "--by", "day", "--timezone", "UTC")
    assert [(p["period"], p["usage"]["input"]) for p in days["periods"]] == [
        ("2026-05-01", first), ("2026-05-02", 700),
    ]  # fmt: skip
    azs.ok("import", "claude", "--all")  # again, the other way round: nothing counted twice
    (again,) = azs.json("usage", "--all", "--project", str(tmp_path))
    assert Usage(**{k: again["total"][k] for k in kinds}) == want


def test_usage_all_counts_what_a_store_does_not_hold_yet(
    azs: Azs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project's store that has not caught up (a daemon just started, its watch still importing;
    or no watch): its new files and what its files gained since are read in place, once."""
    config = tmp_path / "claude"
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    first = session_of(config, project, 61, at="2026-05-01T10:00:00Z")
    azs.ok("--root", str(project), "import", "claude", "--project", str(project))
    grown = json.loads(first.read_text().splitlines()[-1])
    sid = grown["sessionId"]
    with first.open("a") as out:  # the session goes on after its import
        out.write(json.dumps({**reply(sid, 62, "2026-05-01T11:00:00Z", 5), "cwd": str(project)}) + "\n")
    second = session_of(config, project, 63, at="2026-05-02T10:00:00Z")  # a session not imported yet
    kinds = ("input", "output", "cache_read", "cache_write")
    (whole,) = azs.json("usage", "--all", "--project", str(project))
    assert Usage(**{k: whole["total"][k] for k in kinds}) == tokens_of(first, second)
    assert whole["total"]["input"] == 6100 + 5 + 6300
    azs.ok("--root", str(project), "import", "claude", "--project", str(project))
    (after,) = azs.json("usage", "--all", "--project", str(project))
    assert after["total"] == whole["total"]  # imported now: the same figures, each message once


def test_usage_all_with_no_store_anywhere_reads_every_file_in_place(
    azs: Azs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine where nothing was imported yet (a daemon just started): `usage --all` is right at
    once, as ccusage is, and makes no store."""
    config, one, two = two_projects(tmp_path, monkeypatch)
    files = [
        session_of(config, one, 71, at="2026-05-01T10:00:00Z"),
        session_of(config, two, 72, at="2026-05-02T10:00:00Z"),
    ]
    kinds = ("input", "output", "cache_read", "cache_write")
    (whole,) = azs.json("usage", "--all", "--project", str(tmp_path))
    assert Usage(**{k: whole["total"][k] for k in kinds}) == tokens_of(*files)
    assert not any(store_path(root).exists() for root in (one, two))


def test_a_copy_read_in_place_counts_only_what_no_store_counted(
    azs: Azs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project's store has not taken its resumed copy in yet (read in place): the copied messages,
    which another project's store counted, are left out (the daemon's reader asks the account)."""
    config, one, two = two_projects(tmp_path, monkeypatch)
    original = session_of(config, one, 81, at="2026-05-01T10:00:00Z")
    resumed = resumed_in(config, two, original, 82, 9)
    azs.ok("--root", str(one), "import", "claude", "--project", str(one))
    azs.ok("--root", str(two), "new", "a store, nothing imported")
    kinds = ("input", "output", "cache_read", "cache_write")
    (whole,) = azs.json("usage", "--all", "--project", str(tmp_path))
    assert Usage(**{k: whole["total"][k] for k in kinds}) == tokens_of(original, resumed)
