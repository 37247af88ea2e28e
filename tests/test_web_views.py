"""The web view's pure parts: transcript items, the sessions filter, agent text made visible, and the
usage figures the charts draw."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from azsd.events import (
    AssistantText,
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
from azsd_client.web.views import Filters, clean, filter_sessions, session_rows, transcript


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
    assert charts.day_totals(reply.periods) == {"2025-10-02": "$1.2500", "2025-10-01": "$0.5000"}


def test_unpriced_costs_are_unknown_never_zero() -> None:
    """A model without a price (`cost_source: "unpriced"`) costs "?", a day partly unpriced "+?"."""
    unpriced = UsageView(input=900, cost_source="unpriced", unpriced_tokens=900)
    days = [
        UsagePeriodView(period="2025-10-01", start="", end="", usage=unpriced, model="mystery-9"),
        period("2025-10-02", "opus", 1.0),
        UsagePeriodView(period="2025-10-02", start="", end="", usage=unpriced, model="mystery-9"),
    ]
    assert charts.day_totals(days) == {"2025-10-01": "?", "2025-10-02": "$1.0000+?"}
    assert list(charts.day_totals(days)) == ["2025-10-02", "2025-10-01"]  # newest first, as the table shows
    assert charts.cost(unpriced) == "?" and charts.cost(UsageView()) == "$0.0000"
    unknown = msgspec.structs.replace(view(1), usage=unpriced, cost_source="unpriced")
    assert session_rows([("/a", unknown)], {}, 1000)[0].cost == "?"


def test_a_row_is_dated_by_its_latest_turns_real_time_else_its_making() -> None:
    """Issue 25: imported sessions all looked made "just now"; `last_activity` is their real time."""
    now = datetime(2025, 1, 3, 12, 0, tzinfo=UTC)
    ran = msgspec.structs.replace(view(1), last_activity="2025-01-03 09:00:00")
    rows = session_rows([("/a", ran), ("/a", view(2))], {("/a", 1): frozenset({"aider"})}, 1000, now)
    assert [(r.active, r.agents) for r in rows] == [("3 h ago", "aider"), ("2 days ago", "")]
    assert rows[0].when == "2025-01-03 09:00:00 UTC" and "no turn's time" in rows[1].when


def test_a_failed_turns_outcome_is_shown_as_a_failure() -> None:
    """What `azs run` stores when the agent fails (issue 25): an "Error: …" answer, a failed Complete."""
    items = transcript(
        wire(
            [
                UserMessage(content="go"),
                AssistantText(text="Error: the agent exited (exit status 3)\nfatal: gone"),
                Complete(success=False, duration_ms=1200, cost_usd=0.0),
                AssistantText(text="An Error: in the middle is the agent's own text"),
            ]
        )
    )
    said, end, own = items[1], items[2], items[3]
    assert said.failed and "failed" in said.flags and said.view is not None
    assert said.view.heading == "✗ Error" and said.view.text is not None and "fatal: gone" in said.view.text
    assert end.failed and not own.failed and own.view is not None and own.view.heading == "Assistant"


def test_the_latest_block_shows_the_daemons_burn_rate_and_projection() -> None:
    def block(active: bool, source: str = "reported") -> UsageReply:
        p = UsagePeriodView(
            period="2025-10-02 14:00", start="2025-10-02T14:00:00+02:00", end="2025-10-02T19:00:00+02:00",
            usage=UsageView(cost_usd=2.0, cost_source=source), total_tokens=1000, turns=3, active=active,
            tokens_per_minute=11.1, usd_per_hour=1.5, remaining_minutes=95.0 if active else 0.0,
            projected_tokens=2055, projected_usd=4.375,
        )  # fmt: skip
        older = msgspec.structs.replace(p, period="2025-10-01 09:00", start="2025-10-01T09:00:00+02:00")
        return UsageReply(sessions=[], worktrees=[], total=UsageView(), by="block", periods=[older, p])

    found = charts.active_block(block(True))
    assert found is not None and found.period.period == "2025-10-02 14:00" and found.period.active
    assert (found.cost, found.per_hour, found.projected) == ("$2.0000", "$1.5000", "$4.3750")
    assert (found.left, found.end) == ("1 h 35 min", "19:00")
    estimated = charts.active_block(block(False, "estimated"))
    assert estimated is not None and not estimated.period.active and estimated.per_hour == "~$1.5000"
    assert charts.active_block(UsageReply(sessions=[], worktrees=[], total=UsageView())) is None


def test_team_usage_is_the_databases_per_person_with_who_pushed_as_whom() -> None:
    def remote(owner: str, who: str) -> RemoteSessionView:
        return RemoteSessionView(
            uuid="u", identity=who, repository="r", root="/r", local_id=1, name="", worktree="", created="",
            updated="", state="ended", event_count=1, owner=owner,
        )  # fmt: skip

    def person(owner: str, cost: float, source: str = "reported") -> UsagePeriodView:
        usage = UsageView(input=10, output=5, cost_usd=cost, cost_source=source)
        return UsagePeriodView(period=owner, start="", end="", usage=usage, total_tokens=15)

    people = UsageReply(
        sessions=[], worktrees=[], total=UsageView(), by="person",
        periods=[person("ann", 1.5), person("bob", 3.0, "estimated"), person("cy", 0.0, "unpriced")],
    )  # fmt: skip
    sessions = [
        remote("ann", "ann@a"),
        remote("bob", "bob@b"),
        remote("ann", "ann@c"),
        remote("ann", "ann@a"),
    ]
    rows = charts.team_usage(people, sessions)
    assert [(r.owner, r.identities, r.sessions, r.tokens, r.cost) for r in rows] == [
        ("bob", "bob@b", 1, 15, "~$3.0000"),
        ("ann", "ann@a, ann@c", 3, 15, "$1.5000"),
        ("cy", "", 0, 15, "?"),
    ]


def test_a_csrf_token_is_bound_to_its_token_and_purpose() -> None:
    token = security.new_token()
    assert len(token) >= 43 and token != security.new_token()
    made = security.csrf_token(token, "rename S3")
    assert security.check_csrf(token, "rename S3", made)
    assert not security.check_csrf(token, "delete S3", made)
    assert not security.check_csrf(security.new_token(), "rename S3", made)
    assert security.cookie_name(41873) == "azs_web_41873" and security.cookie_name(None) == "azs_web"
