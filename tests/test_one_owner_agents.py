"""One owner per source, for Aider and OpenCode too (issue 34: a follow after an import stored
everything again, Aider 7 600 → 15 200 input, OpenCode events 11–20 a copy of 1–10).

An Aider run and an OpenCode session belong to the session that took them first, import or follow;
the other way goes on from there: a follow after an import reads only what came after, an import
after a follow creates nothing beside it. Through the real daemon, on fixture histories.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from azsd.events import UserMessage, decode_event
from azsd.ingest.parsers.aider import AiderParser
from azsd.ingest.sources import AIDER_HISTORY
from azsd.ipc import protocol as p
from tests.daemon_fixture import DaemonProc, short_tmpdir, start_daemon
from tests.opencode_fixture import OpenCodeBuilder
from tests.test_follow import follow, stored
from tests.test_run import wait_for

DATA = Path(__file__).parent / "data" / "aider"


@contextmanager
def daemon_and_worktree(env: dict[str, str] | None = None) -> Iterator[tuple[Path, Path, DaemonProc]]:
    """A daemon (its directory beside it, and `env`) and an empty worktree, both removed after."""
    base, root = short_tmpdir(), short_tmpdir()
    d = start_daemon(base / "run", env)
    try:
        yield base, root, d
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def world() -> Iterator[tuple[Path, Path, DaemonProc]]:
    with daemon_and_worktree() as made:
        yield made


def _import(d: DaemonProc, root: Path, agent: str, source_dir: Path) -> list[p.ImportReply]:
    """`azs import AGENT` of the project `root`, into its store."""
    where = {"root": str(root), "agent": agent}
    listed = d.request(p.ImportSources(**where, source_dir=str(source_dir), project=str(root)))  # type: ignore[arg-type]
    assert isinstance(listed, p.SourcesReply), listed
    done = d.request(p.ImportSessions(**where, paths=[s.path for s in listed.sources]))  # type: ignore[arg-type]
    assert isinstance(done, p.ImportsReply), done
    assert not done.failed, done.failed
    return list(done.imports)


def sessions_of(d: DaemonProc, root: Path) -> list[p.SessionView]:
    listed = d.request(p.ListSessions(root=str(root), with_usage=True))
    assert isinstance(listed, p.SessionsReply)
    return list(listed.sessions)


def _inputs(d: DaemonProc, root: Path) -> int:
    return sum(s.usage.input for s in sessions_of(d, root) if s.usage is not None)


def prompts_of(d: DaemonProc, root: Path, sid: int) -> list[str]:
    return [e.content for e in map(decode_event, stored(d, root, sid)) if isinstance(e, UserMessage)]


def test_aider_a_follow_after_an_import_reads_only_the_runs_after(
    world: tuple[Path, Path, DaemonProc],
) -> None:
    _, root, d = world
    history = root / AIDER_HISTORY
    history.write_bytes((DATA / "aider__v0.47-request-cost.md").read_bytes())
    imported = _import(d, root, "aider", root)
    assert len(imported) == 2
    before = _inputs(d, root)
    assert before > 0
    created = d.request(p.CreateSession(root=str(root), name="followed"))
    assert isinstance(created, p.SessionReply)
    sid = created.session.id
    follow(d, root, sid, history, format="aider")
    with history.open("a") as out:  # a new run, after the imported ones
        out.write("\n# aider chat started at 2024-08-06 10:00:00\n\n#### a new run's prompt\n\nDone.\n\n")
        out.write("> Tokens: 1.0k sent, 10 received. Cost: $0.01 message, $0.01 session.\n\n")
        out.write("# aider chat started at 2024-08-06 11:00:00\n\n")
    wait_for(lambda: prompts_of(d, root, sid) == ["a new run's prompt"], "the new run alone, in the follow")
    wait_for(lambda: _inputs(d, root) == before + 1000, "its usage, the imported runs' once")
    again = _import(d, root, "aider", root)  # the followed run is the follow's: nothing beside it
    assert all(not o.created for o in again), again
    assert len(sessions_of(d, root)) == 3 and _inputs(d, root) == before + 1000


def test_aider_an_import_after_a_follow_creates_nothing_beside_it(
    world: tuple[Path, Path, DaemonProc],
) -> None:
    _, root, d = world
    history = root / AIDER_HISTORY
    created = d.request(p.CreateSession(root=str(root), name="followed"))
    assert isinstance(created, p.SessionReply)
    sid = created.session.id
    history.write_bytes(b"")
    follow(d, root, sid, history, format="aider")
    closed = (
        DATA / "aider__v0.47-request-cost.md"
    ).read_bytes() + b"\n# aider chat started at 2024-08-06 09:00:00\n\n"
    history.write_bytes(closed)
    want = [e.content for e in AiderParser().feed_all(closed.splitlines()) if isinstance(e, UserMessage)]
    assert len(want) == 5  # (commands too, as Aider's own lines show them)
    wait_for(lambda: prompts_of(d, root, sid) == want, "every run's prompts, in the follow")
    followed = wait_for(lambda: _inputs(d, root) or None, "the follow's usage")
    again = _import(d, root, "aider", root)
    assert all(not o.created for o in again), again
    assert len(sessions_of(d, root)) == 1 and _inputs(d, root) == followed


def test_opencode_a_follow_after_an_import_goes_on_from_it(world: tuple[Path, Path, DaemonProc]) -> None:
    base, root, d = world
    oc = OpenCodeBuilder(base / "opencode")
    oc.session("ses_one", root, "one")
    for n in range(1, 4):
        oc.turn("ses_one", n)
    (imported,) = _import(d, root, "opencode", oc.data_dir)
    sid = imported.session.id
    events = len(stored(d, root, sid))
    inputs = _inputs(d, root)
    other = d.request(p.CreateSession(root=str(root), name="elsewhere"))
    assert isinstance(other, p.SessionReply)
    refused = d.request(p.Follow(root=str(root), session=other.session.id, path=f"{oc.db}#ses_one"))
    assert isinstance(refused, p.ErrorReply) and f"S{sid}" in refused.message
    follow(d, root, sid, Path(f"{oc.db}#ses_one"))
    oc.turn("ses_one", 4)
    wait_for(lambda: len(prompts_of(d, root, sid)) == 4, "the fourth turn, once")
    assert len(prompts_of(d, root, sid)) == 4 and len(stored(d, root, sid)) < 2 * events
    fresh = base / "fresh"  # the same session imported whole elsewhere: its usage, once
    fresh.mkdir()
    oc.session("ses_copy", fresh, "copy")
    for n in range(1, 5):
        oc.turn("ses_copy", n)
    _import(d, fresh, "opencode", oc.data_dir)
    wait_for(lambda: _inputs(d, root) == _inputs(d, fresh) > inputs, "the follow's usage, each turn once")


def test_opencode_an_import_after_a_follow_creates_nothing_beside_it(
    world: tuple[Path, Path, DaemonProc],
) -> None:
    base, root, d = world
    oc = OpenCodeBuilder(base / "opencode")
    oc.session("ses_two", root, "two")
    oc.turn("ses_two", 1)
    created = d.request(p.CreateSession(root=str(root), name="followed"))
    assert isinstance(created, p.SessionReply)
    sid = created.session.id
    follow(d, root, sid, Path(f"{oc.db}#ses_two"))
    wait_for(lambda: len(prompts_of(d, root, sid)) == 1, "the first turn")
    oc.turn("ses_two", 2)
    wait_for(lambda: len(prompts_of(d, root, sid)) == 2, "the second turn")
    inputs = _inputs(d, root)
    again = _import(d, root, "opencode", oc.data_dir)
    assert all(not o.created for o in again) and len(sessions_of(d, root)) == 1, again
    assert len(prompts_of(d, root, sid)) == 2 and _inputs(d, root) == inputs
