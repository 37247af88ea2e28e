"""The real Claude Code (pinned, tests/agent_versions.json) against the fake model, through every path a
user takes: `azs run`, `azs follow` of Claude's own transcript while it writes, `azs import claude`
afterwards, a resumed session, `/compact`, Ctrl-C, and each failure the model can give (529, 500, a
dropped stream). What is asserted is what a user sees, held against what the server sent: every
text, thinking block, call and result, usage per message and per turn, once; states, costs.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from azsd.events import AssistantText, Compacting, Complete, Hook, Init, ToolCall, ToolResult, UserMessage
from tests.fake_model import FakeModel, Reply, text, thinking, tool
from tests.real_world import RealWorld, model, real_world, sent_usage, usage_of
from tests.test_run import daemon, wait_for

__all__ = ["daemon", "model", "real_world"]

MODEL = "claude-opus-5-5"  # what 2.1.332 asks for by default


def a_turn_with_a_tool() -> list[Reply]:
    return [
        Reply(
            [thinking("Let me look first."), tool("Bash", command="echo hello; echo world", description="x")],
            input_tokens=500, output_tokens=40, cache_read=1000, cache_write=200,
        ),
        Reply([thinking("It printed two lines."), text("All **done**.")], input_tokens=600, output_tokens=30),
    ]  # fmt: skip


def without_inits(events: list[object]) -> list[object]:
    return [e for e in events if not isinstance(e, Init)]


def test_run_stores_thinking_calls_results_and_usage_once(real_world: RealWorld, model: FakeModel) -> None:
    model.script(*a_turn_with_a_tool())

    done = real_world.azs("run", "list the greetings")

    assert done.returncode == 0, real_world.explain(done)
    events = real_world.raw_events()
    assert events[0] == UserMessage(content="list the greetings")
    assert events[1] == Init(cwd=str(real_world.root), model=MODEL)
    [call] = [e for e in events if isinstance(e, ToolCall)]
    assert events[2:] == [
        Hook(name="thinking", output="Let me look first."),
        call,
        ToolResult(tool_use_id=call.tool_use_id, tool_name="Bash", file_path=None, content="hello\nworld",
                   is_error=False),
        Hook(name="thinking", output="It printed two lines."),
        AssistantText(text="All **done**."),
        events[-1],
    ]  # fmt: skip
    assert call.tool_name == "Bash" and call.input["command"] == "echo hello; echo world"
    end = events[-1]
    assert isinstance(end, Complete) and end.success and end.cost_usd > 0
    view = real_world.view()
    assert view.state == "succeeded"
    assert usage_of(view) == sent_usage(model)
    assert view.usage is not None and view.usage.cost_source == "reported"
    assert view.usage.cost_usd == pytest.approx(end.cost_usd)
    shown = real_world.azs("show", "S1").stdout
    assert "Let me look first." in shown and "All **done**." in shown and "✓ completed" in shown
    # thinking is never fed to the next agent as its answer
    context = real_world.azs("context", "S1", "next").stdout
    assert "## Assistant\nAll **done**." in context and "Let me look first." not in context
    assert "It printed two lines." not in context
    usage = real_world.azs("usage").stdout
    assert "1,100" in usage and usage.count("\nS1 ") == 1 and "  1  " in usage.split("\n")[1]


@pytest.mark.parametrize("fail", ["529", "500", "drop"])
def test_a_failed_run_is_stored_as_a_failure(real_world: RealWorld, model: FakeModel, fail: str) -> None:
    model.script(*[Reply([thinking("hmm"), text("partial answer")], fail=fail)] * 4)  # type: ignore[arg-type]

    done = real_world.azs("run", "try it")

    assert done.returncode == 1, real_world.explain(done)
    assert len(model.failed) == 2, "one attempt and the one retry the tests allow"
    events = real_world.raw_events()
    said = [e.text for e in events if isinstance(e, AssistantText)]
    assert any(t.startswith("API Error") for t in said), said
    assert "Error: the agent exited (exit status 1)" in said
    assert [e for e in events if isinstance(e, Complete) and not e.success]
    assert real_world.view().state == "failed"
    assert real_world.azs("ls").stdout.startswith("✗"), "the badge is the turn's: failed"
    assert "✗" in real_world.azs("log", "S1").stdout
    # what the server sent before it failed is counted, once per attempt (a dropped stream had begun)
    expected = 100 * len(model.failed) if fail == "drop" else 0
    assert usage_of(real_world.view()).input == expected
    # no made-up turn: the failure is one turn
    assert [e for e in events if isinstance(e, UserMessage)] == [UserMessage(content="try it")]


def test_import_after_run_counts_every_message_once(real_world: RealWorld, model: FakeModel) -> None:
    model.script(*a_turn_with_a_tool())
    done = real_world.azs("run", "list the greetings")
    assert done.returncode == 0, real_world.explain(done)
    before = usage_of(real_world.view())

    imported = real_world.azs("import", "claude")

    assert imported.returncode == 0, real_world.explain(imported)
    whole = real_world.azs("--json", "usage")
    total = json.loads(whole.stdout.splitlines()[-1])
    assert before == sent_usage(model)
    assert total["total"]["input"] == sent_usage(model).input, whole.stdout
    assert total["total"]["output"] == sent_usage(model).output


def test_import_of_a_resumed_session_with_a_compaction(real_world: RealWorld, model: FakeModel) -> None:
    """Claude's own transcript, imported after three runs of one session (the second a `/compact`):
    one session, each run a turn completed with Claude's own duration and cost, thinking kept, the
    compaction's spend counted in it (its calls write no message), nothing made a prompt that was not."""
    model.script(
        Reply([thinking("Reading."), text("first answer")], input_tokens=90_000, output_tokens=100),
        Reply([text("Summary: we did things.")], input_tokens=101_011, output_tokens=500),
        Reply([text("(compaction's second call)")], input_tokens=2_000, output_tokens=20),
        Reply([text("after the compaction")], input_tokens=300, output_tokens=12),
    )
    first = real_world.claude(prompt="first")
    assert first.returncode == 0, first.stderr
    sid = json.loads(first.stdout.splitlines()[0])["session_id"]
    for prompt in ("/compact", "next"):
        again = real_world.claude("--resume", sid, prompt=prompt)
        assert again.returncode == 0, again.stderr
    costs = [json.loads(line) for out in (first,) for line in out.stdout.splitlines()]
    assert len(model.sent) == 4

    done = real_world.azs("import", "claude")

    assert done.returncode == 0, real_world.explain(done)
    assert "skipped" not in done.stdout, done.stdout
    views = real_world.client.list_sessions(real_world.root, with_usage=True).sessions
    assert len(views) == 1, [v.name for v in views]
    events = real_world.raw_events(views[0].id)
    prompts = [e.content for e in events if isinstance(e, UserMessage)]
    assert prompts == ["first", "next"]
    assert Hook(name="thinking", output="Reading.") in events
    ends = [e for e in events if isinstance(e, Complete)]
    assert len(ends) == 3 and all(e.success for e in ends)
    assert ends[0].cost_usd == pytest.approx(costs[-1]["total_cost_usd"])
    assert all(e.duration_ms > 0 for e in ends)
    view = real_world.view(views[0].id)
    assert view.state == "succeeded"
    assert usage_of(view) == sent_usage(model), "the compaction's calls are counted in the session"
    assert view.usage is not None and view.usage.cost_source == "reported"


def test_follow_of_the_transcript_while_claude_writes(real_world: RealWorld, model: FakeModel) -> None:
    model.script(Reply([thinking("Slowly."), text("one two three four")], fail="slow", word_delay=0.3),
                 Reply([text("second turn")]))  # fmt: skip
    sid = real_world.client.create_session(real_world.root, "followed").session.id
    argv = [*real_world.claude_argv(), "--session-id", "3f1c6a52-7d1e-4c51-9d0b-2f6a1b7c8d90"]
    prompt = real_world.root.parent / "prompt.txt"
    prompt.write_text("count to four")
    with prompt.open() as stdin:
        agent = subprocess.Popen(argv, cwd=real_world.root, env=real_world.agent_env, stdin=stdin,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    transcript = real_world.claude_dir / "3f1c6a52-7d1e-4c51-9d0b-2f6a1b7c8d90.jsonl"
    wait_for(transcript.exists, "transcript")
    followed = real_world.azs("follow", "-s", str(sid), str(transcript))
    assert followed.returncode == 0, real_world.explain(followed)
    # live: the thinking is stored while the answer is still being written
    wait_for(lambda: Hook(name="thinking", output="Slowly.") in real_world.raw_events(sid), "thinking, live")
    agent.communicate(timeout=60)
    wait_for(lambda: real_world.view(sid).state == "succeeded", "the turn's end, from cost-state")
    events = real_world.raw_events(sid)
    assert [e.content for e in events if isinstance(e, UserMessage)] == ["count to four"]
    assert AssistantText(text="one two three four") in events
    [end] = [e for e in events if isinstance(e, Complete)]
    assert end.success and end.duration_ms > 0 and end.cost_usd > 0
    assert usage_of(real_world.view(sid)) == sent_usage(model)


def test_ctrl_c_leaves_a_truthful_partial_turn(real_world: RealWorld, model: FakeModel) -> None:
    model.script(Reply([thinking("Long thought."), text("one two three four five six seven eight")],
                       fail="slow", word_delay=0.5, output_tokens=11_244))  # fmt: skip
    run = real_world.spawn("run", "count slowly")
    wait_for(lambda: any(isinstance(e, Hook) for e in real_world.events_so_far()), "the thinking")
    time.sleep(1.0)
    run.send_signal(signal.SIGINT)
    run.communicate(timeout=60)

    events = real_world.raw_events()
    assert events[0] == UserMessage(content="count slowly")
    assert Hook(name="thinking", output="Long thought.") in events
    partial = [e.text for e in events if isinstance(e, AssistantText) and e.text.startswith("one")]
    assert partial and "one two three four five six seven eight".startswith(partial[0].strip())
    assert not [e for e in events if isinstance(e, UserMessage) and "interrupted" in e.content]
    assert real_world.view().state == "failed"


def test_ctrl_c_after_a_finished_message_counts_its_final_output(
    real_world: RealWorld, model: FakeModel
) -> None:
    """Issue 33: the stream carries `output_tokens: 1` on each line and the totals only on its `result`;
    a turn Ctrl-C'd before it stored 1 for a message of 11 244. Claude's transcript has the final count
    of each message it finished: the run is reconciled from it when it ends early."""
    model.script(
        Reply(
            [text("Working on it."), tool("Bash", command="echo hi", description="x")], output_tokens=11_244
        ),
        Reply([text("one two three four five six seven")], fail="slow", word_delay=0.5, output_tokens=11_344),
    )
    run = real_world.spawn("run", "work")
    wait_for(lambda: any(isinstance(e, ToolResult) for e in real_world.events_so_far()), "the first reply")
    time.sleep(1.5)
    run.send_signal(signal.SIGINT)
    run.communicate(timeout=60)

    [finished] = model.sent  # the second reply never ended: the server sent no final count for it
    [transcript] = real_world.claude_transcripts()
    claude_counts: dict[str, int] = {}  # Claude's own count of each message, as its transcript says
    for line in transcript.read_text().splitlines():
        obj = json.loads(line)
        if obj.get("type") == "assistant":
            message = obj["message"]
            claude_counts[message["id"]] = max(
                claude_counts.get(message["id"], 0), message["usage"]["output_tokens"]
            )
    assert claude_counts[finished.id] == finished.reply.output_tokens == 11_244
    # Claude's own word on the run: its `result` line when it wrote one on the way out (it does when
    # stopped between blocks), else its transcript; never the stream's `output_tokens: 1`
    results = [
        json.loads(x) for f in real_world.turn_files(1) for x in f.read_text().splitlines() if '"result"' in x
    ]
    own = (
        sum(m["outputTokens"] for m in results[-1]["modelUsage"].values())
        if results
        else sum(claude_counts.values())
    )
    usage = usage_of(real_world.view())
    assert usage.output == own > finished.reply.output_tokens, (usage, claude_counts)
    assert usage.input == 200


def test_a_model_without_a_listed_price_is_priced_by_its_family(
    real_world: RealWorld, model: FakeModel
) -> None:
    """Claude's transcript, imported without its cost-state line (a run killed before writing it): its
    default model has no row in the price list, and is priced as the newest Opus, marked estimated."""
    model.script(Reply([text("hi")], input_tokens=1000, output_tokens=100))
    done = real_world.claude(prompt="hello")
    assert done.returncode == 0, done.stderr
    [transcript] = real_world.claude_transcripts()
    lines = [line for line in transcript.read_text().splitlines() if '"cost-state"' not in line]
    transcript.write_text("\n".join(lines) + "\n")

    imported = real_world.azs("import", "claude")

    assert imported.returncode == 0, real_world.explain(imported)
    [view] = real_world.client.list_sessions(real_world.root, with_usage=True).sessions
    assert view.usage is not None and view.usage.cost_source == "estimated" and view.usage.cost_usd
    assert "~$" in real_world.azs("ls").stdout
    prices = real_world.azs("usage", "--prices").stdout
    assert f"~ {MODEL}: not in the list, priced as claude-opus-4-7" in prices


def test_every_line_of_todays_transcripts_is_read_or_knowingly_left_out(
    real_world: RealWorld, model: FakeModel, tmp_path: Path
) -> None:
    model.script(*a_turn_with_a_tool())
    done = real_world.claude(prompt="list the greetings")
    assert done.returncode == 0, done.stderr
    stream = tmp_path / "stream.jsonl"
    stream.write_text(done.stdout)
    [transcript] = real_world.claude_transcripts()
    for path in (stream, transcript):
        ingested = real_world.azs("--json", "ingest", str(path))
        assert ingested.returncode == 0, real_world.explain(ingested)
        reply = json.loads(ingested.stdout.splitlines()[-1])
        assert reply["skipped"] == {}, (path.name, reply)


def test_azs_compact_counts_its_spend_in_the_session_and_never_makes_a_session_of_it(
    real_world: RealWorld, model: FakeModel
) -> None:
    """Issue 33: the compaction's call was missing from usage, and a later `azs import claude` added
    Claude's own transcript of it as a junk session "You are compacting the history…"."""
    for n in range(4):
        model.script(Reply([text(f"answer {n}")], input_tokens=1000 + n, output_tokens=10))
        done = real_world.azs("run", "-s", "1", f"question {n}") if n else real_world.azs("run", "question 0")
        assert done.returncode == 0, real_world.explain(done)
    model.script(
        Reply([text("Summary: four questions were answered.")], input_tokens=101_011, output_tokens=500)
    )

    compacted = real_world.azs("compact", "S1")

    assert compacted.returncode == 0, real_world.explain(compacted)
    assert len(model.sent) == 5
    assert usage_of(real_world.view()) == sent_usage(model), "the compaction's call is the session's spend"
    imported = real_world.azs("import", "claude")
    assert imported.returncode == 0, real_world.explain(imported)
    names = [v.name for v in real_world.client.list_sessions(real_world.root).sessions]
    assert not any("compacting" in name.lower() for name in names), names
    total = json.loads(real_world.azs("--json", "usage").stdout.splitlines()[-1])["total"]
    assert total["input"] == sent_usage(model).input
    turns = [line for line in real_world.azs("usage").stdout.splitlines() if line.startswith("S1 ")]
    assert turns and "  4  " in turns[0], turns  # the compaction is no turn


def test_ls_shows_the_whole_sessions_cost_beside_its_tokens(real_world: RealWorld, model: FakeModel) -> None:
    """Issue 33: `ls` showed the last turn's cost beside the whole session's tokens."""
    model.script(Reply([text("one")], input_tokens=10_000, output_tokens=100))
    assert real_world.azs("run", "first").returncode == 0
    model.script(Reply([text("two")], input_tokens=20, output_tokens=2))
    assert real_world.azs("run", "-s", "1", "second").returncode == 0
    costs = [e.cost_usd for e in real_world.raw_events() if isinstance(e, Complete)]
    assert len(costs) == 2 and costs[0] > 10 * costs[1]
    row = json.loads(real_world.azs("--json", "ls").stdout.splitlines()[0])
    assert row["usage"]["cost_usd"] == pytest.approx(sum(costs))
    assert f"${sum(costs):.4f}" in real_world.azs("ls").stdout


def test_an_automatic_compaction_in_a_run_is_one_turn_and_its_spend_is_counted(
    real_world: RealWorld, model: FakeModel
) -> None:
    """Issue 33: the continuation Claude writes after compacting mid-turn became a prompt (one real
    turn showed as several in `azs log`, and was fed back as `## User`), and the compaction's calls
    were missing from usage."""
    model.script(
        Reply([tool("Bash", command="echo hi", description="x")], input_tokens=985_000, output_tokens=50),
        Reply([text("Summary: a command ran.")], input_tokens=101_011, output_tokens=500),  # the compaction
        Reply([text("(its second call)")], input_tokens=3_000, output_tokens=20),
        Reply([text("done after the compaction")], input_tokens=3_000, output_tokens=20),
    )

    done = real_world.azs("run", "fill the context")

    assert done.returncode == 0, real_world.explain(done)
    assert len(model.sent) == 4
    events = real_world.raw_events()
    assert [e.content for e in events if isinstance(e, UserMessage)] == ["fill the context"]
    assert Compacting() in events
    assert len(real_world.azs("log", "S1").stdout.splitlines()) == 1
    assert usage_of(real_world.view()) == sent_usage(model)
    context = real_world.azs("context", "S1", "next").stdout
    assert "This session is being continued" not in context and context.count("## User") == 1


def test_follow_after_import_and_import_after_follow_store_nothing_twice(
    real_world: RealWorld, model: FakeModel
) -> None:
    """Issue 34: a follow of a history that was imported stored everything again (and the other way
    round); a history has one owner, and the next way in goes on from where the first stopped."""
    model.script(Reply([text("first answer")], input_tokens=300, output_tokens=3))
    assert real_world.claude(prompt="first").returncode == 0
    [transcript] = real_world.claude_transcripts()
    assert real_world.azs("import", "claude").returncode == 0
    [view] = real_world.client.list_sessions(real_world.root).sessions
    before = real_world.raw_events(view.id)

    refused = real_world.azs("follow", "-s", str(view.id + 100), str(transcript))
    assert refused.returncode != 0
    other = real_world.client.create_session(real_world.root, "elsewhere").session.id
    refused = real_world.azs("follow", "-s", str(other), str(transcript))
    assert refused.returncode != 0 and f"is S{view.id}'s (imported there)" in refused.stderr
    followed = real_world.azs("follow", "-s", str(view.id), str(transcript))
    assert followed.returncode == 0, real_world.explain(followed)
    model.script(Reply([text("second answer")], input_tokens=400, output_tokens=4))
    first_id = transcript.stem
    again = real_world.claude("--resume", first_id, prompt="second")
    assert again.returncode == 0, again.stderr
    wait_for(lambda: UserMessage(content="second") in real_world.raw_events(view.id), "the followed turn")
    events = real_world.raw_events(view.id)
    assert events[: len(before)] == before and events.count(UserMessage(content="first")) == 1
    wait_for(lambda: usage_of(real_world.view(view.id)) == sent_usage(model), "each message once")
    assert real_world.azs("unfollow", str(transcript)).returncode == 0
    # and an import now finds the file current: nothing new, nothing twice
    imported = real_world.azs("import", "claude")
    assert imported.returncode == 0, real_world.explain(imported)
    assert len(real_world.client.list_sessions(real_world.root).sessions) == 2  # S1 and "elsewhere"
    assert real_world.raw_events(view.id) == events
