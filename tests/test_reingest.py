"""Ingesting a second agent run into a session keeps its `Init`; ingesting the same run again stores nothing.

Real stores (SQLite files in a temporary directory) and the corpus's stream-json runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from azsd.compact import prepare_for_store
from azsd.events import AssistantText, Event, Init
from azsd.ingest.file import ingest_file, overlap_prefix_len, parse_file
from azsd.store import Store
from tests.conftest import CORPUS, requires_corpus

FMT = "claude-stream-json"
FIRST = CORPUS / FMT / "claude_code-elixir__read_file.jsonl"
SECOND = CORPUS / FMT / "vincent__stream_question_2.1.226.jsonl"


def prepared(path: Path) -> list[Event]:
    return prepare_for_store(parse_file(path, FMT)[0])


@requires_corpus
def test_a_second_run_ingested_into_a_session_keeps_its_init(tmp_path: Path) -> None:
    first, second = prepared(FIRST), prepared(SECOND)
    assert isinstance(first[0], Init) and isinstance(second[0], Init) and first[0] != second[0]
    with Store.open(tmp_path) as store:
        sid = store.create_session().id
        ingest_file(store, sid, FIRST, FMT)

        report = ingest_file(store, sid, SECOND, FMT)

        assert (report.appended, report.duplicates) == (len(second), 0)
        stored = store.load_events(sid).plain()
        assert stored == first + second
        assert [e for e in stored if isinstance(e, Init)] == [first[0], second[0]]


@requires_corpus
@pytest.mark.parametrize("runs", [[FIRST], [FIRST, SECOND]], ids=["one-run", "two-runs"])
def test_ingesting_the_last_run_again_stores_nothing(tmp_path: Path, runs: list[Path]) -> None:
    with Store.open(tmp_path) as store:
        sid = store.create_session().id
        for run in runs:
            ingest_file(store, sid, run, FMT)
        before = store.load_events(sid).plain()

        again = ingest_file(store, sid, runs[-1], FMT)

        assert (again.appended, again.duplicates) == (0, len(prepared(runs[-1])))
        assert store.load_events(sid).plain() == before


def test_an_init_is_dropped_only_in_front_of_what_the_session_holds() -> None:
    a, b, c = (AssistantText(text=t) for t in "abc")
    init = Init(cwd="/", model="m")
    assert overlap_prefix_len([init, a, b], [init, c]) == 0  # a new run, with the same Init: kept
    assert overlap_prefix_len([a], [init]) == 0  # a run that only began: its Init is news
    assert overlap_prefix_len([init, a, b], [init, b, c]) == 2  # the same run announced again
    assert overlap_prefix_len([init, a], [init, a]) == 2
