"""The real OpenCode (tests/agent_versions.json) run headless against the fake model, and what azsd
makes of what it wrote: sessions that read as the user lived them, usage equal to OpenCode's own.

OpenCode 1.x keeps one assistant message per model *step* (a tool call and its result, then the next
request), all answering one user message: a turn is the user's message and every step after it.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from azsd.errors import AzsdError
from azsd.events import AssistantText
from tests.daemon_fixture import daemon, daemon_in_tmpdir
from tests.fake_model import FakeModel, Reply, text, tool
from tests.real_agents import agent_bin, opencode_env
from tests.real_others import AgentWorld, agent_world, model
from tests.test_run import wait_for

__all__ = ["agent_world", "daemon", "model"]  # the fixtures, re-exported for pytest


def steps(model: FakeModel, n: int) -> None:
    """A turn of `n` model steps: `n - 1` shell commands, then an answer."""
    replies = [
        Reply([text(f"step {i}"), tool("bash", command=f"echo step-{i}", description=f"step {i}")],
              input_tokens=1000 + i, output_tokens=10 + i, cache_read=100 * i)
        for i in range(1, n)
    ]  # fmt: skip
    model.script(*replies, Reply([text("All done.")], input_tokens=2000, output_tokens=40, cache_read=500))


def only_session(world: AgentWorld) -> dict[str, Any]:
    done = world.azs("--json", "ls")
    assert done.returncode == 0, world.explain(done)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(rows) == 1, rows
    session: dict[str, Any] = rows[0]
    return session


def test_a_session_of_several_steps_is_one_turn_whose_cost_is_opencodes(
    agent_world: AgentWorld, model: FakeModel
) -> None:
    world = agent_world
    steps(model, 3)
    done = world.opencode("run", "run two commands")
    assert done.returncode == 0, done.stderr[-2000:]
    assert model.pending() == 0, "OpenCode did not take every step"
    (session_id,) = world.opencode_sessions()
    tokens_in, tokens_out, cache_read, cost = world.opencode_totals(session_id)
    world.import_json("opencode", "--data-dir", str(world.opencode_dir))
    view = world.view(1)
    assert view.usage is not None
    assert (view.usage.input, view.usage.output, view.usage.cache_read) == (tokens_in, tokens_out, cache_read)
    assert view.usage.cost_usd == pytest.approx(cost)
    assert view.name == model.title  # OpenCode's own title, not the prompt it keeps in quotes
    session = only_session(world)
    assert session["usage"]["cost_usd"] == pytest.approx(cost)  # the whole session's, not one step's
    assert session["state"] != "running"
    (usage,) = world.client.usage(world.root, 1).sessions
    assert usage.turns == 1  # one prompt, three steps


def test_a_fork_is_linked_to_its_session_and_its_copies_are_counted_once(
    agent_world: AgentWorld, model: FakeModel
) -> None:
    world = agent_world
    model.script(Reply([text("First answer.")], input_tokens=1000, output_tokens=30, cache_read=200))
    assert world.opencode("run", "first prompt").returncode == 0
    model.script(Reply([text("Second answer.")], input_tokens=1500, output_tokens=20, cache_read=300))
    done = world.opencode("run", "--continue", "--fork", "second prompt")
    assert done.returncode == 0, done.stderr[-2000:]
    _, fork = world.opencode_sessions()
    parent = world.opencode_rows("SELECT parent_id FROM session WHERE id = ?", fork)
    assert parent in ([(None,)], [("",)])  # OpenCode names no parent
    world.import_json("opencode", "--data-dir", str(world.opencode_dir))
    first, second = world.view(1), world.view(2)
    assert second.parent == first.id  # a fork, though OpenCode names no parent
    assert world.client.get_session(world.root, 1).session.forks == (2,)
    # what the model was asked for, once: the fork's copy of the first answer is the original's
    usage = world.client.usage(world.root)
    assert (usage.total.input, usage.total.output) == (1000 - 200 + 1500 - 300, 50), usage.total
    assert second.usage is not None and (second.usage.input, second.usage.output) == (1200, 20)
    ls = world.azs("--json", "ls")
    rows = {row["id"]: row for row in map(json.loads, ls.stdout.splitlines())}
    assert rows[2]["parent"] == 1
    assert rows[1]["forks"] == [2]  # both sides of the lineage, as `show` says them


def test_the_store_stays_out_of_opencodes_snapshots(agent_world: AgentWorld, model: FakeModel) -> None:
    world = agent_world
    assert world.azs("new", "before").returncode == 0  # the store exists, and changes while OpenCode runs
    (world.root / "notes.txt").write_text("a file of the project\n")
    model.script(
        Reply([tool("bash", command="sleep 2; echo hi >> notes.txt", description="append")]),
        Reply([text("Appended.")], input_tokens=950),
    )

    def meanwhile() -> None:  # the daemon writes the store while the step runs, as it does live
        wait_for(lambda: model.sent, "the step's command to start")
        time.sleep(0.5)
        assert world.azs("new", "during").returncode == 0

    writer = threading.Thread(target=meanwhile)
    writer.start()
    done = world.opencode("run", "append to the notes")
    writer.join()
    assert done.returncode == 0, done.stderr[-2000:]
    assert model.pending() == 0
    world.import_json("opencode", "--data-dir", str(world.opencode_dir))
    patched = [
        json.loads(data).get("files", [])
        for (data,) in world.opencode_rows('SELECT data FROM part WHERE data LIKE \'%"type":"patch"%\'')
    ]
    assert patched, "OpenCode recorded no change (the test would prove nothing)"
    changed = [f for files in patched for f in files]
    assert any(f.endswith("notes.txt") for f in changed), changed
    assert not [f for f in changed if ".azureal" in f], changed


@pytest.fixture
def watched(tmp_path: Path, model: FakeModel) -> Iterator[AgentWorld]:
    """A daemon watching OpenCode's and Aider's homes, of a world whose agents talk to the fake model."""
    env = {"HOME": str(tmp_path / "home"), "AZSD_WATCH_AGENTS": "opencode,aider"}
    with daemon_in_tmpdir(env) as daemon:
        world = AgentWorld(daemon, tmp_path, model)
        try:
            yield world
        finally:
            world.client.close()


def usage_now(world: AgentWorld) -> tuple[int, int, int, float] | None:
    try:
        views = world.client.list_sessions(world.root, with_usage=True).sessions
    except AzsdError:
        return None
    if len(views) != 1 or views[0].usage is None:
        return None
    u = views[0].usage
    return u.input, u.output, u.cache_read, round(u.cost_usd, 9)


def test_a_live_session_is_current_with_no_command_and_a_kill_loses_and_doubles_nothing(
    watched: AgentWorld, model: FakeModel
) -> None:
    world = watched
    steps(model, 2)
    done = world.opencode("run", "one command then an answer")
    assert done.returncode == 0, done.stderr[-2000:]
    (session_id,) = world.opencode_sessions()
    wanted = world.opencode_totals(session_id)
    wait_for(lambda: usage_now(world) == (*wanted[:3], round(wanted[3], 9)), "the session, by the watch", 10)
    assert world.view(1).state == "succeeded"
    # a turn killed halfway through its answer (kill -9), then the session continued
    model.script(Reply([text("a slow answer that never ends")], fail="slow", word_delay=1.0))
    slow = subprocess.Popen(
        [str(agent_bin("opencode")), "run", "--continue", "a slow one"], cwd=world.root,
        env=opencode_env(world.home, model.url), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(lambda: len(model.requests) >= 3, "the slow answer to start")
        time.sleep(1.5)
    finally:
        slow.kill()
        slow.wait()
    steps(model, 1)
    assert world.opencode("run", "--continue", "and again").returncode == 0
    wanted = world.opencode_totals(session_id)
    wait_for(lambda: usage_now(world) == (*wanted[:3], round(wanted[3], 9)), "the usage after the kill", 10)
    world.import_json("opencode", "--data-dir", str(world.opencode_dir))  # and an import changes nothing
    assert usage_now(world) == (*wanted[:3], round(wanted[3], 9))
    texts = [e.text for e in world.raw_events(1) if isinstance(e, AssistantText)]
    assert texts.count("All done.") == 2, texts  # each answer once


def test_a_sub_agents_session_is_linked_to_the_session_that_called_it(
    agent_world: AgentWorld, model: FakeModel
) -> None:
    world = agent_world
    task = tool("task", description="look around", prompt="list the files", subagent_type="general")
    model.script(
        Reply([task], input_tokens=800, output_tokens=12),  # the session calls a sub-agent
        Reply([text("There are no files.")], input_tokens=300, output_tokens=6),  # the sub-agent answers
        Reply([text("The sub-agent found nothing.")], input_tokens=900, output_tokens=8),
    )
    done = world.opencode("run", "ask a sub-agent")
    assert done.returncode == 0, done.stderr[-2000:]
    assert model.pending() == 0, "the sub-agent did not run"
    rows = world.opencode_rows("SELECT id, parent_id FROM session ORDER BY time_created")
    assert len(rows) == 2 and rows[1][1] == rows[0][0], rows  # OpenCode names the parent
    world.import_json("opencode", "--data-dir", str(world.opencode_dir))
    ls = {row["id"]: row for row in map(json.loads, world.azs("--json", "ls").stdout.splitlines())}
    assert ls[2]["parent"] == 1 and ls[1]["forks"] == [2]
    assert world.client.get_session(world.root, 1).session.forks == (2,)
    total = world.client.usage(world.root).total
    assert (total.input, total.output) == (800 + 300 + 900, 12 + 6 + 8)  # each request once


def test_a_follow_of_a_session_opencode_deleted_ends_and_keeps_what_it_stored(
    agent_world: AgentWorld, model: FakeModel
) -> None:
    world = agent_world
    model.script(Reply([text("Kept.")], input_tokens=500, output_tokens=5))
    assert world.opencode("run", "something to keep").returncode == 0
    (session_id,) = world.opencode_sessions()
    assert world.azs("new", "followed").returncode == 0
    key = f"{world.opencode_dir / 'opencode.db'}#{session_id}"
    done = world.azs("follow", "-s", "1", key)
    assert done.returncode == 0, world.explain(done)
    wait_for(lambda: AssistantText(text="Kept.") in world.raw_events(1), "the session, followed")
    deleted = world.opencode("session", "delete", session_id)
    assert deleted.returncode == 0, deleted.stderr[-1000:]
    assert world.opencode_sessions() == []
    wait_for(lambda: not world.follows(), "the follow to end once its session is gone", timeout=10)
    (ended,) = [v for v in world.client.status().follows if v.root == str(world.root)]
    assert ended.state == "ended" and "OpenCode deleted the session" in ended.reason, ended
    assert AssistantText(text="Kept.") in world.raw_events(1)  # what it stored stays
    usage = world.view(1).usage
    assert usage is not None and usage.input == 500


def stats_of(world: AgentWorld) -> dict[str, str]:
    """`opencode stats`: its table's rows (label → value as printed)."""
    done = world.opencode("stats")
    assert done.returncode == 0, done.stderr[-1000:]
    rows = {}
    for line in done.stdout.splitlines():
        cells = line.strip("│ ").rsplit(None, 1)
        if len(cells) == 2 and "│" in line:
            rows[cells[0].strip()] = cells[1]
    return rows


def test_azs_ls_and_usage_say_what_opencode_itself_lists_and_counts(
    agent_world: AgentWorld, model: FakeModel
) -> None:
    world = agent_world
    for n, prompts in enumerate((["one"], ["two", "and more"], ["three"]), start=1):
        model.title = f"Session number {n}"
        for i, prompt in enumerate(prompts):
            if n == 1:
                model.script(
                    Reply([tool("bash", command="echo x", description="x")], input_tokens=40, output_tokens=3)
                )
            model.script(Reply([text(f"answer {n}.{i}")], input_tokens=50 + n, output_tokens=4 + i))
            args = ["run", prompt] if i == 0 else ["run", "--continue", prompt]
            assert world.opencode(*args).returncode == 0
    assert model.pending() == 0
    world.import_json("opencode", "--data-dir", str(world.opencode_dir))
    listed = json.loads(world.opencode("session", "list", "--format", "json").stdout)
    costs = dict(world.opencode_rows("SELECT title, cost FROM session"))
    ours = {row["name"]: row for row in map(json.loads, world.azs("--json", "ls").stdout.splitlines())}
    assert set(ours) == {s["title"] for s in listed}  # the same sessions, by OpenCode's titles
    for title, row in ours.items():
        assert row["usage"]["cost_usd"] == pytest.approx(costs[title]), title
    turns = {title: n for title, n in world.opencode_rows(
        "SELECT s.title, COUNT(*) FROM message m JOIN session s ON s.id = m.session_id "
        "WHERE m.data LIKE '%\"role\":\"user\"%' GROUP BY s.title"
    )}  # fmt: skip
    usage = world.client.usage(world.root)
    assert {s.name: s.turns for s in usage.sessions} == turns  # prompts, not steps
    stats = stats_of(world)
    assert int(stats["Sessions"]) == 3
    assert (int(stats["Input"]), int(stats["Output"])) == (usage.total.input, usage.total.output)
    assert stats["Total Cost"] == f"${usage.total.cost_usd:.2f}"
