"""Usage read in place is kept: a second `usage --all` reads again only the files that changed.

:func:`azsd.ingest.in_place.read_in_place` runs here in the test's own thread (the files are too
small for worker processes), so counting the calls of `_read_one` counts the files parsed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.ingest import in_place
from tests.test_usage_counted import prompt, reply
from tests.test_usage_prices import write

SID = "00000001-0000-4000-8000-000000000000"


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths parsed by each read, in order (the reads kept start empty)."""
    monkeypatch.setattr(in_place, "_READS", in_place._Reads(in_place.KEPT_FILES))
    calls: list[str] = []
    real = in_place._read_one

    def spy(path: str, counted: object) -> object:
        calls.append(path)
        return real(path, counted)  # type: ignore[arg-type]

    monkeypatch.setattr(in_place, "_read_one", spy)
    yield calls


def session(path: Path, *tokens: int, first: int = 1) -> str:
    """A Claude transcript of one turn per figure of `tokens` (its input tokens; messages `msg_<first>`
    on), its mtime a minute ago."""
    lines = []
    for n, count in enumerate(tokens, start=first):
        at = f"2026-05-01T10:{n:02d}:00Z"
        lines += [prompt(SID, f"turn {n}", at), reply(SID, n, at, count)]
    write(path, lines)
    settled(path)
    return str(path)


def settled(path: Path, ago: float = 60.0) -> None:
    stamp = time.time() - ago
    os.utime(path, (stamp, stamp))


def inputs(paths: list[str]) -> int:
    rows, skipped = in_place.read_in_place(paths, lambda keys: set())
    assert not skipped
    return sum(row.usage.input for row in rows)


def test_an_unchanged_file_is_not_read_again(tmp_path: Path, parsed: list[str]) -> None:
    one, two = session(tmp_path / "a.jsonl", 100), session(tmp_path / "b.jsonl", 20, first=2)
    assert inputs([one, two]) == 120
    assert inputs([one, two]) == 120
    assert parsed == [one, two]


def test_a_grown_file_is_read_again_and_counts_what_it_gained(tmp_path: Path, parsed: list[str]) -> None:
    path = tmp_path / "a.jsonl"
    one = session(path, 100)
    assert inputs([one]) == 100
    session(path, 100, 7)
    assert inputs([one]) == 107
    assert parsed == [one, one]


def test_a_file_rewritten_to_the_same_size_is_read_again(tmp_path: Path, parsed: list[str]) -> None:
    path = tmp_path / "a.jsonl"
    one = session(path, 100)
    assert inputs([one]) == 100
    session(path, 900)  # as long, another figure, another mtime
    assert inputs([one]) == 900
    assert parsed == [one, one]


def test_a_file_changed_within_the_clock_tick_is_read_each_time(tmp_path: Path, parsed: list[str]) -> None:
    path = tmp_path / "a.jsonl"
    one = session(path, 100)
    settled(path, ago=0)  # it might change again with the same size and mtime: never kept
    assert inputs([one]) == 100
    assert inputs([one]) == 100
    assert parsed == [one, one]


def test_the_responses_counted_elsewhere_are_part_of_what_is_kept(tmp_path: Path, parsed: list[str]) -> None:
    one = session(tmp_path / "a.jsonl", 100, 5)
    assert inputs([one]) == 105
    rows, _ = in_place.read_in_place([one], lambda keys: {key for key in keys if key.endswith("_1")})
    assert sum(row.usage.input for row in rows) == 5  # read again, told which: msg_1 left out
    assert inputs([one]) == 105  # and what every response counted gave is still kept
    assert parsed == [one, one]


def test_the_reads_kept_are_bounded(tmp_path: Path) -> None:
    reads = in_place._Reads(2)
    stamp = (1, 1, 1, 0)
    for name in "abc":
        reads.put(name, stamp, frozenset(), (None, [], 0.0))
    assert reads.get("a", stamp, frozenset()) is None
    assert reads.get("c", stamp, frozenset()) is not None
