"""The real Codex CLI (pinned, tests/agent_versions.json) against the fake model (OpenAI Responses),
through `azs run`, `azs follow` of its rollout while it writes, `azs import codex` afterwards, a
resumed thread and each failure the model can give. What is asserted is what a user sees, held
against what the server sent: every text, reasoning, call and result; usage per response, once.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from azsd.events import AssistantText, Complete, Hook, Init, ToolCall, ToolResult, UserMessage
from tests.fake_model import FakeModel, Reply, text, thinking, tool
from tests.real_world import RealWorld, model, real_world, sent_usage, usage_of
from tests.test_run import daemon, wait_for

__all__ = ["daemon", "model", "real_world"]

MODEL = "gpt-5.5"  # the model of the tests' Codex config (a model the price list does not name)


def a_turn_with_a_command() -> list[Reply]:
    return [
        Reply([thinking("Plan: run echo."), tool("exec_command", cmd="echo hello")],
              input_tokens=500, output_tokens=40, cache_read=100, reasoning_tokens=20),
        Reply([thinking("Done."), text("All done.")], input_tokens=600, output_tokens=30),
    ]  # fmt: skip


def test_run_stores_reasoning_calls_results_and_usage_once(real_world: RealWorld, model: FakeModel) -> None:
    model.script(*a_turn_with_a_command())

    done = real_world.azs("run", "--backend", "codex", "say hello")

    assert done.returncode == 0, real_world.explain(done)
    events = real_world.raw_events()
    assert events[0] == UserMessage(content="say hello")
    assert isinstance(events[1], Init)
    [call] = [e for e in events if isinstance(e, ToolCall)]
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert events[2:] == [
        Hook(name="reasoning", output="Plan: run echo."),
        call,
        result,
        Hook(name="reasoning", output="Done."),
        AssistantText(text="All done."),
        events[-1],
    ]
    assert call.tool_name == "Bash" and "echo hello" in call.input["command"]
    assert result.content.strip() == "hello" and not result.is_error
    end = events[-1]
    assert isinstance(end, Complete) and end.success and end.cost_usd > 0
    view = real_world.view()
    assert view.state == "succeeded"
    assert usage_of(view) == sent_usage(model)
    context = real_world.azs("context", "S1", "--backend", "codex", "next").stdout
    assert "## Assistant\nAll done." in context and "Plan: run echo." not in context
    # an estimate, and said to be one
    assert "~$" in real_world.azs("log", "S1").stdout
    assert "~$" in real_world.azs("ls").stdout


@pytest.mark.parametrize("fail", ["529", "drop"])
def test_a_failed_run_is_stored_as_a_failure(real_world: RealWorld, model: FakeModel, fail: str) -> None:
    model.script(*[Reply([thinking("hmm"), text("partial")], fail=fail)] * 4)  # type: ignore[arg-type]

    done = real_world.azs("run", "--backend", "codex", "try it")

    assert done.returncode == 1, real_world.explain(done)
    events = real_world.raw_events()
    said = [e.text for e in events if isinstance(e, AssistantText)]
    errors = [t for t in said if t.startswith("Error:") and "exited" not in t]
    assert len(errors) == 1, said  # said once, not by the stream's `error` and its `turn.failed` both
    retries = [e.output for e in events if isinstance(e, Hook) and e.name == "retry"]
    assert retries and all(r.startswith("Reconnecting...") for r in retries)
    assert not any(t.startswith("Reconnecting") for t in said)
    assert real_world.view().state == "failed"
    assert real_world.azs("ls").stdout.startswith("✗")
    context = real_world.azs("context", "S1", "--backend", "codex", "again").stdout
    assert "Reconnecting" not in context


def test_import_after_run_counts_every_response_once(real_world: RealWorld, model: FakeModel) -> None:
    model.script(*a_turn_with_a_command())
    done = real_world.azs("run", "--backend", "codex", "say hello")
    assert done.returncode == 0, real_world.explain(done)
    assert usage_of(real_world.view()) == sent_usage(model)

    imported = real_world.azs("import", "codex")

    assert imported.returncode == 0, real_world.explain(imported)
    total = json.loads(real_world.azs("--json", "usage").stdout.splitlines()[-1])["total"]
    want = sent_usage(model)
    assert (total["input"], total["output"], total["cache_read"]) == (
        want.input,
        want.output,
        want.cache_read,
    )


def test_import_of_a_resumed_thread(real_world: RealWorld, model: FakeModel) -> None:
    model.script(*a_turn_with_a_command())
    first = real_world.codex(prompt="say hello")
    assert first.returncode == 0, first.stderr
    thread = json.loads(first.stdout.splitlines()[0])["thread_id"]
    model.script(Reply([text("resumed answer")], input_tokens=700, output_tokens=5))
    again = real_world.codex_resume(thread, prompt="again")
    assert again.returncode == 0, again.stderr

    done = real_world.azs("import", "codex")

    assert done.returncode == 0, real_world.explain(done)
    assert "skipped" not in done.stdout, done.stdout
    [view] = real_world.client.list_sessions(real_world.root, with_usage=True).sessions
    events = real_world.raw_events(view.id)
    assert events[0] == Init(cwd=str(real_world.root), model=MODEL)  # not `codex`
    assert [e.content for e in events if isinstance(e, UserMessage)] == ["say hello", "again"]
    assert [e.output for e in events if isinstance(e, Hook) and e.name == "reasoning"] == [
        "Plan: run echo.",
        "Done.",
    ]
    assert [e.success for e in events if isinstance(e, Complete)] == [True, True]
    assert usage_of(view) == sent_usage(model)


def test_import_of_a_failed_turn_is_a_failure(real_world: RealWorld, model: FakeModel) -> None:
    model.script(*[Reply(fail="529")] * 4)
    done = real_world.codex(prompt="try it")
    assert done.returncode == 1

    imported = real_world.azs("import", "codex")

    assert imported.returncode == 0, real_world.explain(imported)
    [view] = real_world.client.list_sessions(real_world.root).sessions
    events = real_world.raw_events(view.id)
    [end] = [e for e in events if isinstance(e, Complete)]
    assert not end.success
    said = [e.text for e in events if isinstance(e, AssistantText)]
    assert len(said) == 1 and said[0].startswith("Error: unexpected status 529"), said
    assert view.state == "failed"


def test_follow_of_the_rollout_while_codex_writes(real_world: RealWorld, model: FakeModel) -> None:
    model.script(Reply([thinking("Slowly."), text("one two three four")], fail="slow", word_delay=0.3))
    sid = real_world.client.create_session(real_world.root, "followed").session.id
    prompt = real_world.root.parent / "prompt.txt"
    prompt.write_text("count to four")
    argv = [*real_world.codex_argv()]
    with prompt.open() as stdin:
        agent = subprocess.Popen(argv, cwd=real_world.root, env=real_world.agent_env, stdin=stdin,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    rollout = wait_for(lambda: real_world.codex_rollouts(), "the rollout")[0]
    followed = real_world.azs("follow", "-s", str(sid), str(rollout))
    assert followed.returncode == 0, real_world.explain(followed)
    wait_for(
        lambda: Hook(name="reasoning", output="Slowly.") in real_world.raw_events(sid), "reasoning, live"
    )
    agent.communicate(timeout=60)
    wait_for(lambda: real_world.view(sid).state == "succeeded", "the turn's end")
    events = real_world.raw_events(sid)
    assert [e.content for e in events if isinstance(e, UserMessage)] == ["count to four"]
    assert AssistantText(text="one two three four") in events
    assert usage_of(real_world.view(sid)) == sent_usage(model)
    # and an import of the same rollout afterwards counts nothing twice
    imported = real_world.azs("import", "codex")
    assert imported.returncode == 0, real_world.explain(imported)
    total = json.loads(real_world.azs("--json", "usage").stdout.splitlines()[-1])["total"]
    assert total["input"] == sent_usage(model).input
