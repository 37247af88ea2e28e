"""The real Aider (tests/agent_versions.json) run headless against the fake model, and what azsd makes
of the history it writes: one session per run, usage as Aider itself reported it (its ``Tokens:``
lines), nothing counted twice however the history comes in.
"""

from __future__ import annotations

import pytest

from azsd.events import ToolCall, ToolResult
from azsd.ingest.parsers.aider import NOT_IN_HISTORY
from tests.daemon_fixture import daemon
from tests.fake_model import FakeModel, Reply, text
from tests.real_others import AgentWorld, agent_world, aider_tokens, model
from tests.test_real_opencode import watched
from tests.test_run import wait_for

__all__ = ["agent_world", "daemon", "model", "watched"]  # the fixtures, re-exported for pytest


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])
def test_each_run_is_a_session_whose_usage_is_what_aider_reported(
    agent_world: AgentWorld, model: FakeModel, stream: bool
) -> None:
    world = agent_world
    for n in (1, 2):
        model.script(Reply([text(f"Answer {n}.")], input_tokens=700 + n, output_tokens=9 + n))
        done = world.aider(f"question {n}", *([] if stream else ["--no-stream"]))
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    history = world.aider_history.read_text()
    reported = aider_tokens(history)
    assert len(reported) == 2, history
    world.import_json("aider")
    for session, (sent, received, cost) in zip((1, 2), reported, strict=True):
        view = world.view(session)
        assert view.usage is not None, view
        assert (view.usage.input, view.usage.output) == (sent, received)
        assert view.usage.cost_usd == pytest.approx(cost, abs=5e-5)  # Aider prints 4 decimals
        (usage,) = world.client.usage(world.root, session).sessions
        assert usage.turns == 1
        assert (usage.usage.input, usage.usage.output) == (sent, received)  # the tally the reports read
    again = world.import_json("aider")
    assert not [line for line in again if line.get("created")]  # nothing new, nothing twice
    total = world.client.usage(world.root).total
    assert (total.input, total.output) == (sum(r[0] for r in reported), sum(r[1] for r in reported))
    assert [r.get("stream") is True for r in model.requests] == [stream, stream]


def test_a_run_command_says_that_aider_kept_its_output_out_of_the_history(agent_world: AgentWorld) -> None:
    world = agent_world
    done = world.aider("/run echo hello-from-run")
    assert done.returncode == 0 and "hello-from-run" in done.stdout, done.stdout[-2000:]
    after = world.aider_history.read_text().split("#### /run echo hello-from-run", 1)[1]
    assert "hello-from-run" not in after  # Aider's choice: the output went to the terminal only
    world.import_json("aider")
    events = world.raw_events(1)
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert call.tool_name == "Bash" and call.input == {"command": "echo hello-from-run"}
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.content == NOT_IN_HISTORY  # said, not an empty result that reads as "(no output)"


def test_an_aider_run_is_in_the_store_with_no_command(watched: AgentWorld, model: FakeModel) -> None:
    world = watched
    assert world.azs("new", "a store the daemon knows").returncode == 0  # Aider keeps no home: its worktree
    model.script(Reply([text("Watched answer.")], input_tokens=321, output_tokens=9))
    done = world.aider("a watched question")
    assert done.returncode == 0, done.stdout[-2000:]
    ((sent, received, _),) = aider_tokens(world.aider_history.read_text())

    def imported() -> bool:
        views = world.client.list_sessions(world.root, with_usage=True).sessions
        return any(v.usage is not None and (v.usage.input, v.usage.output) == (sent, received) for v in views)

    wait_for(imported, "the run, imported by the daemon's watch", timeout=10)
