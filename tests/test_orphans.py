"""Orphan recovery (spec §4.1): a turn a crashed AZUREAL left unstored is stored when the store opens."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from azsd.compact import prepare_for_store
from azsd.events import UserMessage, encode_event
from azsd.ingest.file import parse_file
from azsd.ingest.orphans import find_agent_file, recover_orphans
from azsd.ipc import protocol as p
from azsd.store import Store
from tests.conftest import corpus_files, requires_corpus
from tests.daemon_fixture import short_tmpdir, start_daemon

UUID = "0b8c1e5e-6a8f-4f0e-9b9e-2f4d3c1a7e11"


def claude_home(tmp: Path, source: Path) -> Path:
    home = tmp / "home"
    project = home / ".claude" / "projects" / "-tmp-wt"
    project.mkdir(parents=True)
    shutil.copy(source, project / f"{UUID}.jsonl")
    settled(project / f"{UUID}.jsonl")
    return home


def settled(path: Path) -> None:
    """Date the file ten minutes back: the crash was a while ago, nothing writes it any more."""
    old = time.time() - 600
    os.utime(path, (old, old))


def test_find_agent_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude" / "projects" / "-w").mkdir(parents=True)
    (home / ".claude" / "projects" / "-w" / f"{UUID}.jsonl").write_text("{}\n")
    codex = home / ".codex" / "sessions" / "2026" / "06" / "05"
    codex.mkdir(parents=True)
    (codex / "rollout-2026-06-05T04-58-20-abc-123.jsonl").write_text("{}\n")
    assert find_agent_file(UUID, home) == home / ".claude" / "projects" / "-w" / f"{UUID}.jsonl"
    assert find_agent_file("abc-123", home) == codex / "rollout-2026-06-05T04-58-20-abc-123.jsonl"
    assert find_agent_file("missing", home) is None
    assert find_agent_file("../etc", home) is None


@requires_corpus
def test_recover_orphans_stores_the_rest_of_the_turn_once(tmp_path: Path) -> None:
    source = next(f for f in corpus_files("claude-session") if f.name == "agentcmd__full-session-two.jsonl")
    home = claude_home(tmp_path, source)
    root = tmp_path / "wt"
    root.mkdir()
    parsed = prepare_for_store(parse_file(source)[0])
    with Store.open(root) as store:
        sid = store.create_session().id
        store.append_prepared(sid, parsed[:5])  # the crash came after five events were stored
        store.set_session_uuid(sid, UUID)
        recovered = recover_orphans(store, home)
        assert [e.event for e in recovered[sid]] == parsed[5:]
        assert store.load_events(sid).plain() == parsed
        assert store.sessions_with_uuid() == []
        assert recover_orphans(store, home) == {}
    assert (home / ".claude" / "projects" / "-tmp-wt" / f"{UUID}.jsonl").exists()  # never deleted


@requires_corpus
def test_a_file_still_being_written_is_left_for_later(tmp_path: Path) -> None:
    """AZUREAL may still be running that turn: a file written to seconds ago is no orphan yet."""
    source = next(f for f in corpus_files("claude-session") if f.name == "agentcmd__full-session-two.jsonl")
    home = claude_home(tmp_path, source)
    agent_file = home / ".claude" / "projects" / "-tmp-wt" / f"{UUID}.jsonl"
    os.utime(agent_file)  # written to just now
    with Store.open(tmp_path) as store:
        sid = store.create_session().id
        store.set_session_uuid(sid, UUID)
        assert recover_orphans(store, home) == {}
        assert store.sessions_with_uuid() == [(sid, "", UUID)]
        assert store.load_events(sid).plain() == []
        settled(agent_file)
        assert sid in recover_orphans(store, home)
        assert store.sessions_with_uuid() == []


def test_a_vanished_agent_file_just_clears_the_id(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        sid = store.create_session().id
        store.set_session_uuid(sid, UUID)
        assert recover_orphans(store, tmp_path / "empty-home") == {}
        assert store.sessions_with_uuid() == []


@requires_corpus
def test_the_daemon_recovers_orphans_when_it_opens_a_store() -> None:
    source = next(
        f for f in corpus_files("claude-stream-json") if f.name == "claude_code-elixir__read_file.jsonl"
    )
    base, root = short_tmpdir(), short_tmpdir()
    home = claude_home(base, source)
    with Store.open(root) as store:
        sid = store.create_session().id
        store.append_events(sid, [UserMessage(content="read the README")])
        store.set_session_uuid(sid, UUID)
    d = start_daemon(base / "run", env={"HOME": str(home)})
    try:
        page = d.request(p.GetEvents(root=str(root), session=sid, limit=1000))
        assert isinstance(page, p.EventsPage)
        want = [encode_event(UserMessage(content="read the README")).decode()]
        # The run's Init is news to the session, as in a live `azs run` (issue 13; spec §4.5 dropped it).
        want += [encode_event(e).decode() for e in prepare_for_store(parse_file(source)[0])]
        assert [e.data for e in page.events] == want
        info = d.request(p.GetSession(root=str(root), session=sid))
        assert isinstance(info, p.SessionReply) and info.session.state == "succeeded"
        d.close()
        with Store.open(root) as store:
            assert store.sessions_with_uuid() == []
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


@requires_corpus
def test_a_file_its_agent_still_holds_open_is_left_for_later(tmp_path: Path) -> None:
    """A turn whose agent still has the file open is running, however long ago it last wrote."""
    source = next(f for f in corpus_files("claude-session") if f.name == "agentcmd__full-session-two.jsonl")
    home = claude_home(tmp_path, source)
    agent_file = home / ".claude" / "projects" / "-tmp-wt" / f"{UUID}.jsonl"
    hold = "import sys, time; f = open(sys.argv[1], 'ab'); print(flush=True); time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", hold, str(agent_file)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"\n"  # it has the file open
        settled(agent_file)
        with Store.open(tmp_path) as store:
            sid = store.create_session().id
            store.set_session_uuid(sid, UUID)
            assert recover_orphans(store, home) == {}
            assert store.sessions_with_uuid() == [(sid, "", UUID)]
            holder.kill()
            holder.wait()
            assert sid in recover_orphans(store, home)
            assert store.sessions_with_uuid() == []
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
