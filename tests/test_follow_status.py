"""How `azs status` shows follows (issue 24): one word for each state, as in `--json`; each reason on
the line right under its follow; follows that ended long ago left out (`--all` keeps them). Pure
rendering, with the clock given."""

from __future__ import annotations

import doctest
from datetime import UTC, datetime

import msgspec

import azsd_client.render.status
from azsd.ipc.protocol import FollowView, StatusReply
from azsd_client.render.status import follow_line, follow_rows, recent_follows, status_lines
from azsd_client.render.term import plain_lines
from azsd_client.render.text import Style

NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)


def view(session: int, state: str, reason: str = "", ended: str | None = None) -> FollowView:
    return FollowView(
        root="/p", session=session, path=f"/t/{session}.jsonl", format="claude-stream-json", offset=10,
        lines=1, skipped=0, active=state != "ended", last_activity="", ended=ended, state=state,
        reason=reason,
    )  # fmt: skip


def test_docstring_examples_run() -> None:
    result = doctest.testmod(azsd_client.render.status)
    assert result.failed == 0 and result.attempted >= 3


def test_each_reason_is_under_its_own_follow() -> None:
    died = "its agent (pid 42) exited (killed by SIGKILL) before the turn ended"
    idle = "no program has it open for writing, and the file was idle for 30 s"
    follows = [
        view(1, "following"),
        view(2, "waiting", "the file does not exist (yet): waiting for it to appear"),
        view(3, "following"),
        view(4, "ended", died, "2026-11-26 11:59:00"),
        view(5, "ended", idle, "2026-11-26 11:58:00"),
    ]
    lines = [line.rstrip() for line in plain_lines(follow_rows(follows, Style()), width=200)]
    rows = {n: i for i, line in enumerate(lines) for n in range(1, 6) if f"/t/{n}.jsonl" in line}
    assert lines[rows[2] + 1].strip() == "↳ the file does not exist (yet): waiting for it to appear"
    assert lines[rows[4] + 1].strip().startswith("↳ its agent (pid 42) exited")
    assert lines[rows[5] + 1].strip().startswith("↳ no program has it open")
    assert rows[3] == rows[2] + 2  # the row after a reason is the next follow
    assert "● following" in lines[rows[1]] and "active" not in "".join(lines)
    assert len({line.index("/t/") for line in lines if "/t/" in line}) == 1  # one table: aligned


def test_follows_that_ended_long_ago_leave_status_and_all_keeps_them() -> None:
    follows = [
        view(1, "following"),
        view(2, "ended", "unfollowed", "2026-11-26 11:55:00"),
        view(3, "ended", "unfollowed", "2026-11-26 10:00:00"),
        view(4, "ended", "unfollowed", "2026-11-20 10:00:00"),
    ]
    recent = recent_follows(follows, NOW)
    assert [v.session for v in recent] == [1, 2]
    reply = StatusReply(pid=1, version="x", uptime_s=1.0, stores=[], follows=recent)
    text = "\n".join(plain_lines(status_lines(reply, "ipc://x", Style(), hidden=2), width=200))
    assert "follows: 2 (1 following, 1 ended)" in text
    assert "2 follows ended earlier: `azs status --all` shows them" in text
    everything = msgspec.structs.replace(reply, follows=follows)
    assert "3 ended" in "\n".join(plain_lines(status_lines(everything, "ipc://x", Style()), width=200))


def test_an_idle_follow_has_its_word_and_its_reason() -> None:
    """`idle`: still followed (shown however long ago it went quiet), its session not running."""
    why = (
        "no program has it open for writing and the file was idle for 30 s: "
        "its session does not show running until the file grows again"
    )
    follows = [view(1, "following"), view(2, "idle", why)]
    assert recent_follows(follows, NOW) == follows
    reply = StatusReply(pid=1, version="x", uptime_s=1.0, stores=[], follows=follows)
    lines = [line.rstrip() for line in plain_lines(status_lines(reply, "ipc://x", Style()), width=200)]
    assert "follows: 2 (1 following, 1 idle)" in lines
    [at] = [i for i, line in enumerate(lines) if "/t/2.jsonl" in line]
    assert "◌ idle" in lines[at] and lines[at + 1].strip() == f"↳ {why}"
    assert plain_lines([follow_line(follows[1], Style())])[0].endswith(f" — idle: {why}")
