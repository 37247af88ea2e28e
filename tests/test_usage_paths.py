"""Token usage is the same whichever way a turn arrives: `azs run`, a follow, one-shot ingest, import.

Each way stores the same corpus file into a session of its own, through the real daemon; then what
`azs usage` reports (the `Usage` request) and what `azs ls` shows (`ListSessions` with usage) must
agree for every session, and equal the one-shot parse's totals. `azs run` only takes the agents'
live formats and import only their on-disk histories, so the stream-json / exec files go through
run, follow and ingest, and a Claude session history through follow, ingest and import. A follow
records the usage as it goes, with each read, and after a daemon restart too.

A store counts each API message once whatever files hold it, so each way gets a copy of the file
whose message ids are its own (:func:`distinct_copy`): the same figures, other messages.
"""

from __future__ import annotations

import re
import shutil
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from azsd.ingest.file import parse_file
from azsd.ingest.importer import claude_slug
from azsd.ipc import protocol as p
from azsd_client import Client
from tests.conftest import CORPUS, requires_corpus
from tests.daemon_fixture import short_tmpdir, start_daemon
from tests.test_run import FORMATS, World, daemon, world

__all__ = ["daemon", "world"]  # the fixtures, re-exported for pytest

pytestmark = [pytest.mark.corpus, requires_corpus]

CLAUDE_RUN = CORPUS / "claude-stream-json" / "claude_code-elixir__read_file.jsonl"
CODEX_RUN = CORPUS / "codex-exec-json" / "rust-claude-codes__multi_command.jsonl"
CLAUDE_HISTORY = CORPUS / "claude-session" / "claudeless__v2.1.29_hook-stop__d266fdf5.jsonl"


def distinct_copy(source: Path, tag: str, directory: Path) -> Path:
    """`source` with every Claude message id made this copy's own (``msg_x`` → ``msg_<tag>x``)."""
    copy = directory / f"{tag}-{source.name}"
    copy.write_text(re.sub(r'"id"(\s*):(\s*)"msg_', rf'"id"\1:\2"msg_{tag}', source.read_text()))
    return copy


def expected_usage(path: Path, fmt: str) -> p.UsageView:
    """What a one-shot parse of `path` says the run used (its tokens; the cost is compared across paths)."""
    _events, report = parse_file(path, fmt)
    u = report.usage
    assert not u.is_zero, f"{path.name} reports no usage: pick another corpus file"
    return p.UsageView(
        input=u.input, output=u.output, cache_read=u.cache_read, cache_write=u.cache_write,
        reasoning=u.reasoning,
    )  # fmt: skip


def tokens(view: p.UsageView) -> p.UsageView:
    return p.UsageView(
        input=view.input, output=view.output, cache_read=view.cache_read, cache_write=view.cache_write,
        reasoning=view.reasoning,
    )  # fmt: skip


def reported(client: Client, root: Path, sid: int) -> p.UsageView:
    """The tokens `azs usage` reports for one session."""
    return tokens(next((s.usage for s in client.usage(root).sessions if s.session == sid), p.UsageView()))


def usage_of(client: Client, root: Path) -> dict[int, p.UsageView]:
    """Each session's usage as `azs usage` reports it, after checking that `azs ls` shows the same."""
    reported = {s.session: s.usage for s in client.usage(root).sessions}
    listed = {v.id: v.usage for v in client.list_sessions(root, with_usage=True).sessions}
    for sid, shown in listed.items():
        assert shown == reported.get(sid, p.UsageView()), f"S{sid}: `ls` and `usage` disagree"
    return reported


def settle(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout} s")
        time.sleep(0.05)


def write_slowly(source: Path, target: Path, *, delay: float = 0.01, upto: int | None = None) -> None:
    """Append `source`'s lines (the first `upto`, or those `target` lacks) to `target` one by one."""
    lines = source.read_bytes().splitlines(keepends=True)
    done = target.read_bytes().count(b"\n") if target.exists() else 0
    with open(target, "ab") as out:
        for line in lines[done:upto]:
            out.write(line)
            out.flush()
            time.sleep(delay)


def event_count(client: Client, root: Path, sid: int) -> int:
    return client.get_session(root, sid).session.event_count


def follow_into(world: World, source: Path, fmt: str, name: str) -> int:
    """A new session following a file that `source` is written into line by line; its id."""
    sid = world.client.create_session(world.root, f"follow-{name}").session.id
    target = world.root.parent / f"live-{name}.jsonl"
    target.write_bytes(b"")
    world.client.follow(world.root, sid, target, format=fmt)
    write_slowly(source, target)
    want = len(parse_file(source, fmt)[0])
    settle(lambda: event_count(world.client, world.root, sid) >= want, f"{name}: every event followed")

    def mine() -> list[p.FollowView]:
        return [v for v in world.client.status().follows if v.root == str(world.root) and v.session == sid]

    settle(lambda: all(v.offset == target.stat().st_size for v in mine()), f"{name}: the whole file followed")
    if any(v.active for v in mine()):
        world.client.unfollow(world.root, target)
    return sid


def ingest_into(world: World, source: Path, fmt: str, name: str) -> int:
    sid = world.client.create_session(world.root, f"ingest-{name}").session.id
    world.client.ingest_file(world.root, sid, source, format=fmt)
    return sid


@pytest.mark.parametrize("backend", ["claude", "codex"])
def test_run_follow_and_ingest_record_the_same_usage(world: World, backend: str) -> None:
    source, fmt = (CLAUDE_RUN, FORMATS["claude"]) if backend == "claude" else (CODEX_RUN, FORMATS["codex"])
    want = expected_usage(source, fmt)
    world.configure(replay=source, options=("--delay", "0.01"))
    done = world.azs("run", "--backend", backend, "go")
    assert done.returncode == 0, world.explain(done)
    [ran] = [v.id for v in world.client.list_sessions(world.root).sessions]
    followed = follow_into(world, distinct_copy(source, "f", world.root.parent), fmt, backend)
    ingested = ingest_into(world, distinct_copy(source, "i", world.root.parent), fmt, backend)

    usage = usage_of(world.client, world.root)

    assert {path: tokens(usage.get(sid, p.UsageView())) for path, sid in
            [("run", ran), ("follow", followed), ("ingest", ingested)]} == dict.fromkeys(
        ["run", "follow", "ingest"], want
    )  # fmt: skip
    assert usage[ran] == usage[followed] == usage[ingested]  # costs too


def test_follow_ingest_and_import_of_a_history_record_the_same_usage(world: World) -> None:
    fmt = "claude-session"
    want = expected_usage(CLAUDE_HISTORY, fmt)
    projects = world.root.parent / "home" / ".claude" / "projects" / claude_slug(world.root)
    projects.mkdir(parents=True)
    history = projects / CLAUDE_HISTORY.name.replace("agent-", "session-", 1)
    shutil.copyfile(CLAUDE_HISTORY, history)
    followed = follow_into(world, distinct_copy(CLAUDE_HISTORY, "f", world.root.parent), fmt, "history")
    ingested = ingest_into(world, distinct_copy(CLAUDE_HISTORY, "i", world.root.parent), fmt, "history")
    imported = world.client.import_session(world.root, "claude", history).session.id

    usage = usage_of(world.client, world.root)

    got = {"follow": usage.get(followed), "ingest": usage.get(ingested), "import": usage.get(imported)}
    assert {path: tokens(u or p.UsageView()) for path, u in got.items()} == dict.fromkeys(got, want)
    assert usage[followed] == usage[ingested] == usage[imported]


def test_a_follow_records_the_running_usage_with_each_read(world: World) -> None:
    """Half the turn written: its usage so far is recorded already, then replaced by the whole's."""
    fmt = FORMATS["claude"]
    lines = CLAUDE_RUN.read_bytes().splitlines(keepends=True)
    half = world.root.parent / "half.jsonl"
    half.write_bytes(b"".join(lines[: len(lines) - 1]))  # everything but the `result` line
    sid = world.client.create_session(world.root, "live").session.id
    target = world.root.parent / "live.jsonl"
    target.write_bytes(b"")
    world.client.follow(world.root, sid, target, format=fmt)
    write_slowly(CLAUDE_RUN, target, upto=len(lines) - 1)
    want_half = expected_usage(half, fmt)
    assert want_half != expected_usage(CLAUDE_RUN, fmt), "the result line must change the totals"

    settle(lambda: reported(world.client, world.root, sid) == want_half,
           "the running usage recorded while the turn goes on")  # fmt: skip
    assert tokens(usage_of(world.client, world.root)[sid]) == want_half
    assert [v.active for v in world.client.status().follows if v.path == str(target.resolve())] == [True]
    write_slowly(CLAUDE_RUN, target)
    settle(lambda: reported(world.client, world.root, sid) == expected_usage(CLAUDE_RUN, fmt),
           "the run's final usage")  # fmt: skip
    assert tokens(usage_of(world.client, world.root)[sid]) == expected_usage(CLAUDE_RUN, fmt)
    [turn] = world.client.usage(world.root, sid).sessions
    assert turn.turns == 1, "a run's usage is one record, replaced as it grows, never added up"


def test_a_follow_resumed_after_a_restart_records_the_whole_runs_usage() -> None:
    """The daemon is killed mid-turn; the resumed follow rebuilds its parser's totals from the file."""
    source, fmt = CLAUDE_HISTORY, "claude-session"
    want = expected_usage(source, fmt)
    lines = source.read_bytes().splitlines(keepends=True)
    base, root = short_tmpdir(), short_tmpdir()
    target = root / "history.jsonl"
    target.write_bytes(b"")
    d = start_daemon(base / "run")
    try:
        client = d.client()
        sid = client.create_session(root, "resumed").session.id
        client.follow(root, sid, target, format=fmt)
        write_slowly(source, target, upto=len(lines) // 2)
        settle(lambda: client.status().follows[0].offset == target.stat().st_size, "half the file stored")
        client.close()
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        d.close()
        d = start_daemon(base / "run")  # resumes the follow from its stored offset
        client = d.client()
        writer = threading.Thread(target=write_slowly, args=(source, target))
        writer.start()
        writer.join()
        settle(lambda: client.status().follows[0].offset == target.stat().st_size, "the whole file stored")
        usage = usage_of(client, root)
        assert tokens(usage[sid]) == want
        # its two prompts (2+2, and the .hook-log), whatever the restart: turns count turns
        assert client.usage(root, sid).sessions[0].turns == 2
        client.close()
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
