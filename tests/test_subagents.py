"""Import brings a Claude session's sub-agent transcripts in as part of its usage (azsd.ingest.subagents).

The layouts are real ones, built in tmp from corpus files: 2.1.x's ``<slug>/<session>/subagents/``
(the corpus's own sub-agent file, and a session file with usage put there as a second sub-agent)
and 2.0.x's ``<slug>/agent-<id>.jsonl`` beside the session, tied to it by the `sessionId` of its
lines (a corpus session whose lines were made to name the parent).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from azsd.ingest.file import parse_file
from azsd.ingest.importer import Source, import_source
from azsd.ingest.subagents import subagent_files, subagents_current
from azsd.ingest.usage import turns_of
from azsd.model import Usage
from azsd.store import Store
from tests.conftest import CORPUS, requires_corpus

pytestmark = requires_corpus

SESSIONS = CORPUS / "claude-session"
PARENT_21 = SESSIONS / "claudeless__v2.1.29_compact-command__8aa54c1d.jsonl"
SUBAGENT_21 = (
    SESSIONS
    / "claudeless__v2.1.29_compact-command__8aa54c1d__subagents__agent-aprompt_suggestion-029c25.jsonl"
)
WITH_USAGE = SESSIONS / "claudeless__v2.1.29_hook-stop__d266fdf5.jsonl"
PARENT_20 = SESSIONS / "agentcmd__full-session-askuserquestion.jsonl"
AGENT_20 = SESSIONS / "agentcmd__full-session-two.jsonl"


def session_id_of(path: Path) -> str:
    lines = path.read_text().splitlines()
    return str(next(json.loads(line)["sessionId"] for line in lines if '"sessionId"' in line))


def usage_of(path: Path) -> Usage:
    return parse_file(path, "claude-session")[1].usage


def tokens(store: Store, sid: int) -> Usage:
    return store.session_usage(sid).usage


@pytest.fixture
def layout_21(tmp_path: Path) -> tuple[Path, Path]:
    """A 2.1.x project directory: the session, and two sub-agent files under <session>/subagents/."""
    project = tmp_path / "projects" / "-p"
    uuid = session_id_of(PARENT_21)
    subagents = project / uuid / "subagents"
    subagents.mkdir(parents=True)
    shutil.copyfile(PARENT_21, project / f"{uuid}.jsonl")
    shutil.copyfile(SUBAGENT_21, subagents / "agent-aprompt_suggestion-029c25.jsonl")
    shutil.copyfile(WITH_USAGE, subagents / "agent-a1b2c3.jsonl")
    return project / f"{uuid}.jsonl", subagents / "agent-a1b2c3.jsonl"


def prompts(path: Path) -> int:
    """The turns a file holds: its prompts (at least one)."""
    _events, report = parse_file(path, "claude-session")
    return turns_of(report)


def test_a_2_1_sessions_subagents_count_in_its_usage_once(store: Store, layout_21: tuple[Path, Path]) -> None:
    session, agent = layout_21
    assert [p.name for p in subagent_files(session)] == [
        "agent-a1b2c3.jsonl",
        "agent-aprompt_suggestion-029c25.jsonl",
    ]
    expected = usage_of(session) + usage_of(agent)
    assert not usage_of(agent).is_zero
    source = Source(session, "claude", session.stat().st_size)
    outcome = import_source(store, source)
    assert tokens(store, outcome.session_id) == expected
    events_before = store.max_seq(outcome.session_id)
    again = import_source(store, source)  # nothing changed: nothing read, nothing counted twice
    assert again.current and tokens(store, outcome.session_id) == expected
    assert store.max_seq(outcome.session_id) == events_before  # sub-agent events stay out of the transcript
    assert subagents_current(store, outcome.session_id, session)


def test_a_subagent_that_grew_is_read_again_and_replaces_its_record(
    store: Store, layout_21: tuple[Path, Path]
) -> None:
    session, agent = layout_21
    lines = WITH_USAGE.read_bytes().splitlines(keepends=True)
    agent.write_bytes(b"".join(lines[: len(lines) // 2]))
    half = usage_of(agent)
    source = Source(session, "claude", session.stat().st_size)
    sid = import_source(store, source).session_id
    assert tokens(store, sid) == usage_of(session) + half
    agent.write_bytes(b"".join(lines))  # the sub-agent went on; its session's file did not change
    assert not subagents_current(
        store, sid, session
    )  # so the session is not current (`azs import` redoes it)
    assert import_source(store, source).current
    assert tokens(store, sid) == usage_of(session) + usage_of(WITH_USAGE)
    # the session's prompts; the sub-agent's task is not one of the user's
    assert store.session_usage(sid).turns == prompts(session)


def test_2_0_agent_files_beside_the_session_are_tied_to_it_by_session_id(
    store: Store, tmp_path: Path
) -> None:
    project = tmp_path / "projects" / "-p"
    project.mkdir(parents=True)
    uuid = session_id_of(PARENT_20)
    session = project / f"{uuid}.jsonl"
    shutil.copyfile(PARENT_20, session)
    other = session_id_of(AGENT_20)
    text = AGENT_20.read_text().replace(other, uuid)  # the sub-agent's lines name its session
    (project / "agent-1f2e3d4c.jsonl").write_text(text)
    shutil.copyfile(AGENT_20, project / "agent-9a8b7c6d.jsonl")  # another session's sub-agent
    assert [p.name for p in subagent_files(session)] == ["agent-1f2e3d4c.jsonl"]
    sid = import_source(store, Source(session, "claude", session.stat().st_size)).session_id
    assert tokens(store, sid) == usage_of(session) + usage_of(project / "agent-1f2e3d4c.jsonl")
