"""The daemon keeps Aider's and OpenCode's sessions current by itself too (issue 34): with no command,
a run Aider writes in a worktree the daemon knows, and a session OpenCode commits to its database,
reach the project's store within about a second, once; a source a follow reads stays the follow's.

The daemon runs with its own HOME and XDG_DATA_HOME and the watch on for Aider and OpenCode
(``AZSD_WATCH_AGENTS``), on fixture histories written as the programs write them.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.events import UserMessage
from azsd.ingest.parsers.aider import AiderParser
from azsd.ingest.sources import AIDER_HISTORY
from azsd.ipc import protocol as p
from tests.daemon_fixture import DaemonProc, short_tmpdir
from tests.opencode_fixture import OpenCodeBuilder
from tests.test_follow import follow
from tests.test_one_owner_agents import daemon_and_worktree, prompts_of, sessions_of
from tests.test_run import wait_for

DATA = Path(__file__).parent / "data" / "aider"


@pytest.fixture
def watched() -> Iterator[tuple[Path, Path, DaemonProc]]:
    home = short_tmpdir()  # the agents' (HOME, XDG_DATA_HOME)
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "AZSD_WATCH_AGENTS": "aider,opencode"}
    try:
        with daemon_and_worktree(env) as (_, root, d):
            yield home, root, d
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_an_aider_run_in_a_known_worktree_is_imported_by_itself(
    watched: tuple[Path, Path, DaemonProc],
) -> None:
    _, root, d = watched
    known = d.request(p.CreateSession(root=str(root), name="mine"))  # the worktree has a store
    assert isinstance(known, p.SessionReply)
    history = root / AIDER_HISTORY
    text = (DATA / "aider__v0.47-request-cost.md").read_bytes()
    history.write_bytes(text)
    written = time.monotonic()
    wait_for(lambda: [v for v in sessions_of(d, root) if v.name != "mine"], "the runs", timeout=10)
    seen = time.monotonic() - written
    assert seen < 5.0, f"{seen:.2f} s"
    want = [e.content for e in AiderParser().feed_all(text.splitlines()) if isinstance(e, UserMessage)]
    wait_for(
        lambda: (
            sorted(c for v in sessions_of(d, root) if v.name != "mine" for c in prompts_of(d, root, v.id))
            == sorted(want)
        ),
        "every run's prompts, once",
    )
    assert all(v.usage is not None for v in sessions_of(d, root) if v.name != "mine")
    count = len(sessions_of(d, root))
    time.sleep(1.0)  # looked at again and again: nothing more
    assert len(sessions_of(d, root)) == count


def test_an_opencode_session_is_imported_into_its_project_by_itself(
    watched: tuple[Path, Path, DaemonProc],
) -> None:
    base, root, d = watched
    oc = OpenCodeBuilder(base / "data" / "opencode")
    oc.session("ses_watch", root, "watched")
    oc.turn("ses_watch", 1)
    [view] = wait_for(lambda: sessions_of(d, root), "the session, imported by the daemon", timeout=10)
    wait_for(lambda: len(prompts_of(d, root, view.id)) == 1, "its first turn")
    oc.turn("ses_watch", 2)
    wait_for(lambda: len(prompts_of(d, root, view.id)) == 2, "its second turn, in the same session")
    assert len(sessions_of(d, root)) == 1


def test_a_followed_aider_history_stays_the_follows(watched: tuple[Path, Path, DaemonProc]) -> None:
    _, root, d = watched
    created = d.request(p.CreateSession(root=str(root), name="followed"))
    assert isinstance(created, p.SessionReply)
    history = root / AIDER_HISTORY
    history.write_bytes(b"")
    follow(d, root, created.session.id, history, format="aider")
    text = (
        DATA / "aider__v0.47-request-cost.md"
    ).read_bytes() + b"\n# aider chat started at 2024-08-06 09:00:00\n\n"
    history.write_bytes(text)
    want = [e.content for e in AiderParser().feed_all(text.splitlines()) if isinstance(e, UserMessage)]
    wait_for(lambda: prompts_of(d, root, created.session.id) == want, "every run, in the follow")
    time.sleep(1.5)
    assert len(sessions_of(d, root)) == 1
