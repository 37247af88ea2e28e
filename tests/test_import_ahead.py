"""Files read ahead of the import's writer, in worker processes (`ReadAhead`, `prepare_file`): the
results come back in the order of the sources whatever worker finishes first, a file a worker fails
on comes back as its error and is imported (or reported) the usual way, and an import through them
leaves the store that importing the files one by one leaves (sessions, events, usage, the messages
each run counted, context blocks, search), the files bigger than `SMALL_FILE_BYTES` (created alone)
among them, and those bigger than `AHEAD_FILE_BYTES` (imported in chunks, not read ahead)."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from azsd.errors import IngestError
from azsd.ingest import import_ahead, import_batch, prepare
from azsd.ingest.import_ahead import Job, ReadAhead
from azsd.ingest.import_batch import expect_imports, import_many, import_one
from azsd.ingest.importer import ImportOutcome, import_source
from azsd.ingest.prepare import PreparedFile, prepare_file
from azsd.ingest.sources import Source
from azsd.store import Store, store_path
from tests.conftest import CORPUS, requires_corpus
from tests.test_import_batch import _state, _summaries

pytestmark = requires_corpus

SESSIONS = CORPUS / "claude-session"
#: The file copied as a sub-agent's transcript (`project`).
SUBAGENT = SESSIONS / "claudeless__v2.1.29_hook-stop__d266fdf5.jsonl"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A Claude project directory holding every session file of the corpus, twice over (the copy of
    each counts none of its messages again), and one with its sub-agents under `<id>/subagents/`."""
    project = tmp_path / "projects" / "-p"
    (project / "copies").mkdir(parents=True)
    for path in sorted(SESSIONS.glob("*.jsonl")):
        shutil.copyfile(path, project / path.name)
        shutil.copyfile(path, project / "copies" / path.name)
    parent = project / "claudeless__v2.1.29_compact-command__8aa54c1d.jsonl"
    subagents = project / parent.stem / "subagents"
    subagents.mkdir(parents=True)
    shutil.copyfile(SUBAGENT, subagents / "agent-a1.jsonl")
    return project


Sizes = tuple[list[Path], list[Path]]


@pytest.fixture(params=["small", "big", "mixed", "many events"])
def sizes(request: pytest.FixtureRequest, project: Path, monkeypatch: pytest.MonkeyPatch) -> Sizes:
    """The files of `project` small (each run created together), big (each created alone), mixed
    (some too big to read ahead: imported in chunks), or big and of too many events to be created
    alone (imported in chunks, after all). The files to be created from what was read ahead
    (`import_source` is not called for them; it is for the copies, and the file copied as a
    sub-agent's, whose messages were counted before), and those to be imported in chunks."""
    if request.param == "small":
        return [], []
    monkeypatch.setattr(import_batch, "SMALL_FILE_BYTES", 0)
    paths = [path for path in sorted(project.glob("*.jsonl")) if path.name != SUBAGENT.name]
    if request.param == "many events":
        monkeypatch.setattr(import_batch, "ALONE_EVENTS", 0)
        return [], paths
    if request.param == "mixed":
        bound = sorted(path.stat().st_size for path in paths)[len(paths) // 2]
        monkeypatch.setattr(import_batch, "AHEAD_FILE_BYTES", bound)
        return [path for path in paths if path.stat().st_size <= bound], [
            path for path in paths if path.stat().st_size > bound
        ]
    return paths, []


def _sources(project: Path) -> list[Source]:
    paths = sorted(project.glob("*.jsonl")) + sorted((project / "copies").glob("*.jsonl"))
    return [Source(path, "claude", path.stat().st_size) for path in paths]


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files the writer imports the usual way from now on (`import_source`), as it does."""
    usual: list[Path] = []

    def spy(store: Store, source: Source, *args: Any, **kwargs: Any) -> ImportOutcome:
        usual.append(source.path)
        return import_source(store, source, *args, **kwargs)

    monkeypatch.setattr(import_batch, "import_source", spy)
    return usual


def _tables(store: Store) -> list[Any]:
    """What `_state` does not show: the rows beside the events, as stored."""
    with closing(sqlite3.connect(f"file:{store_path(store.root)}?mode=ro", uri=True)) as conn:
        return [
            conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3").fetchall()
            for table in ("azsd_usage_claims", "azsd_context")
        ] + [
            conn.execute(f"SELECT {columns} FROM {table} ORDER BY 1, 2, 3").fetchall()
            for table, columns in (
                ("azsd_search_docsize", "rowid, *"),
                ("azsd_usage", "session_id, source, model, slot, first_at, last_at, turns, cost_source"),
            )
        ]


def _singly(store: Store, source: Source) -> ImportOutcome | str:
    try:
        return import_source(store, source, "main")
    except IngestError as exc:
        return str(exc)


def test_an_import_read_ahead_by_workers_leaves_what_importing_file_by_file_leaves(
    tmp_path: Path, project: Path, sizes: Sizes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(import_ahead, "POOL_MIN_BYTES", 0)  # the workers read even this little
    sources = _sources(project)
    with Store.open(tmp_path / "one") as one, Store.open(tmp_path / "many") as many:
        expected = [_singly(one, source) for source in sources]
        usual = _spy(monkeypatch)
        got = [o if isinstance(o, ImportOutcome) else str(o) for o in import_many(many, sources, "main")]
        assert got == expected
        assert not set(usual) & set(sizes[0]) and set(sizes[1]) <= set(usual)
        assert sum(isinstance(o, ImportOutcome) and o.created for o in got) == len(sources)
        assert _state(many) == _state(one)
        assert _tables(many) == _tables(one)
        assert _summaries(many) == _summaries(one)
        counted = many.usage_by_session()
        copies = [
            o.session_id
            for s, o in zip(sources, got, strict=True)
            if isinstance(o, ImportOutcome) and s.path.parent.name == "copies"
        ]
        assert any(counted.get(sid) for sid in counted if sid not in copies)
        assert not any(counted[sid].usage.input for sid in copies if sid in counted)  # counted once
        again = import_many(many, sources, "main")  # nothing new: each is current
        assert all(isinstance(o, ImportOutcome) and o.current for o in again)
        with sources[0].path.open("ab") as out:  # it grows: only what is new is imported
            out.write((SESSIONS / "agentcmd__full-session-two.jsonl").read_bytes())
        grown = [Source(s.path, "claude", s.path.stat().st_size) for s in sources]
        expected = [_singly(one, source) for source in grown]
        assert import_many(many, grown, "main") == expected
        assert [o.appended > 0 for o in expected if isinstance(o, ImportOutcome)] == [True] + [False] * (
            len(grown) - 1
        )
        assert _state(many) == _state(one)


def test_read_ahead_hands_each_file_back_in_order_and_an_error_in_its_place(tmp_path: Path) -> None:
    good = sorted(SESSIONS.glob("*.jsonl"))[:3]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "an agent line"}\n')
    gone = tmp_path / "gone.jsonl"
    files: list[Path | None] = [good[0], None, bad, good[1], gone, None, good[2]]
    jobs: list[Job] = [None if f is None else (str(f), "claude", 1 << 20) for f in files]
    with ReadAhead(jobs, workers=True) as ahead:
        assert ahead.in_workers
        found = [ahead.next() for _ in jobs]
    assert [type(f).__name__ for f in found] == [
        "PreparedFile", "NoneType", "IngestError", "PreparedFile", "IngestError", "NoneType", "PreparedFile",
    ]  # fmt: skip
    assert "not a JSONL file of any known agent format" in str(found[2])
    for f, prepared in zip(files, found, strict=True):
        if isinstance(prepared, PreparedFile):
            assert f is not None and prepared.path == str(f)
            assert prepared == prepare_file(str(f), "claude")  # the same rows as read here


def test_a_file_a_worker_fails_on_is_reported_and_the_others_are_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(import_ahead, "POOL_MIN_BYTES", 0)
    originals = sorted(SESSIONS.glob("*.jsonl"))[:4]
    paths = [tmp_path / p.name for p in originals]
    for path, original in zip(paths, originals, strict=True):
        shutil.copyfile(original, path)
    paths[1].write_bytes(b"\xff\xfe not even text\n")
    sources = [Source(path, "claude", path.stat().st_size) for path in paths]
    with Store.open(tmp_path / "one") as one, Store.open(tmp_path / "many") as many:
        expected = [_singly(one, source) for source in sources]
        got = [o if isinstance(o, ImportOutcome) else str(o) for o in import_many(many, sources, "main")]
        assert got == expected
        assert [isinstance(o, str) for o in got] == [False, True, False, False]
        assert _state(many) == _state(one)
        shutil.copyfile(originals[1], paths[1])  # put right: imported next time
        sources[1] = Source(paths[1], "claude", paths[1].stat().st_size)
        again = import_many(many, sources, "main")
        assert [isinstance(o, ImportOutcome) and o.created for o in again] == [False, True, False, False]


def test_files_listed_are_read_before_they_are_asked_for_and_again_when_they_changed_since(
    tmp_path: Path, project: Path, sizes: Sizes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ImportSources` notes the files it lists (`expect_imports`) and reads none (a client may only
    be looking); the first import request starts the workers, which read on through the listing, so
    the next request takes what they read, but a file that changed since is read again as it is now."""
    monkeypatch.setattr(import_ahead, "POOL_MIN_BYTES", 0)
    sources = _sources(project)
    with Store.open(tmp_path / "one") as one, Store.open(tmp_path / "many") as many:
        expect_imports(many, sources)
        listed = import_ahead._LISTED[str(many.root)]
        assert not listed.read  # nothing read for a listing (of the files not too big to be read ahead)
        assert len(listed.waiting) == sum(s.size <= import_batch.AHEAD_FILE_BYTES for s in sources)
        half = len(sources) // 2  # in two requests, as `azs import` sends them
        first = import_many(many, sources[:half], "main")
        for future, _ in list(listed.read.values()):
            future.result()  # read for the listing's next request (as far as the read-ahead goes)
        assert listed.read and not set(listed.read) & {str(s.path) for s in sources[:half]}
        changed = next(s for s in sources[half:] if str(s.path) in listed.read)
        with changed.path.open("ab") as out:  # it grows after the read-ahead read it
            out.write((SESSIONS / "agentcmd__full-session-two.jsonl").read_bytes())
        rest = [Source(s.path, "claude", s.path.stat().st_size) for s in sources[half:]]
        expected = [_singly(one, source) for source in [*sources[:half], *rest]]
        got = first + import_many(many, rest, "main")
        assert [o if isinstance(o, ImportOutcome) else str(o) for o in got] == expected
        assert _state(many) == _state(one)
        assert _tables(many) == _tables(one)


def test_files_listed_and_asked_for_one_by_one_are_taken_as_read_ahead(
    tmp_path: Path, project: Path, sizes: Sizes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`azs import` sends a big file alone (`ImportSession`: `import_one`): one the listing named is
    taken as the workers read it, and stored as importing it file by file stores it."""
    monkeypatch.setattr(import_ahead, "POOL_MIN_BYTES", 0)
    sources = _sources(project)
    with Store.open(tmp_path / "one") as one, Store.open(tmp_path / "many") as many:
        expected = [import_source(one, source, "main") for source in sources]
        expect_imports(many, sources)
        usual = _spy(monkeypatch)
        assert [import_one(many, source, "main") for source in sources] == expected
        assert not set(usual) & set(sizes[0]) and set(sizes[1]) <= set(usual)
        assert _state(many) == _state(one)
        assert _tables(many) == _tables(one)
        assert _summaries(many) == _summaries(one)
        assert all(import_one(many, source, "main").current for source in sources)


def test_a_listing_no_import_follows_is_let_go(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A listing whose import requests do not come within `IDLE_S` is not read for the next import."""
    monkeypatch.setattr(import_ahead, "POOL_MIN_BYTES", 0)
    root = str(project)
    jobs = [(str(s.path), s.agent, s.size) for s in _sources(project)]
    import_ahead.expect(root, jobs)
    listed = import_ahead._LISTED[root]
    monkeypatch.setattr(listed, "used", listed.used - import_ahead.IDLE_S - 1)
    with import_ahead.ReadAhead(jobs[:1], workers=False, root=root) as ahead:
        assert ahead.next() is not None
    assert root not in import_ahead._LISTED and not listed.read


def test_a_file_that_grew_past_what_is_read_whole_is_imported_in_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file listed small that grew big before it was read is not read whole into memory (a
    207 MB file listed at 1 KB took 922 MB): the read-ahead gives it back, and the writer imports
    it the usual way, in chunks, with the same outcome."""
    originals = sorted(SESSIONS.glob("*.jsonl"))[:3]
    paths = [tmp_path / p.name for p in originals]
    for path, original in zip(paths, originals, strict=True):
        shutil.copyfile(original, path)
    sources = [Source(path, "claude", path.stat().st_size) for path in paths]
    monkeypatch.setattr(prepare, "LARGEST_BYTES", max(s.size for s in sources))
    with paths[1].open("ab") as out:  # it grows after the listing
        out.write((SESSIONS / "agentcmd__full-session-two.jsonl").read_bytes())
    with pytest.raises(IngestError, match="more than a file read whole"):
        prepare_file(str(paths[1]), "claude")
    with Store.open(tmp_path / "one") as one, Store.open(tmp_path / "many") as many:
        expected = [_singly(one, source) for source in sources]
        got = [o if isinstance(o, ImportOutcome) else str(o) for o in import_many(many, sources, "main")]
        assert got == expected and all(isinstance(o, ImportOutcome) for o in got)
        assert _state(many) == _state(one)
