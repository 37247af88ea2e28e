"""A reader's session index after a commit (issue 39): what this process's writer changed is re-read
session by session (azsd.store.changes); anything else (AZUREAL's commits, a rollback, WAL) reads
the whole list again. Whatever the mix, the reader lists what a freshly opened Store lists."""

from __future__ import annotations

import random
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from azsd.events import AssistantText, Complete, UserMessage
from azsd.model import SessionInfo
from azsd.store import Store, changes, store_path
from azsd.store.changes import ChangeLog, change_counter


def _fresh(root: Path) -> list[SessionInfo]:
    with Store.open(root, reader=True) as fresh:
        return fresh.list_sessions()


def _made(root: Path, n: int) -> None:
    with Store.open(root) as store, store.atomic(create=True):
        for i in range(n):
            sid = store.create_session(f"s{i}", "main" if i % 2 else "feat").id
            store.append_events(sid, [UserMessage(content=f"p{i}"), AssistantText(text="a")])


def test_the_writers_changes_are_read_again_session_by_session(tmp_path: Path) -> None:
    _made(tmp_path, 50)
    with Store.open(tmp_path, reader=True) as reader, Store.open(tmp_path) as writer:
        before = reader.list_sessions()
        index = reader._index
        writer.rename_session(7, "renamed")
        writer.append_events(
            3, [UserMessage(content="again"), Complete(success=True, duration_ms=5, cost_usd=0.01)]
        )
        after = reader.list_sessions()
        assert reader._index is index  # not read again whole
        assert after == _fresh(tmp_path)
        assert after[0].id == 3 and after[0].event_count == 4  # latest activity first
        assert next(i for i in after if i.id == 7).name == "renamed"
        unchanged = {i.id: i for i in before}
        assert all(unchanged[i.id] is i for i in after if i.id not in (3, 7))  # the rest kept as they were
        writer.delete_session(9)
        created = writer.create_session("new one").id
        assert reader.list_sessions() == _fresh(tmp_path) and reader._index is index
        assert created in {i.id for i in reader.list_sessions()} and 9 not in {
            i.id for i in reader.list_sessions()
        }


def test_another_programs_commit_reads_the_whole_list_again(tmp_path: Path) -> None:
    _made(tmp_path, 20)
    with Store.open(tmp_path, reader=True) as reader, Store.open(tmp_path) as writer:
        reader.list_sessions()
        index = reader._index
        writer.rename_session(2, "ours")
        with closing(sqlite3.connect(store_path(tmp_path))) as azureal:  # AZUREAL, another connection
            azureal.execute("UPDATE sessions SET name = 'theirs' WHERE id = 4")
            azureal.commit()
        listed = reader.list_sessions()
        assert reader._index is not index  # a commit it cannot account for: read again
        assert listed == _fresh(tmp_path)
        assert {i.id: i.name for i in listed}[4] == "theirs" and {i.id: i.name for i in listed}[2] == "ours"


def test_a_rolled_back_savepoint_makes_the_next_commit_touch_everything(tmp_path: Path) -> None:
    _made(tmp_path, 10)
    with Store.open(tmp_path, reader=True) as reader, Store.open(tmp_path) as writer:
        reader.list_sessions()
        index = reader._index
        with writer.atomic():
            writer.rename_session(1, "kept")
            with pytest.raises(RuntimeError), writer.atomic():
                writer.rename_session(2, "rolled back")
                raise RuntimeError("no")
        assert reader.list_sessions() == _fresh(tmp_path)
        assert reader._index is not index


def test_mixed_writes_of_ours_and_others_always_list_as_a_fresh_store(tmp_path: Path) -> None:
    _made(tmp_path, 30)
    rng = random.Random(39)
    with Store.open(tmp_path, reader=True) as reader, Store.open(tmp_path) as writer:
        reader.list_sessions()
        for step in range(120):
            ids = [i.id for i in _fresh(tmp_path)]
            match rng.randrange(8):
                case 0:
                    writer.create_session(f"new {step}", rng.choice(["main", "feat", ""]))
                case 1:
                    writer.rename_session(rng.choice(ids), f"name {step}")
                case 2:
                    writer.append_events(rng.choice(ids), [UserMessage(content=f"q{step}")])
                case 3:
                    writer.mark_completed(rng.choice(ids), rng.random() < 0.5, step, 0.0)
                case 4:
                    writer.set_archived(rng.choice(ids), rng.random() < 0.5)
                case 5 if len(ids) > 5:
                    writer.delete_session(rng.choice(ids))
                case 6:
                    writer.fork_session(rng.choice(ids), 1)
                case _:
                    with closing(sqlite3.connect(store_path(tmp_path))) as other:
                        other.execute(
                            "UPDATE sessions SET name = ? WHERE id = ?", (f"other {step}", rng.choice(ids))
                        )
                        other.commit()
            assert reader.list_sessions() == _fresh(tmp_path), f"step {step}"
            assert reader.list_sessions(archived="exclude") == [i for i in _fresh(tmp_path) if not i.archived]


def test_the_change_log_says_only_what_it_knows() -> None:
    log = ChangeLog()
    log.record(3, frozenset({1}))
    log.record(3, frozenset({2}))  # a commit that wrote nothing files under the same counter
    assert log.since(2, 3) == {1, 2}
    log.record(4, None)
    assert log.since(2, 4) is None and log.since(4, 4) == set() and log.since(5, 4) is None


def test_the_change_counter_is_read_through_sqlites_own_descriptor_and_not_in_wal(tmp_path: Path) -> None:
    _made(tmp_path, 1)
    path = store_path(tmp_path)
    file_id = (path.stat().st_dev, path.stat().st_ino)
    assert change_counter(path, file_id) is None  # no connection holds it: nothing of ours opens it
    with Store.open(tmp_path) as writer:
        writer.list_sessions()
        first = change_counter(path, file_id)
        assert first is not None
        writer.rename_session(1, "x")
        assert change_counter(path, file_id) == first + 1
        Path(f"{path}-wal").write_bytes(b"")
        assert change_counter(path, file_id) is None
        Path(f"{path}-wal").unlink()


def test_a_log_lives_while_a_store_holds_its_file(tmp_path: Path) -> None:
    _made(tmp_path, 1)
    path = store_path(tmp_path)
    file_id = (path.stat().st_dev, path.stat().st_ino)
    with Store.open(tmp_path) as writer:
        writer.rename_session(1, "y")
        assert file_id in changes._LOGS
        with Store.open(tmp_path, reader=True) as reader:
            reader.list_sessions()
        assert file_id in changes._LOGS  # the writer still holds it
    assert file_id not in changes._LOGS  # a file later given the same inode starts afresh
