"""Fuzzing: hostile JSONL in live follows.

Live follows are fed bad lines (garbage, torn, invalid UTF-8, non-objects, unknown types, a
200 MB line, deep nesting, out-of-range numbers) between real corpus lines: the daemon keeps
serving, `skipped` counts exactly the bad lines written, the real lines' events are stored once and
in order, and rows stored before the bad input never change.

Bounded for CI; `AZSD_SOAK=1` (`make soak`) multiplies the example counts by 20.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from azsd.events import AssistantText, Complete, decode_event
from azsd.ingest.file import parse_file
from azsd.ingest.parsers import JSONL_FORMATS, make_parser
from tests.daemon_fixture import DaemonProc
from tests.reliability.common import scaled
from tests.reliability.fuzz_follow import (
    _corpus_pick,
    aline,
    bad_line,
    blank,
    blank_line,
    data_of,
    follow_daemon,
    follow_root,
    start_follow,
    texts,
    unfollow,
    view_of,
    wait_read_to,
    wall_time_filled,
    write_lines,
)
from tests.reliability.fuzz_helpers import WAIT_S, event_rows, new_session, status, stored

__all__ = ["follow_daemon", "follow_root"]  # the fixtures, re-exported for pytest


@pytest.mark.parametrize("fmt", JSONL_FORMATS)  # the corpus's formats (Aider's samples: tests/data)
def test_bad_lines_between_corpus_lines(follow_root: tuple[DaemonProc, Path, int], fmt: str) -> None:
    d, root, sid = follow_root
    pick = _corpus_pick(fmt)
    if pick is None:
        pytest.skip(f"no suitable {fmt} file in the shared corpus (is ../shared/corpus there?)")
    want = data_of(parse_file(pick.path, fmt)[0])
    prefix_lines = pick.lines[: pick.prefix]
    parser = make_parser(fmt)
    prefix_want = data_of([e for line in prefix_lines for e in parser.feed(line)])
    for seed in range(scaled(1, 20)):
        if seed:  # soak: the same file again, with other bad lines, into a new session
            sid = new_session(d, root)
        rng = random.Random(f"{fmt}/{seed}")
        target = root / f"agent-{seed}.jsonl"
        target.write_bytes(b"")
        start_follow(d, root, sid, target, fmt)

        # Clean lines first: what they store must survive everything after.
        write_lines(target, prefix_lines, rng)
        wait_read_to(d, target, target.stat().st_size)
        assert wall_time_filled(stored(d, root, sid), prefix_want) == prefix_want
        before = event_rows(root, sid)
        assert len(before) == len(prefix_want)

        # Then the rest of the corpus, each line preceded by bad and blank lines; the last line
        # (possibly the turn's final event, which ends the follow) comes last.
        plan: list[bytes] = []
        bad = 0
        for line in pick.lines[pick.prefix :]:
            for _ in range(rng.choice([0, 0, 1, 2, 3])):
                if rng.random() < 0.2:
                    plan.append(blank_line(rng) + b"\n")
                else:
                    junk = bad_line(rng, len(plan))
                    bad += not blank(junk)
                    plan.append(junk + b"\n")
            plan.append(line)
        write_lines(target, plan, rng)
        wait_read_to(d, target, target.stat().st_size)
        view = unfollow(d, root, target)  # (ended already if the last line was the final event)
        got = wall_time_filled(stored(d, root, sid), want)
        assert got == want, "the corpus lines' events, in order, exactly once"
        assert view.skipped == bad, f"skipped {view.skipped}, but {bad} bad lines were written"
        assert view.lines == target.read_bytes().count(b"\n")
        assert event_rows(root, sid)[: len(before)] == before
        status(d)


def test_a_200_mb_line_is_skipped_in_bounded_memory(follow_root: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = follow_root
    target = root / "huge.jsonl"
    target.write_bytes(aline("before"))
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(aline("before")))
    assert texts(stored(d, root, sid)) == ["before"]
    before = event_rows(root, sid)
    chunk = b"x" * (1 << 20)
    try:
        with open(target, "ab") as out:
            out.write(
                b'{"type":"assistant","session_id":"s","message":{"id":"big","content":[{"type":"text","text":"'
            )
            for i in range(200):  # 200 MiB, written while the daemon reads: torn many times over
                out.write(chunk)
                if i % 50 == 0:
                    out.flush()
                    time.sleep(0.05)
            out.write(b'"}]}}\n')
            out.write(b"[1,2]\n\n")  # one more bad line, one blank
            out.write(aline("after"))
        wait_read_to(d, target, target.stat().st_size, timeout=4 * WAIT_S)
        view = unfollow(d, root, target)
        assert texts(stored(d, root, sid)) == ["before", "after"]
        assert view.skipped == 2 and view.lines == 5, view
        assert event_rows(root, sid)[:1] == before
        status(d)
        peak_kb = d.peak_rss_kb()
        assert peak_kb < 250 * 1024, f"the daemon's peak RSS reached {peak_kb} kB reading a 200 MB line"
    finally:
        target.unlink(missing_ok=True)  # 200 MB: do not leave it for the module's end


def test_a_deeply_nested_json_line_does_not_stall_the_follow(
    follow_root: tuple[DaemonProc, Path, int],
) -> None:
    """A 4 kB line of nested arrays is one bad line, like any other: the lines after it are stored."""
    d, root, sid = follow_root
    target = root / "agent.jsonl"
    nested = b'{"type":"assistant","x":' + b"[" * 2000 + b"]" * 2000 + b"}\n"
    content = aline("before") + nested + aline("after")
    target.write_bytes(content)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(content))
    view = unfollow(d, root, target)
    assert texts(stored(d, root, sid)) == ["before", "after"]
    assert view.skipped == 1, view
    status(d)


@pytest.mark.parametrize("duration", [b"9223372036854775808", b"1e300"])
def test_an_out_of_range_number_in_a_line_loses_no_other_line(
    follow_root: tuple[DaemonProc, Path, int], duration: bytes
) -> None:
    """A `result` whose duration_ms does not fit SQLite's INTEGER (2**63, or a float's worth): at
    most that line is lost (stored clamped, or skipped and counted), never the lines before it."""
    d, root, sid = follow_root
    target = root / "agent.jsonl"
    result = (
        b'{"type":"result","subtype":"success","session_id":"s","is_error":false,"duration_ms":%s,'
        b'"total_cost_usd":0.5}\n' % duration
    )
    content = aline("before") + result
    target.write_bytes(content)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(content))
    got = [decode_event(e) for e in stored(d, root, sid)]
    view = view_of(d, target)
    assert got[:1] == [AssistantText(text="before")], got
    assert (len(got) == 2 and isinstance(got[1], Complete)) or (len(got) == 1 and view.skipped == 1), (
        got,
        view,
    )
    status(d)
