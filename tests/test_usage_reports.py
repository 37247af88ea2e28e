"""Usage by period and by model: the stored parts (azsd_usage), their migration, and `azs usage --by`.

The periods are checked against what the corpus files themselves say (the UTC days of the lines that
carry usage, the models they name), and the grouping rules (local days, ISO weeks, months, Claude's
5-hour blocks) on parts made by hand.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from azsd.days import local_zone, parse_day
from azsd.errors import BadRequestError, RemoteError
from azsd.ingest.parsers import make_parser
from azsd.model import Usage, UsagePart, UsageRow
from azsd.server.usage import periods
from azsd.store import Store, store_path
from azsd_client import Client
from tests.conftest import CORPUS, requires_corpus
from tests.test_cli import Azs, azs
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

CLAUDE = CORPUS / "claude-session" / "agentcmd__full-session-two.jsonl"
CODEX = (
    CORPUS
    / "codex-rollout"
    / "agentcmd__rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl"
)
CODEX_EXEC = CORPUS / "codex-exec-json" / "rust-claude-codes__multi_command.jsonl"
UTC_ZONE = ZoneInfo("UTC")


def row(at: str, model: str = "claude-m", session: int = 1, tokens: int = 1) -> UsageRow:
    t = datetime.fromisoformat(at).replace(tzinfo=UTC).timestamp()
    return UsageRow(
        session_id=session, source=f"run-{session}", model=model, slot=int(t // 900) * 900, first=t, last=t,
        usage=Usage(input=tokens), cost_usd=0.01 * tokens, cost_source="estimated",
    )  # fmt: skip


def labels(
    rows: list[UsageRow], by: str, tz: ZoneInfo = UTC_ZONE, *, by_model: bool = False
) -> list[tuple[str, int]]:
    return [(v.period, v.usage.input) for v in periods(rows, by, tz, by_model=by_model, names={})]


# -- the grouping rules ---------------------------------------------------------------------------


def test_blocks_follow_ccusages_rule() -> None:
    rows = [
        row("2025-10-02T10:07:00"),  # a block starts at 10:00
        row("2025-10-02T14:59:00"),  # 4 h 59 after its start: same block
        row("2025-10-02T15:30:00"),  # past 15:00: a new block, from 15:00
        row("2025-10-02T21:00:00", model="claude-n"),  # 5 h 30 idle: a new block
        row("2025-10-02T21:10:00", session=2),  # another session's turn, in the same block
    ]
    assert labels(rows, "block") == [
        ("2025-10-02 10:00", 2),
        ("2025-10-02 15:00", 1),
        ("2025-10-02 21:00", 2),
    ]
    (late,) = [
        v for v in periods(rows, "block", UTC_ZONE, by_model=False, names={}) if v.period.endswith("21:00")
    ]
    assert (
        late.models == ["claude-m", "claude-n"]
        and late.end == "2025-10-03T02:00:00+00:00"
        and late.turns == 2
    )
    assert labels(rows, "block", by_model=True)[-2:] == [("2025-10-02 21:00", 1), ("2025-10-02 21:00", 1)]


def test_blocks_are_claudes_and_other_agents_keep_theirs_beside_them() -> None:
    """Issue 34: a Codex turn at 08:00:30 moved a Claude block's start from 09:00 to 08:00 and added
    its tokens to it (and to `--token-limit max`)."""
    rows = [
        row("2025-10-02T08:00:30", model="gpt-5.5", tokens=500),
        row("2025-10-02T09:10:00", tokens=7),
        row("2025-10-02T12:00:00", tokens=3),
        UsageRow(
            session_id=3,
            source="/p/opencode.db#ses_1",
            model="anthropic/claude-sonnet-4-5",
            slot=0,
            first=0.0,
            last=0.0,
            usage=Usage(input=9),
            cost_usd=None,
            cost_source=None,
        ),  # an OpenCode turn on a Claude model: not Claude Code's billing
    ]
    found = periods(rows, "block", UTC_ZONE, by_model=False, names={})
    assert [(v.period, v.agent, v.usage.input) for v in found] == [
        ("1970-01-01 00:00 opencode", "opencode", 9),
        ("2025-10-02 08:00 codex", "codex", 500),
        ("2025-10-02 09:00", "claude", 10),
    ]


def test_days_weeks_and_months_are_local() -> None:
    rows = [row("2025-09-28T23:50:00"), row("2025-09-29T00:10:00"), row("2025-10-31T20:00:00")]
    assert labels(rows, "day") == [("2025-09-28", 1), ("2025-09-29", 1), ("2025-10-31", 1)]
    assert labels(rows, "week") == [("2025-W39", 1), ("2025-W40", 1), ("2025-W44", 1)]  # 09-29 is a Monday
    kolkata = ZoneInfo("Asia/Kolkata")  # +05:30: 23:50 UTC is 05:20 the next day, 20:00 is 01:30 in November
    assert labels(rows, "day", kolkata) == [("2025-09-29", 2), ("2025-11-01", 1)]
    assert labels(rows, "month", kolkata) == [("2025-09", 2), ("2025-11", 1)]
    (week,) = [v for v in periods(rows, "week", kolkata, by_model=False, names={}) if v.period == "2025-W40"]
    assert (week.start, week.end) == ("2025-09-29T00:00:00+05:30", "2025-10-06T00:00:00+05:30")


def test_bad_arguments_are_clear() -> None:
    assert parse_day("20251002", "since") == parse_day("2025-10-02", "since")
    with pytest.raises(BadRequestError, match="since 'yesterday' is not a date"):
        parse_day("yesterday", "since")
    with pytest.raises(BadRequestError, match="unknown time zone 'Mars/Olympus'"):
        local_zone("Mars/Olympus")
    with pytest.raises(BadRequestError, match="unknown time zone 'xxxx"):  # (a name too long for a path)
        local_zone("x" * 5000)


# -- what parsers and the store keep -------------------------------------------------------------


def test_a_message_is_counted_once_per_message_id_and_request_id() -> None:
    parser = make_parser("claude-session")
    message = {"id": "m1", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 5, "output_tokens": 2}}
    line: dict[str, object] = {"type": "assistant", "sessionId": "s", "timestamp": "2025-10-02T10:00:00Z"}
    line |= {"requestId": "r1", "message": message}
    parser.feed(json.dumps(line).encode())
    parser.feed(json.dumps(line).encode())  # the same message and request, another content block
    assert parser.report.usage.input == 5
    parser.feed(json.dumps({**line, "requestId": "r2"}).encode())  # another request: counted, as by ccusage
    assert parser.report.usage.input == 10
    (part,) = parser.report.tally.parts()
    assert (
        part.model == "claude-sonnet-4-5" and part.slot == datetime(2025, 10, 2, 10, tzinfo=UTC).timestamp()
    )


def test_the_old_usage_table_is_migrated_with_every_row(root: Path) -> None:
    with Store.open(root) as store:
        sid = store.create_session("s").id
    with sqlite3.connect(store_path(root)) as conn:  # the table as azsd wrote it before models and times
        conn.execute("DROP TABLE azsd_usage")
        conn.execute(
            "CREATE TABLE azsd_usage (session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, "
            "source TEXT NOT NULL, input INTEGER NOT NULL DEFAULT 0, output INTEGER NOT NULL DEFAULT 0, "
            "cache_read INTEGER NOT NULL DEFAULT 0, cache_write INTEGER NOT NULL DEFAULT 0, "
            "reasoning INTEGER NOT NULL DEFAULT 0, cost_usd REAL, "
            "updated TEXT NOT NULL DEFAULT (datetime('now')), PRIMARY KEY (session_id, source))"
        )
        conn.executemany(
            "INSERT INTO azsd_usage (session_id, source, input, output, cost_usd, updated) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (sid, "run-a", 10, 2, 0.5, "2025-10-02 10:07:00"),
                (sid, "run-b", 5, 1, None, "2025-10-03 01:00:00"),
            ],
        )
    with Store.open(root) as store:
        total = store.session_usage(sid)
        assert (total.usage.input, total.usage.output, total.cost_usd, total.turns) == (15, 3, 0.5, 2)
        rows = store.usage_rows()
        assert [(r.source, r.model, r.cost_source) for r in rows] == [
            ("run-a", "", "estimated"),
            ("run-b", "", None),
        ]
        assert rows[0].first == datetime(2025, 10, 2, 10, 7, tzinfo=UTC).timestamp()
        store.record_usage(sid, "run-b", [UsagePart(model="m", usage=Usage(input=7))], at=rows[1].first)
        assert store.session_usage(sid).usage.input == 17  # replaced, not added


# -- end to end ------------------------------------------------------------------------------------


def usage_days(path: Path) -> set[str]:
    """The UTC days of the lines of `path` that carry usage (Claude messages, Codex token counts)."""
    days = set()
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        message, payload = obj.get("message"), obj.get("payload")
        carries = isinstance(message, dict) and "usage" in message
        carries |= (
            isinstance(payload, dict) and payload.get("type") == "token_count" and bool(payload.get("info"))
        )
        if carries:
            days.add(obj["timestamp"][:10])
    return days


@requires_corpus
def test_usage_by_period_across_claude_and_codex(azs: Azs, client: Client, worktree: Path) -> None:
    claude = client.create_session(worktree, "claude").session.id
    codex = client.create_session(worktree, "codex").session.id
    client.ingest_file(worktree, claude, CLAUDE)
    client.ingest_file(worktree, codex, CODEX)
    whole = client.usage(worktree, timezone="UTC")
    for by in ("day", "week", "month", "session", "block"):
        reply = client.usage(worktree, by=by, by_model=by == "day", timezone="UTC")
        assert reply.by == by and reply.total == whole.total and reply.sessions == whole.sessions
        for kind in ("input", "output", "cache_read", "cache_write"):
            assert sum(getattr(v.usage, kind) for v in reply.periods) == getattr(whole.total, kind), (
                by,
                kind,
            )
    by_day = client.usage(worktree, by="day", by_model=True, timezone="UTC").periods
    assert {v.period for v in by_day} == usage_days(CLAUDE) | usage_days(CODEX)
    assert {v.model for v in by_day} == {"claude-sonnet-4-5-20250929", "gpt-5-codex"}
    sessions = client.usage(worktree, by="session", timezone="UTC").periods
    assert [(v.session, v.models) for v in sessions] == [
        (codex, ["gpt-5-codex"]),
        (claude, ["claude-sonnet-4-5-20250929"]),
    ]  # fmt: skip  (the rollout is from September, the Claude session from October)
    day = by_day[0]
    narrowed = client.usage(
        worktree, by="day", since=day.period, until=day.period.replace("-", ""), timezone="UTC"
    )
    assert [v.period for v in narrowed.periods] == [day.period] and narrowed.total == day.usage
    with pytest.raises(Exception, match="expected one of day, week, month, session, block"):
        client.usage(worktree, by="year")

    (shown,) = azs.json("usage", "--by", "month", "--timezone", "UTC")
    assert shown["by"] == "month" and [m["period"] for m in shown["periods"]] == ["2025-09", "2025-10"]
    assert set(shown["periods"][0]) >= {"period", "start", "end", "models", "usage", "total_tokens"}
    lines = azs.ok("usage", "--by", "month", "--timezone", "UTC").splitlines()
    assert lines[0].split()[:2] == ["month", "models"] and lines[1].split()[:2] == ["2025-09", "gpt-5-codex"]
    assert (
        lines[1].split()[-1].startswith("~$") and lines[-1].split()[0] == "total"
    )  # Codex costs are estimates
    code, _, err = azs("usage", "--by", "day", "--since", "2025-10-05", "--until", "2025-10-01")
    assert code == 1 and "since 2025-10-05 is after until 2025-10-01" in err


@requires_corpus
def test_a_follow_records_the_model_it_is_told(client: Client, worktree: Path, tmp_path: Path) -> None:
    path = tmp_path / "exec.jsonl"
    shutil.copyfile(CODEX_EXEC, path)  # `codex exec --json` names no model
    sid = client.create_session(worktree, "exec").session.id
    client.follow(worktree, sid, path, model="gpt-5-codex")
    try:
        client.unfollow(worktree, path)  # stores what the file holds now
    except RemoteError as exc:  # the follow already ended by itself, at the turn's final event
        assert exc.code == "not_found", exc
    deadline = time.monotonic() + 20
    while not (periods := client.usage(worktree, by="session", by_model=True).periods):
        assert time.monotonic() < deadline, "the follow recorded no usage"
        time.sleep(0.05)
    (view,) = periods
    assert view.model == "gpt-5-codex" and view.usage.cost_source == "estimated" and view.usage.cost_usd > 0
