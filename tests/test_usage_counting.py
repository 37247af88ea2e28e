"""The usage of a Claude transcript read for its usage alone (`azs usage --all` of files no store
holds) is the usage the whole parse makes: every corpus file, and lines of every shape around it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from azsd.ingest.parsers.base import ParseReport, iter_lines
from azsd.ingest.parsers.claude import ClaudeSessionParser
from azsd.ingest.parsers.claude_counting import ClaudeCountingParser
from azsd.ingest.usage import turns_of, usage_record
from tests.conftest import corpus_files
from tests.test_usage_prices import assistant, user

FILES = corpus_files("claude-session")


def _reports(lines: list[bytes]) -> tuple[ParseReport, ParseReport]:
    full, counting = ClaudeSessionParser(), ClaudeCountingParser()
    for parser in (full, counting):
        parser.report.counted_elsewhere = lambda key: key.endswith("7")  # some counted by another run
        for line in lines:
            parser.feed(line)
        parser.finish()
    return full.report, counting.report


def _same(full: ParseReport, counting: ParseReport) -> None:
    assert counting.usage == full.usage
    assert counting.message_keys == full.message_keys
    assert counting.counted_before == full.counted_before
    assert counting.agent_session_id == full.agent_session_id and counting.model == full.model
    assert turns_of(counting) == turns_of(full)
    assert usage_record(counting, "f") == usage_record(full, "f")
    assert counting.lines == full.lines


@pytest.mark.skipif(not FILES, reason="../shared/corpus/claude-session is absent")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_corpus_file_counts_the_same(path: Path) -> None:
    with path.open("rb") as stream:
        _same(*_reports(list(iter_lines(stream))))


def test_lines_of_every_shape_count_the_same() -> None:
    usage = {"input_tokens": 10, "output_tokens": 2, "cache_creation_input_tokens": 5}
    task = {"type": "tool_use", "id": "t9", "name": "Task", "input": {"prompt": "look"}}
    odd = [
        user("a prompt"),
        assistant(1, "claude-sonnet-4-5", usage),
        assistant(1, "claude-sonnet-4-5", {**usage, "output_tokens": 9}),  # the same message, grown
        assistant(7, "claude-opus-4-1", usage),  # counted by another run
        assistant(2, "<synthetic>", {"input_tokens": 0}),
        {**assistant(3, "claude-sonnet-4-5", usage), "costUSD": 0.25},
        {**assistant(4, "claude-haiku-4-5", usage), "requestId": None},
        {"type": "assistant", "message": "not an object", "usage": 1},
        {"type": "assistant", "message": {"model": "claude-sonnet-4-5", "usage": usage}},  # no id
        {"type": "assistant", "message": {"id": None, "model": "claude-sonnet-4-5", "usage": usage}},
        {"type": "progress", "data": {"message": {"usage": usage}}},
        {**assistant(5, "claude-sonnet-4-5", usage), "message": {
            **assistant(5, "claude-sonnet-4-5", usage)["message"], "content": [task]}},
        user("the prompt of the sub-agent: no turn"),
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t9", "content": "done"}]}},
        user("another prompt"),
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "file text"}]}},
        {"type": "cost-state", "startTime": 1, "totalCostUSD": 0.5, "totalDurationMs": 10},
    ]  # fmt: skip
    lines = [json.dumps(obj).encode() for obj in odd]
    lines += [b"{not json", b"[1]", b"", '"usage" \xff'.encode("latin-1")]
    full, counting = _reports(lines)
    assert full.usage.input > 0 and turns_of(full) == 2
    _same(full, counting)
