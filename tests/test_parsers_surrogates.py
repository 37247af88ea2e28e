"""A line holding a lone UTF-16 surrogate (JavaScript strings hold them; JSON decoders refuse them) is
read with U+FFFD in its place, not dropped whole (issue 37: 19 of 61 such lines were lost)."""

from __future__ import annotations

import json

import pytest

from azsd.events import AssistantText, UserMessage
from azsd.ingest.parsers import make_parser

LONE = "\\ud800"  # as JSON text holds it: a high surrogate with no low one after it


def claude_line(kind: str, text: str) -> bytes:
    message = {"role": kind, "content": text} if kind == "user" else {
        "id": "msg_1", "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }  # fmt: skip
    line = json.dumps({"type": kind, "sessionId": "s", "uuid": f"u-{kind}", "message": message})
    return line.replace("@@", LONE).encode()


@pytest.mark.parametrize("kind", ["user", "assistant"])
def test_a_lone_surrogate_becomes_a_replacement_character(kind: str) -> None:
    parser = make_parser("claude-session")
    events = parser.feed(claude_line(kind, "before @@ after \\ud83d\\ude00"))
    assert not parser.report.skipped, parser.report.skipped
    text = "before \ufffd after \\ud83d\\ude00"
    expected = UserMessage(content=text) if kind == "user" else AssistantText(text=text)
    assert expected in events


def test_an_escaped_backslash_before_u_is_text_not_a_surrogate() -> None:
    parser = make_parser("claude-session")
    line = json.dumps(
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "a \\ud800 b"}}
    )
    events = parser.feed(line.encode())
    assert UserMessage(content="a \\ud800 b") in events
