"""A store azsd creates is the user's own and stays out of every git's view (azsd.store.private)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from azsd.store import Store, store_path
from azsd.store.private import GITIGNORE, readable_by_others
from tests.test_cli import Azs, azs
from tests.test_client import daemon, worktree

__all__ = ["azs", "daemon", "worktree"]  # the fixtures, re-exported for pytest


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_store_is_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        with Store.open(tmp_path) as store:
            store.create_session("x")
    finally:
        os.umask(old)
    path = store_path(tmp_path)
    assert mode(path.parent) == 0o700
    assert mode(path) == 0o600
    assert not readable_by_others(path)
    for side in path.parent.glob("sessions.azs-*"):  # the WAL and its index, made by SQLite
        assert mode(side) == 0o600, side
    assert (path.parent / ".gitignore").read_text() == GITIGNORE


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_no_git_sees_the_store_not_even_one_with_a_directory_of_its_own(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with Store.open(tmp_path) as store:
        store.create_session("x")
    status = subprocess.run(
        ["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert status.stdout == ""
    # as an agent's snapshot sees the worktree: its own git directory, the worktree's files
    snapshot = tmp_path.parent / "snapshot.git"
    env = {**os.environ, "GIT_DIR": str(snapshot), "GIT_WORK_TREE": str(tmp_path)}
    subprocess.run(["git", "init", "-q", "--bare", str(snapshot)], check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, env=env, check=True)
    staged = subprocess.run(
        ["git", "ls-files"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    assert ".azureal" not in staged.stdout


def test_an_existing_store_gains_the_gitignore_and_keeps_its_mode(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        store.create_session("x")
    path = store_path(tmp_path)
    (path.parent / ".gitignore").unlink()
    path.chmod(0o644)  # as an older azsd (or AZUREAL) made it
    assert readable_by_others(path)
    with Store.open(tmp_path) as store:
        store.create_session("y")
    assert (path.parent / ".gitignore").read_text() == GITIGNORE
    assert mode(path) == 0o644  # what the user has is not changed behind their back: doctor says it


def test_doctor_says_when_other_users_can_read_the_store(azs: Azs, worktree: Path) -> None:
    assert azs("new", "x")[0] == 0
    path = store_path(worktree)
    checks = {c["check"]: c for c in azs.json("doctor")}
    assert checks["permissions"]["ok"], checks
    path.chmod(0o644)
    code, printed, _ = azs("doctor")
    assert code == 1
    assert f"chmod 600 {path}" in printed, printed
    code, printed, _ = azs("--json", "doctor")
    assert code == 1
    assert not {c["check"]: c for c in map(json.loads, printed.splitlines())}["permissions"]["ok"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_doctor_says_when_git_sees_the_store(azs: Azs, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    base = ["--root", str(repo)]
    assert azs(*base, "new", "x")[0] == 0
    checks = {c["check"]: c for c in azs.json(*base, "doctor")}
    assert checks["git"]["ok"], checks
    (repo / ".azureal" / ".gitignore").write_text("")  # emptied: git sees the store again
    code, printed, _ = azs(*base, "--json", "doctor")
    (git,) = [c for c in map(json.loads, printed.splitlines()) if c["check"] == "git"]
    assert code == 1 and not git["ok"] and "info/exclude" in git["detail"], git
