"""`azs run` when the agent fails: it dies mid-turn, prints no result, is missing, or is stopped by
Ctrl-C; the stored turn stays truthful.

Against the real daemon, `azs` and tests/fake_agent.py, through the harness of tests/test_run.py.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from azsd.events import AssistantText, Complete, UserMessage
from tests.conftest import requires_corpus
from tests.test_run import CLAUDE, TIMEOUT_S, World, corpus, daemon, outcome, parsed, wait_for, world

__all__ = ["daemon", "world"]  # the fixtures, re-exported for pytest

pytestmark = [pytest.mark.corpus, requires_corpus]


def test_an_agent_that_dies_mid_turn_leaves_a_failed_partial_turn(world: World, tmp_path: Path) -> None:
    source = corpus(CLAUDE)
    half = tmp_path / "half.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    half.write_bytes(b"".join(lines[: len(lines) // 2]))
    expected = parsed(half, "claude-stream-json")
    assert outcome(expected) is None and expected
    world.configure(replay=half, options=("--stderr", "fatal: the model went away", "--exit", "3"))

    done = world.azs("run", "half a turn")

    assert done.returncode == 1, world.explain(done)
    assert "without finishing the turn" in done.stderr and "exit status 3" in done.stderr
    assert "fatal: the model went away" in done.stderr
    *events, said, end = world.events()
    assert events == [UserMessage(content="half a turn"), *expected]
    assert world.raw_events()[-1].duration_ms > 0  # type: ignore[union-attr]  # (events() zeroes times)
    # issue 25: the outcome is stored where it happened (as AZUREAL stores a failed Codex turn)
    assert said == AssistantText(
        text="Error: the agent exited without finishing the turn (exit status 3)\nfatal: the model went away"
    )
    assert isinstance(end, Complete) and not end.success
    assert world.view().state == "failed"
    shown = world.azs("show", "S1").stdout
    assert "✗ Error: the agent exited without finishing the turn (exit status 3)" in shown
    assert "fatal: the model went away" in shown and "✗ failed after" in shown
    [kept] = world.turn_files(1)
    assert kept.read_bytes() == half.read_bytes() and str(kept) in done.stderr
    assert world.follows() == []
    [ended] = [v for v in world.client.status().follows if v.path == str(kept)]  # said as it was:
    assert (
        ended.reason.startswith("its agent (pid ")
        and "exited (exit status 3) before the turn ended" in ended.reason
    )


def test_an_agent_that_prints_no_result_says_so_in_the_transcript(world: World, tmp_path: Path) -> None:
    """Issue 25: a turn whose agent printed garbage showed as a bare prompt (only the badge said ✗)."""
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"this is not JSON\n")
    world.configure(replay=garbage, options=("--stderr", "warning: odd output"))

    done = world.azs("run", "say something")

    assert done.returncode == 1, world.explain(done)
    events = world.events()
    assert events[0] == UserMessage(content="say something")
    assert events[-2] == AssistantText(
        text="Error: the agent printed no result (exit status 0)\nwarning: odd output"
    )
    assert isinstance(events[-1], Complete) and not events[-1].success
    exported = world.azs("export", "S1").stdout
    assert "the agent printed no result (exit status 0)" in exported
    [turn] = json.loads("[" + world.azs("--json", "log", "S1").stdout.strip().replace("\n", ",") + "]")
    assert turn["outcome"] == "failed" and turn["error"] == "the agent printed no result (exit status 0)"


def test_a_missing_agent_program_fails_before_anything_is_stored(world: World) -> None:
    world.configure(claude=[str(world.root / "no-such-claude")])

    done = world.azs("run", "hello")

    assert done.returncode == 1
    assert "claude-command" in done.stderr
    assert world.client.list_sessions(world.root).sessions == []


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["INT", "TERM"]
)
def test_ctrl_c_stops_the_agent_and_keeps_a_truthful_partial_turn(
    world: World, signum: int, status: int
) -> None:
    source = corpus(CLAUDE)
    full = parsed(source, "claude-stream-json")
    assert len(full) >= 6
    world.configure(replay=source, options=("--delay", "0.3"))
    process = world.spawn("run", "a long one")

    def stored() -> int:
        return len(world.events()) if world.client.list_sessions(world.root).total else 0

    try:
        wait_for(lambda: stored() >= 4, "the turn's first events stored")
        process.send_signal(signum)
        out, err = process.communicate(timeout=TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == status, f"{out}\n{err}"
    assert "interrupted" in err and "marked failed" in err
    events = world.events()
    assert events[0] == UserMessage(content="a long one")
    *turn, said, end = events[1:]
    assert 3 <= len(turn) < len(full) and turn == full[: len(turn)], "the stored turn is not a prefix"
    assert not any(isinstance(e, Complete) for e in turn)
    assert isinstance(said, AssistantText) and said.text.startswith("Error: interrupted: stopped the agent (")
    assert isinstance(end, Complete) and not end.success
    assert world.view().state == "failed"
    [record] = world.records()
    with pytest.raises(ProcessLookupError):
        os.kill(record["pid"], 0)  # stopped, and reaped by azs
    assert world.follows() == []
