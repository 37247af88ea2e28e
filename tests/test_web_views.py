"""The web view's pure parts: transcript items, the sessions filter, agent text made visible, and the
usage figures the charts draw."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import msgspec

from azsd.events import (
    Compacting,
    Complete,
    Event,
    ToolCall,
    ToolResult,
    UserMessage,
    encode_event,
    event_kind,
)
from azsd.ipc.protocol import (
    RemoteSessionView,
    SessionView,
    UsagePeriodView,
    UsageReply,
    UsageView,
    WireEvent,
)
from azsd_client.web import charts, security
from azsd_client.web.views import Filters, clean, filter_sessions, transcript


def wire(events: list[Event]) -> list[WireEvent]:
    return [
        WireEvent(seq=i, kind=event_kind(e), data=encode_event(e).decode()) for i, e in enumerate(events, 1)
    ]


def test_tool_results_fold_into_their_calls_and_stray_ones_stand_alone() -> None:
    items = transcript(
        wire(
            [
                UserMessage(content="go"),
                ToolCall(tool_use_id="a", tool_name="Bash", input={"command": "ls"}),
                ToolCall(tool_use_id="b", tool_name="Read", input={"file_path": "/x"}),
                ToolResult(tool_use_id="b", tool_name="Read", content="nope", is_error=True),
                ToolResult(tool_use_id="a", tool_name="Bash", content="ok", is_error=False),
                ToolResult(tool_use_id="zz", tool_name="Bash", content="elsewhere", is_error=False),
                Compacting(),
                Complete(success=False, duration_ms=1, cost_usd=0.0),
            ]
        )
    )
    assert [(i.seq, i.kind) for i in items] == [
        (1, "UserMessage"),
        (2, "ToolCall"),
        (3, "ToolCall"),
        (6, "ToolResult"),
        (7, "Compacting"),
        (8, "Complete"),
    ]
    assert (items[1].result_seq, items[1].failed) == (5, False)
    assert (items[2].result_seq, items[2].failed) == (4, True)
    assert items[4].boundary and items[5].failed


def test_an_event_this_client_cannot_read_is_shown_by_its_kind() -> None:
    data = '{"TurnFailed":{"reason":"x"}}'
    (item,) = transcript([WireEvent(seq=4, kind="TurnFailed", data=data)])
    assert (item.view, item.kind, item.raw, item.failed) == (None, "TurnFailed", data, True)


def test_control_characters_are_made_visible() -> None:
    assert clean("a\x1b[2Jb\x07\r\u202e\u2066c\td\ne") == "a␛[2Jb␇␍\\u202e\\u2066c\td\ne"
    assert clean("\x9b31m\x7f") == "\\u009b31m␡"


def view(i: int, state: str = "ended", worktree: str = "main", name: str = "") -> SessionView:
    return SessionView(
        id=i, name=name, display_name=name or f"S{i}", worktree=worktree, created="2025-01-01 00:00:00",
        event_count=1, message_count=1, state=state,
    )  # fmt: skip


def test_the_filter_keeps_by_branch_state_agent_and_text() -> None:
    listed = [("/a", [view(3, "failed", "feat", "parser"), view(2), view(1, worktree="")]), ("/b", [view(1)])]
    agents = {("/a", 3): frozenset({"codex"}), ("/b", 1): frozenset({"claude"})}

    def kept(filters: Filters) -> list[tuple[str, int]]:
        return [(root, v.id) for root, v in filter_sessions(listed, filters, agents)]

    assert kept(Filters()) == [("/a", 3), ("/a", 2), ("/a", 1), ("/b", 1)]
    assert kept(Filters(worktree="feat")) == [("/a", 3)]
    assert kept(Filters(state="failed")) == [("/a", 3)]
    assert kept(Filters(agent="claude")) == [("/b", 1)]
    assert kept(Filters(text="PARS")) == [("/a", 3)]
    assert kept(Filters(text="s2")) == [("/a", 2)]
    assert kept(Filters(text="/b")) == [("/b", 1)]


def period(day: str, model: str, cost: float) -> UsagePeriodView:
    return UsagePeriodView(period=day, start=day, end=day, usage=UsageView(cost_usd=cost), model=model)


def test_cost_by_day_stacks_models_on_every_day() -> None:
    reply = UsageReply(
        sessions=[], worktrees=[], total=UsageView(), by="day",
        periods=[
            period("2025-10-02", "opus", 1.0), period("2025-10-01", "gpt-5", 0.5),
            period("2025-10-02", "gpt-5", 0.25),
        ],
    )  # fmt: skip
    assert charts.cost_by_day(reply) == {
        "labels": ["2025-10-01", "2025-10-02"],
        "datasets": [{"label": "gpt-5", "data": [0.5, 0.25]}, {"label": "opus", "data": [0.0, 1.0]}],
    }
    assert charts.day_totals(reply.periods) == {"2025-10-02": 1.25, "2025-10-01": 0.5}


def test_the_active_block_and_what_a_newer_daemon_adds_to_it() -> None:
    zone = timezone(timedelta(hours=2))
    start = datetime(2025, 10, 2, 14, 0, tzinfo=zone)

    def block(**extra: object) -> UsageReply:
        p = UsagePeriodView(
            period="2025-10-02 14:00", start=start.isoformat(), end=(start + timedelta(hours=5)).isoformat(),
            usage=UsageView(cost_usd=2.0), total_tokens=1000, turns=3,
        )  # fmt: skip
        return UsageReply(sessions=[], worktrees=[], total=UsageView(), by="block", periods=[p])

    now = start + timedelta(hours=1, minutes=30)
    found = charts.active_block(block(), now)
    assert found is not None and found.active and (found.elapsed_min, found.left_min) == (90, 210)
    assert found.cost == "$2.0000" and found.extra == ()
    later = charts.active_block(block(), start + timedelta(hours=6))
    assert later is not None and not later.active and later.left_min == 0
    assert charts.active_block(UsageReply(sessions=[], worktrees=[], total=UsageView()), now) is None

    # A period type with more fields (issue 26's burn rate and projection) is shown field by field.
    class Newer(UsagePeriodView, frozen=True):
        burn_usd_per_hour: float | None = None

    fields = msgspec.structs.asdict(block().periods[0])
    newer = msgspec.structs.replace(block(), periods=[Newer(**fields, burn_usd_per_hour=1.5)])
    shown = charts.active_block(newer, now)
    assert shown is not None and shown.extra == (("burn usd per hour", "1.5000"),)

    # … or the reply itself, with a value of its own.
    class Projection(msgspec.Struct, frozen=True):
        cost_usd: float
        tokens: int

    class NewerReply(UsageReply, frozen=True):
        projection: Projection | None = None

    fields = msgspec.structs.asdict(block())
    reply = NewerReply(**fields, projection=Projection(cost_usd=6.25, tokens=4200))
    shown = charts.active_block(reply, now)
    assert shown is not None and shown.extra == (("projection", "cost_usd 6.2500, tokens 4200"),)


def test_team_usage_sums_per_identity() -> None:
    def remote(who: str, cost: float, source: str = "reported") -> RemoteSessionView:
        return RemoteSessionView(
            uuid="u", identity=who, repository="r", root="/r", local_id=1, name="", worktree="", created="",
            updated="", state="ended", event_count=1,
            usage=UsageView(input=10, output=5, cost_usd=cost, cost_source=source),
        )  # fmt: skip

    rows = charts.team_usage([remote("ann@a", 1.0), remote("bob@b", 3.0, "estimated"), remote("ann@a", 0.5)])
    assert [(r.identity, r.sessions, r.tokens, r.cost_usd, r.estimated) for r in rows] == [
        ("bob@b", 1, 15, 3.0, True),
        ("ann@a", 2, 30, 1.5, False),
    ]


def test_a_csrf_token_is_bound_to_its_token_and_purpose() -> None:
    token = security.new_token()
    assert len(token) >= 43 and token != security.new_token()
    made = security.csrf_token(token, "rename S3")
    assert security.check_csrf(token, "rename S3", made)
    assert not security.check_csrf(token, "delete S3", made)
    assert not security.check_csrf(security.new_token(), "rename S3", made)
    assert security.cookie_name(41873) == "azs_web_41873" and security.cookie_name(None) == "azs_web"
