"""azsd.ingest.importer: discovering Claude and Codex histories on disk and importing them idempotently."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest

from azsd.errors import IngestError
from azsd.events import UserMessage
from azsd.ingest.claude_slug import SLUG_MAX
from azsd.ingest.file import ingest_file, parse_file
from azsd.ingest.importer import (
    FORMAT_OF,
    Source,
    claude_slug,
    discover,
    import_source,
)
from azsd.ingest.names import first_prompt_name
from azsd.store import Store
from tests.conftest import corpus_files, requires_corpus

# -- a fake home with Claude's and Codex's layouts ----------------------------------------------


@dataclass
class Home:
    project: Path
    claude: Path
    codex: Path
    claude_sessions: list[Path]  # the top-level sessions of `project`, sorted
    codex_sessions: list[Path]  # the rollouts whose cwd is `project` or inside it, sorted
    planted: list[Path]  # every file written into either home

    def sources(self) -> list[Source]:
        return discover("claude", self.claude, self.project) + discover("codex", self.codex, self.project)


def _uuid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def _with_cwd(data: bytes, cwd: str) -> bytes:
    """`data` with the `cwd` of its first `session_meta` line replaced."""
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        obj = msgspec.json.decode(line) if line.strip() else None
        if isinstance(obj, dict) and obj.get("type") == "session_meta":
            obj["payload"]["cwd"] = cwd
            lines[i] = msgspec.json.encode(obj)
            return b"\n".join(lines)
    raise AssertionError("no session_meta line")


def _has_session_meta(path: Path) -> bool:
    return b'"type":"session_meta"' in path.read_bytes().split(b"\n", 1)[0]


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """Claude's and Codex's homes holding copies of the corpus, for the project `tmp_path/proj`."""
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    claude, codex = tmp_path / "home" / ".claude", tmp_path / "home" / ".codex"
    slug_dir = claude / "projects" / claude_slug(project)
    slug_dir.mkdir(parents=True)
    planted: list[Path] = []
    sessions: list[Path] = []
    for src in corpus_files("claude-session"):
        parent, sep, agent_file = src.stem.partition("__subagents__")
        if sep:  # a 2.1.x subagent transcript: beside its parent, never a session
            dest = slug_dir / _uuid(parent) / "subagents" / f"{agent_file}.jsonl"
        else:
            dest = slug_dir / f"{_uuid(src.stem)}.jsonl"
            sessions.append(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        planted.append(dest)
    first = corpus_files("claude-session")[0]
    for dest in (
        slug_dir / "agent-0a1b2c.jsonl",  # a 2.0.x subagent file in the project directory
        claude / "projects" / claude_slug(tmp_path / "elsewhere") / f"{_uuid('x')}.jsonl",  # another project
        claude / "projects" / claude_slug(project) / "notes.txt",
    ):
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(first, dest)
        planted.append(dest)
    # the 2.0.x subagent file names a session that is there (an orphaned one is a session of its own)
    agent = slug_dir / "agent-0a1b2c.jsonl"
    named = {json.loads(line).get("sessionId") for line in agent.read_text().splitlines() if line.strip()}
    text = agent.read_text()
    for old in named - {None}:
        text = text.replace(f'"{old}"', f'"{sessions[0].stem}"')
    agent.write_text(text)

    day = codex / "sessions" / "2025" / "09" / "25"
    day.mkdir(parents=True)
    rollouts: list[Path] = []
    with_meta = [p for p in corpus_files("codex-rollout") if _has_session_meta(p)]
    cwds = [tmp_path / "proj-other", project, project / "sub"]  # the first is not in the project
    for i, src in enumerate(corpus_files("codex-rollout")):
        dest = day / f"rollout-2025-09-25T10-00-{i:02d}-{_uuid(src.stem)}.jsonl"
        if src in with_meta:
            cwd = cwds[min(with_meta.index(src), len(cwds) - 1)]
            dest.write_bytes(_with_cwd(src.read_bytes(), str(cwd)))
            if cwd != cwds[0]:
                rollouts.append(dest)
        else:  # no session_meta, so no cwd: not anyone's
            shutil.copyfile(src, dest)
        planted.append(dest)
    shutil.copyfile(with_meta[-1], day / "not-a-rollout.jsonl")
    planted.append(day / "not-a-rollout.jsonl")
    for n, path in enumerate(sorted(planted, reverse=True)):  # mtimes run against the names
        os.utime(path, ns=(1_700_000_000_000_000_000 + n * 10**9,) * 2)
    return Home(project, claude, codex, sorted(sessions), sorted(rollouts), planted)


def _fingerprint(paths: list[Path]) -> dict[Path, tuple[str, int]]:
    return {p: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in paths}


def _dump(store: Store) -> list[str]:
    """Every row of the store file, as SQL."""
    with sqlite3.connect(store.path) as conn:
        return list(conn.iterdump())


def _stored(store: Store, session_id: int) -> list[tuple[str, str]]:
    return [(kind, json) for _, kind, json in store.load_json(session_id)[0]]


# -- discover -----------------------------------------------------------------------------------


@requires_corpus
def test_discover_finds_exactly_the_projects_sessions(home: Home) -> None:
    claude = discover("claude", home.claude, home.project)
    codex = discover("codex", home.codex, home.project)
    assert sorted(s.path for s in claude) == home.claude_sessions
    assert sorted(s.path for s in codex) == home.codex_sessions
    assert len(home.codex_sessions) == 2
    for sources, agent in ((claude, "claude"), (codex, "codex")):
        assert all(s.agent == agent and s.path.is_absolute() for s in sources)
        assert all(s.size == s.path.stat().st_size for s in sources)
        assert [s.path for s in sources] == sorted((s.path for s in sources), reverse=True)  # by mtime


@requires_corpus
def test_discover_orders_by_mtime_then_path(home: Home) -> None:
    for path in home.claude_sessions:
        os.utime(path, ns=(5, 5))
    os.utime(home.claude_sessions[0], ns=(9, 9))
    paths = [s.path for s in discover("claude", home.claude, home.project)]
    assert paths == [*home.claude_sessions[1:], home.claude_sessions[0]]


def test_discover_missing_directories_give_nothing(tmp_path: Path) -> None:
    for agent in ("claude", "codex"):
        assert discover(agent, tmp_path / "absent", tmp_path) == []
        assert discover(agent, tmp_path, tmp_path) == []


@requires_corpus
def test_discover_through_a_symlinked_project(home: Home, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(home.project)
    by_link_slug = home.claude / "projects" / claude_slug(link) / f"{_uuid('by-link')}.jsonl"
    by_link_slug.parent.mkdir(parents=True)
    shutil.copyfile(home.claude_sessions[0], by_link_slug)
    claude = {s.path for s in discover("claude", home.claude, link)}
    assert claude == {*home.claude_sessions, by_link_slug}  # the realpath's slug and the link's
    assert {s.path for s in discover("claude", home.claude, home.project)} == set(home.claude_sessions)
    assert {s.path for s in discover("codex", home.codex, link)} == set(home.codex_sessions)


def test_discover_long_claude_paths_by_prefix_and_cwd(tmp_path: Path) -> None:
    project = tmp_path.joinpath(*["d" * 40] * 6)
    twin = tmp_path.joinpath(*["d" * 40] * 5, "d" * 39 + "x")  # the same first 200 slug characters
    assert len(claude_slug(project)) > SLUG_MAX
    projects = tmp_path / ".claude" / "projects"

    def session(directory: str, cwd: Path) -> Path:
        path = projects / directory / f"{_uuid(directory + str(cwd))}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        line = {"type": "user", "cwd": str(cwd), "sessionId": "s", "message": {"content": "hi"}}
        path.write_bytes(msgspec.json.encode({"type": "summary", "summary": "t"}) + b"\n")
        path.write_bytes(path.read_bytes() + msgspec.json.encode(line) + b"\n")
        return path

    node = session(claude_slug(project), project)  # the hash Node builds compute
    prefix = claude_slug(project)[:SLUG_MAX]
    bun = session(prefix + "-1k2j3h4g5f", project)  # another build's hash
    other = session(prefix + "-zzzzzz", twin)  # a different project sharing the prefix
    assert {s.path for s in discover("claude", tmp_path / ".claude", project)} == {node, bun}
    assert {s.path for s in discover("claude", tmp_path / ".claude", twin)} == {other}


def test_discover_codex_cwd_rules(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    day = tmp_path / ".codex" / "sessions" / "2026" / "01" / "02"
    day.mkdir(parents=True)

    def rollout(name: str, *lines: Mapping[str, object]) -> Path:
        path = day / f"rollout-{name}.jsonl"
        path.write_bytes(b"".join(msgspec.json.encode(line) + b"\n" for line in lines))
        return path

    def meta(cwd: object) -> dict[str, object]:
        return {"timestamp": "t", "type": "session_meta", "payload": {"id": "x", "cwd": cwd}}

    turn = {"timestamp": "t", "type": "turn_context", "payload": {"cwd": str(project)}}
    inside = rollout("a", meta(str(project / "deep" / "er")))
    late = rollout("b", turn, meta(str(project)))  # the session_meta need not be the first line
    rollout("c", meta(str(project) + "-2"))  # a sibling sharing the prefix
    rollout("d", meta(str(tmp_path / "elsewhere")), meta(str(project)))  # only the first one counts
    rollout("e", meta(None), meta(str(project)))
    rollout("f", meta("relative/proj"))
    rollout("g", turn)  # no session_meta at all
    (day / "rollout-h.jsonl").write_bytes(b"not json\n")
    found = {s.path for s in discover("codex", tmp_path / ".codex", project)}
    assert found == {inside, late}


# -- import_source ------------------------------------------------------------------------------


@requires_corpus
def test_import_everything_once(home: Home, store: Store, tmp_path: Path) -> None:
    before = _fingerprint(home.planted)
    sources = home.sources()
    assert len(sources) == len(home.claude_sessions) + len(home.codex_sessions)
    outcomes = [import_source(store, source, worktree="main") for source in sources]
    assert all(o.created and not o.current for o in outcomes)
    assert len({o.session_id for o in outcomes}) == len(sources)
    assert store.count_sessions() == len(sources)

    with Store.open(tmp_path / "reference") as ref:
        for source, outcome in zip(sources, outcomes, strict=True):
            fmt = FORMAT_OF[source.agent]
            info = store.get_session(outcome.session_id)
            events, report = parse_file(source.path, fmt)
            assert info.name == (first_prompt_name(events) or source.path.stem)
            assert info.worktree == "main"
            fresh = ref.create_session().id
            expected = ingest_file(ref, fresh, source.path, fmt)
            assert outcome.appended == expected.appended == info.event_count
            assert _stored(store, outcome.session_id) == _stored(ref, fresh)
            assert (outcome.lines, outcome.skipped) == (report.lines, report.skipped_total)
            record = store.get_import(str(source.path))
            assert record is not None
            assert (record.session_id, record.agent, record.size) == (
                outcome.session_id,
                source.agent,
                source.size,
            )
    assert {store.get_session(o.session_id).name for o in outcomes} >= {"what is 2 + 2?"}

    sessions, dump = store.list_sessions(), _dump(store)
    again = [import_source(store, source, worktree="main") for source in home.sources()]
    assert all(o.current and not o.created and o.appended == 0 for o in again)
    assert [o.session_id for o in again] == [o.session_id for o in outcomes]
    assert store.list_sessions() == sessions
    assert _dump(store) == dump
    assert _fingerprint(home.planted) == before


def _split_point(data: bytes, torn: bool) -> int:
    """Where the first half of `data` ends: after a whole line, or in the middle of the next one."""
    lines = data.splitlines(keepends=True)
    end = sum(len(line) for line in lines[: len(lines) // 2])
    return end + len(lines[len(lines) // 2]) // 2 if torn else end


@requires_corpus
@pytest.mark.parametrize("torn", [False, True], ids=["whole-lines", "torn-line"])
@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_appended_lines_are_imported_into_the_same_session(
    agent: str, torn: bool, store: Store, tmp_path: Path
) -> None:
    fmt = FORMAT_OF["claude" if agent == "claude" else "codex"]
    src = max(corpus_files(fmt), key=lambda p: p.stat().st_size)
    data = src.read_bytes()
    path = tmp_path / f"{_uuid(src.name)}.jsonl"
    cut = _split_point(data, torn)
    path.write_bytes(data[:cut])
    source = Source(path, "claude" if agent == "claude" else "codex", cut)

    first = import_source(store, source)
    assert first.created and first.appended > 0
    with path.open("ab") as stream:
        stream.write(data[cut:])
    second = import_source(store, source)
    assert (second.session_id, second.created, second.current) == (first.session_id, False, False)

    with Store.open(tmp_path / "reference") as ref:
        whole = ref.create_session().id
        expected = ingest_file(ref, whole, path, fmt)
        assert first.appended + second.appended == expected.appended
        assert _stored(store, first.session_id) == _stored(ref, whole)
    record = store.get_import(str(path))
    assert record is not None and record.size == len(data)
    assert store.count_sessions() == 1
    third = import_source(store, source)
    assert third.current and third.appended == 0


@requires_corpus
def test_a_size_change_without_new_events_appends_nothing(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(corpus_files("claude-session")[0], path)
    source = Source(path, "claude", path.stat().st_size)
    first = import_source(store, source)
    rows = _stored(store, first.session_id)
    with path.open("ab") as stream:
        stream.write(b"\n\n")
    second = import_source(store, source)
    assert (second.session_id, second.appended, second.current) == (first.session_id, 0, False)
    assert _stored(store, first.session_id) == rows
    assert import_source(store, source).current


@requires_corpus
def test_a_session_continued_elsewhere_is_not_imported_into_again(store: Store, tmp_path: Path) -> None:
    """The file grew and the session gained events of its own: re-importing would duplicate, so it stops."""
    src = max(corpus_files("claude-session"), key=lambda p: p.stat().st_size)
    data = src.read_bytes()
    path = tmp_path / "s.jsonl"
    cut = _split_point(data, torn=False)
    path.write_bytes(data[:cut])
    source = Source(path, "claude", cut)
    first = import_source(store, source)
    store.append_events(first.session_id, [UserMessage(content="continued in azsd")])
    with path.open("ab") as stream:
        stream.write(data[cut:])
    rows = _stored(store, first.session_id)
    with pytest.raises(IngestError, match=f"S{first.session_id}, where it was imported, has changed since"):
        import_source(store, source)
    assert _stored(store, first.session_id) == rows  # nothing stored, nothing duplicated
    record = store.get_import(str(path))
    assert record is not None and record.size == cut


@requires_corpus
def test_deleted_session_is_imported_again(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(corpus_files("codex-rollout")[0], path)
    source = Source(path, "codex", path.stat().st_size)
    first = import_source(store, source)
    store.delete_session(first.session_id)
    assert store.get_import(str(path)) is None
    second = import_source(store, source)
    assert second.created and second.session_id != first.session_id
    assert second.appended == first.appended
    assert store.list_sessions()[0].id == second.session_id


@requires_corpus
def test_an_enclosing_rollback_undoes_the_whole_import(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(corpus_files("claude-session")[0], path)
    store.create_session("kept")
    with pytest.raises(RuntimeError), store.atomic():
        import_source(store, Source(path, "claude", 0))
        raise RuntimeError("after the import")
    assert [s.name for s in store.list_sessions()] == ["kept"]
    assert store.get_import(str(path)) is None
    assert import_source(store, Source(path, "claude", 0)).created


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty"),
        (b"hello\nworld\n", "not a JSONL file of any known agent format"),
        (b'[1, 2]\n{"a": 1}\n', "not a JSONL file of any known agent format"),
        (b'{"timestamp":"t","type":"session_meta","payload":{"cwd":"/w"}}\n', "codex-rollout file"),
        (b'{"type":"thread.started","thread_id":"t"}\n', "codex-exec-json file"),
    ],
)
def test_a_source_that_cannot_be_parsed_stores_nothing(
    content: bytes, message: str, store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(IngestError, match=message) as info:
        import_source(store, Source(path, "claude", len(content)))
    assert str(path) in str(info.value)
    assert not store.exists and not store.path.exists()  # not even the store file was made
    store.create_session("kept")
    with pytest.raises(IngestError):
        import_source(store, Source(path, "claude", len(content)))
    assert [s.name for s in store.list_sessions()] == ["kept"]
    assert store.get_import(str(path)) is None
    assert path.read_bytes() == content


def test_a_missing_or_unreadable_source_is_an_ingest_error(store: Store, tmp_path: Path) -> None:
    with pytest.raises(IngestError, match=r"gone\.jsonl"):
        import_source(store, Source(tmp_path / "gone.jsonl", "codex", 10))
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(IngestError, match=r"dir\.jsonl"):
        import_source(store, Source(tmp_path / "dir.jsonl", "codex", 10))
    assert not store.exists
