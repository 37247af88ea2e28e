"""The daemon keeps every store current by itself (issue 34): with no command, what the real Claude Code
and Codex write in their homes reaches the store of the project they ran in, once, within a second,
and `azs run`'s own turns are never imported again beside themselves.

The daemon runs with HOME and CODEX_HOME on the test's private agent home and the watch on
(``AZSD_WATCH_AGENTS``; every other test's daemon has it off), against the fake model.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.errors import AzsdError
from azsd.events import AssistantText, UserMessage
from azsd.ingest.importer import claude_slug
from azsd.ipc import protocol as p
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir
from tests.fake_model import FakeModel, Reply, text
from tests.real_world import RealWorld, model, sent_usage, usage_of
from tests.test_run import wait_for
from tests.test_usage_counted import prompt, reply
from tests.test_usage_prices import write

__all__ = ["model"]


@pytest.fixture
def watched(tmp_path: Path, model: FakeModel) -> Iterator[RealWorld]:
    """A daemon watching the agents' homes of a world whose agents talk to the fake model."""
    home = tmp_path / "home"
    env = {"HOME": str(home), "CODEX_HOME": str(home / "codex-home"), "AZSD_WATCH_AGENTS": "claude,codex"}
    with daemon_in_tmpdir(env) as daemon:
        world = RealWorld(daemon, tmp_path, model)
        try:
            yield world
        finally:
            world.client.close()


def sessions(world: RealWorld) -> list[p.SessionView]:
    try:
        return list(world.client.list_sessions(world.root, with_usage=True).sessions)
    except AzsdError:  # no store yet
        return []


def test_a_claude_turn_shows_in_usage_within_a_second_with_no_command(
    watched: RealWorld, model: FakeModel
) -> None:
    model.script(Reply([text("hello from claude")], input_tokens=1234, output_tokens=56))
    done = watched.claude(prompt="say hello")
    assert done.returncode == 0, done.stderr
    written = time.monotonic()

    [view] = wait_for(lambda: sessions(watched), "the session, imported by the daemon", timeout=10)
    seen = time.monotonic() - written
    wait_for(lambda: usage_of(watched.view(view.id)) == sent_usage(model), "its usage", timeout=10)
    events = watched.raw_events(view.id)
    assert UserMessage(content="say hello") in events and AssistantText(text="hello from claude") in events
    assert seen < 5.0, f"the store was current {seen:.2f} s after the line was written"  # live: no command
    total = json.loads(watched.azs("--json", "usage").stdout.splitlines()[-1])["total"]
    assert total["input"] == 1234
    # the store the watch made is kept out of git's view (the worktree is a git repository)
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=watched.root, capture_output=True, text=True
    )
    assert ".azureal" not in status.stdout and status.returncode == 0
    cost = watched.view(view.id).usage.cost_usd  # type: ignore[union-attr]
    assert cost and watched.azs("statusline").stdout.startswith(f"${cost:.4f} today")
    # the next turn of the same Claude session, resumed outside azs: into the same session
    model.script(Reply([text("again")], input_tokens=10, output_tokens=1))
    sid = json.loads(done.stdout.splitlines()[0])["session_id"]
    again = watched.claude("--resume", sid, prompt="once more")
    assert again.returncode == 0, again.stderr
    wait_for(lambda: UserMessage(content="once more") in watched.raw_events(view.id), "the resumed turn")
    assert len(sessions(watched)) == 1
    wait_for(lambda: usage_of(watched.view(view.id)) == sent_usage(model), "both turns' usage, once")


def test_a_codex_turn_is_imported_by_itself(watched: RealWorld, model: FakeModel) -> None:
    model.script(Reply([text("hello from codex")], input_tokens=900, output_tokens=9, cache_read=100))
    done = watched.codex(prompt="say hello")
    assert done.returncode == 0, done.stderr
    [view] = wait_for(lambda: sessions(watched), "the session, imported by the daemon", timeout=10)
    wait_for(lambda: usage_of(watched.view(view.id)) == sent_usage(model), "its usage", timeout=10)
    assert AssistantText(text="hello from codex") in watched.raw_events(view.id)


@pytest.mark.parametrize("backend", ["claude", "codex"])
def test_azs_runs_are_never_imported_again_beside_themselves(
    watched: RealWorld, model: FakeModel, backend: str
) -> None:
    model.script(Reply([text("one")], input_tokens=500, output_tokens=5))
    done = watched.azs("run", "--backend", backend, "first")
    assert done.returncode == 0, watched.explain(done)
    model.script(Reply([text("two")], input_tokens=600, output_tokens=6))
    done = watched.azs("run", "--backend", backend, "-s", "1", "second")
    assert done.returncode == 0, watched.explain(done)
    time.sleep(1.5)  # what the watch would have done, it has done
    views = sessions(watched)
    assert len(views) == 1, [v.name for v in views]
    assert usage_of(watched.view(1)) == sent_usage(model)
    imported = watched.azs("import", backend)
    assert imported.returncode == 0, watched.explain(imported)
    assert len(sessions(watched)) == 1


@pytest.mark.parametrize("backend", ["claude", "codex"])
def test_an_azs_run_resumed_outside_azs_gains_only_the_new_turn(
    watched: RealWorld, model: FakeModel, backend: str
) -> None:
    """The agent's own history of an `azs run` is its session's: the same conversation resumed with
    the agent's own command later goes on in that session, its first turn not stored again."""
    model.script(Reply([text("one")], input_tokens=500, output_tokens=5))
    done = watched.azs("run", "--backend", backend, "first")
    assert done.returncode == 0, watched.explain(done)
    model.script(Reply([text("two")], input_tokens=600, output_tokens=6))
    if backend == "claude":
        [transcript] = watched.claude_transcripts()
        again = watched.claude("--resume", transcript.stem, prompt="second")
    else:
        [rollout] = watched.codex_rollouts()
        thread = json.loads(rollout.read_text().splitlines()[0])["payload"]["id"]
        again = watched.codex_resume(thread, prompt="second")
    assert again.returncode == 0, again.stderr
    wait_for(lambda: UserMessage(content="second") in watched.raw_events(1), "the resumed turn, in S1")
    wait_for(lambda: usage_of(watched.view(1)) == sent_usage(model), "both turns' usage, once")
    events = watched.raw_events(1)
    said = [e for e in events if isinstance(e, (UserMessage, AssistantText))]
    assert said == [
        UserMessage(content="first"), AssistantText(text="one"),
        UserMessage(content="second"), AssistantText(text="two"),
    ], events  # fmt: skip
    assert len(sessions(watched)) == 1


def test_a_restarted_daemon_reads_nothing_twice(tmp_path: Path, model: FakeModel) -> None:
    home = tmp_path / "home"
    env = {"HOME": str(home), "CODEX_HOME": str(home / "codex-home"), "AZSD_WATCH_AGENTS": "claude,codex"}
    base: DaemonProc
    with daemon_in_tmpdir(env) as base:
        world = RealWorld(base, tmp_path, model)
        model.script(Reply([text("hello")], input_tokens=100, output_tokens=1))
        assert world.claude(prompt="hi").returncode == 0
        wait_for(lambda: sessions(world), "the session")
        world.client.close()
        base.proc.kill()  # kill -9
        base.proc.wait()
    with daemon_in_tmpdir(env) as again:
        world = RealWorld.__new__(RealWorld)
        RealWorld.__init__(world, again, tmp_path / "second", model)
        world.root = (tmp_path / "worktree").resolve()
        time.sleep(1.5)
        views = sessions(world)
        assert len(views) == 1
        assert usage_of(world.view(1)) == sent_usage(model)
        world.client.close()


def test_a_catch_up_at_start_imports_every_history_once(tmp_path: Path) -> None:
    """Histories written while no daemon ran are imported when one starts, each once, however many
    (the watch has at most a few imports under way, so its memory stays bounded)."""
    home, root = tmp_path / "home", (tmp_path / "project").resolve()
    root.mkdir()
    folder = home / ".claude" / "projects" / claude_slug(str(root))
    folder.mkdir(parents=True)
    count = 24
    for n in range(count):
        session = f"cccccccc-0000-4000-8000-{n:012d}"
        lines = [
            {**prompt(session, f"question {n}", "2026-11-28T09:00:00Z"), "cwd": str(root)},
            {**reply(session, 100 + n, "2026-11-28T09:00:05Z", 100), "cwd": str(root)},
        ]
        write(folder / f"{session}.jsonl", lines)
    env = {"HOME": str(home), "AZSD_WATCH_AGENTS": "claude"}
    with daemon_in_tmpdir(env) as daemon, daemon.client() as client:

        def listed() -> list[p.SessionView]:
            try:
                return list(client.list_sessions(root, limit=1000, with_usage=True).sessions)
            except AzsdError:
                return []

        wait_for(lambda: len(listed()) == count, f"{count} sessions", timeout=60)
        time.sleep(0.5)
        views = listed()
        assert len(views) == count
        assert sum(v.usage.input for v in views if v.usage) == 100 * count
