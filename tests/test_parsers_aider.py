"""Aider's chat history parser on real files of four Aider generations (tests/data/aider, from
Aider's own test fixture) and on the edge cases of its Markdown."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from azsd.events import AssistantText, Complete, Event, Hook, Init, ToolCall, ToolResult, UserMessage
from azsd.ingest.file import parse_file
from azsd.ingest.parsers import detect_format, make_parser
from azsd.ingest.parsers.aider import NOT_IN_HISTORY, AiderParser, parse_input_history, parse_tokens
from azsd.ingest.usage import usage_record
from azsd.model import Usage

DATA = Path(__file__).parent / "data" / "aider"
SAMPLES = sorted(DATA.glob("*.md"))


def _parse(text: str | bytes, **kw: Any) -> tuple[list[Event], AiderParser]:
    parser = AiderParser(**kw)
    data = text.encode() if isinstance(text, str) else text
    return parser.feed_all(data.splitlines(keepends=True)), parser


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_every_real_sample_parses_cleanly_and_is_detected(path: Path) -> None:
    assert detect_format(path.read_bytes().splitlines()) == "aider"
    events, report = parse_file(path)
    assert report.format == "aider" and not report.skipped
    assert report.lines == len(path.read_bytes().splitlines())
    assert any(isinstance(e, Init) and e.model for e in events)
    assert any(isinstance(e, UserMessage) for e in events)
    calls = {e.tool_use_id for e in events if isinstance(e, ToolCall)}
    results = {e.tool_use_id for e in events if isinstance(e, ToolResult)}
    assert results <= calls  # every result answers a call


def test_v047_runs_edit_blocks_and_request_costs() -> None:
    events, parser = _parse((DATA / "aider__v0.47-request-cost.md").read_bytes(), closed=True)
    assert [e.model for e in events if isinstance(e, Init)] == ["claude-3-5-sonnet-20240620"] * 2 + [
        "gpt-4o-mini"
    ]
    assert sum(isinstance(e, Complete) for e in events) == 3
    (edit,) = (e for e in events if isinstance(e, ToolCall))
    assert edit.input["old_string"].startswith("def run_install(cmd):")
    assert "spinner = Spinner(" in edit.input["new_string"] and "```" not in edit.input["new_string"]
    texts = [e.text for e in events if isinstance(e, AssistantText)]
    assert texts[0].endswith("Here's the change:") and texts[1].startswith("This change replaces")
    assert [e.content for e in events if isinstance(e, UserMessage)][1:3] == ["/diff", "/ex"]
    assert parser.report.usage == Usage(input=5244 + 12566, output=604 + 84)
    assert parser.report.cost_usd is not None and parser.report.cost_usd.usd == pytest.approx(0.0219)


def test_v048_shell_output_is_the_result_of_a_bash_call() -> None:
    events, _ = _parse((DATA / "aider__v0.48-shell-output.md").read_bytes())
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.input for c in calls] == [{"command": "ls"}, {"command": "ls --color"}]
    first, second = (e for e in events if isinstance(e, ToolResult))
    assert first.tool_name == "Bash" and first.content.startswith("CNAME\nCONTRIBUTING.md")
    # the output ends where Aider's own messages begin: its question, an interrupt (a Hook each)
    assert first.content.endswith("tmp_over_time.svg\ntmp_timing.svg")
    assert second.content.endswith("tmp_timing.svg") and "\x1b[32m" in second.content  # colours as logged
    hooks = [e.output for e in events if isinstance(e, Hook)]
    question = next(h for h in hooks if h.startswith("Add the output to the chat? (y/n/instructions): n"))
    assert question.endswith("^C again to exit")


def test_shell_output_is_the_first_message_after_its_call() -> None:
    events, _ = _parse(
        "# aider chat started at 2024-08-07 12:46:04\n\n"
        "#### /run make  \n> Add the output to the chat? (y/n): n  \n\n"
        "#### fix it  \n\nI will run it.\n\n> Running make test  \n> ok\n1 passed  \n"
        "> Add command output to the chat? (Y)es/(N)o [Yes]: n  \n\n"
    )
    results = [e.content for e in events if isinstance(e, ToolResult)]
    assert results == [NOT_IN_HISTORY, "ok\n1 passed"]  # a command whose output is not there: said so
    hooks = [e.output for e in events if isinstance(e, Hook)]
    assert hooks == [
        "Add the output to the chat? (y/n): n",
        "Add command output to the chat? (Y)es/(N)o [Yes]: n",
    ]


def test_cache_generations_are_read_as_their_reports_say() -> None:
    _, cached = _parse((DATA / "aider__v0.50-cached.md").read_bytes())
    assert cached.report.usage == Usage(input=492 * 3, output=72 * 3, cache_read=1278)
    _, hit = _parse((DATA / "aider__v0.50-cache-hit.md").read_bytes())
    assert hit.report.usage == Usage(input=21523 - 13952, output=9, cache_read=13952)
    _, written = _parse((DATA / "aider__v0.51-cache-write.md").read_bytes())
    assert written.report.usage == Usage(input=28000, output=758, cache_write=1600)  # the 2-line reports too
    assert written.report.cost_usd is not None and written.report.cost_usd.usd == pytest.approx(0.1069)
    record = usage_record(written.report, "/p/.aider.chat.history.md")
    assert record is not None and record.parts[0].cost is not None
    assert record.parts[0].cost.source == "reported" and record.parts[0].slot is not None  # dated by the run


def test_a_torn_last_block_waits_for_the_line_after_it() -> None:
    parser = AiderParser()
    head = ["# aider chat started at 2025-01-02 03:04:05", "", "#### hi  ", "", "Hello", "there"]
    out = [e for line in head for e in parser.feed(line.encode())]
    assert [type(e) for e in out] == [Init, UserMessage]
    assert parser.feed(b"") == []  # a blank line inside a reply does not end it
    assert [type(e) for e in parser.feed(b"> Tokens: 10 sent, 2 received.  ")] == [AssistantText]
    assert [type(e) for e in parser.finish()] == [Hook]


def test_fences_quotes_and_odd_lines() -> None:
    text = (
        "# aider chat started at 2025-01-02 03:04:05\n\n#### show me  \n\n"
        "Here:\n\n```\n> not a tool line\n#### not a prompt\n```\n\n"
        "src/a.py\n````python\n<<<<<<< SEARCH\n=======\nprint(1)\n>>>>>>> REPLACE\n````\n\n"
        "> Applied edit to src/a.py  \n"
    )
    events, parser = _parse(text.encode() + b"\xff\xfe broken\n")
    reply = next(e for e in events if isinstance(e, AssistantText))
    assert "> not a tool line\n#### not a prompt" in reply.text
    call = next(e for e in events if isinstance(e, ToolCall))
    assert call.input == {"file_path": "src/a.py", "old_string": "", "new_string": "print(1)",
                          "summary": "create src/a.py (1 lines)"}  # fmt: skip
    assert any(isinstance(e, ToolResult) and e.tool_use_id == call.tool_use_id for e in events)
    assert parser.report.skipped == {"invalid_utf8": 1}


def test_token_reports() -> None:
    assert parse_tokens("Tokens: 2.4k sent, 104 received. Cost: $0.00042 message, $0.00042 session.") == (
        Usage(input=2400, output=104),
        0.00042,
    )
    assert parse_tokens("Tokens: 1.2M sent, 3 received.") == (Usage(input=1_200_000, output=3), None)
    assert parse_tokens("Tokens: lots sent, 3 received.") is None
    assert make_parser("aider").format == "aider"


def test_the_input_history_dates_each_prompts_usage() -> None:
    typed = parse_input_history(
        b"\n# 2024-08-05 19:33:40.000000\n+Use the Spinner instead of the inlined custom spinner\n"
        b"\n# 2024-08-05 23:59:00.250000\n+hi\n"
        b"\n# not a time\n+lost\n"
    )
    assert [text for _, text in typed] == ["Use the Spinner instead of the inlined custom spinner", "hi"]
    data = (DATA / "aider__v0.47-request-cost.md").read_bytes()
    _, dated = _parse(data, prompts=typed)
    _, undated = _parse(data)
    times = sorted(p.total.first for p in dated.report.tally.parts() if p.total.first is not None)
    assert times == [typed[0][0], typed[1][0]]  # each reply's usage at its prompt's time
    assert dated.report.usage == undated.report.usage
    runs = [datetime(2024, 8, 5, 19, 33, 32), datetime(2024, 8, 5, 20, 39, 59)]  # without: the runs' starts
    assert [p.total.first for p in undated.report.tally.parts()] == [r.astimezone().timestamp() for r in runs]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_the_usage_record_holds_every_tokens_line_even_the_last(path: Path) -> None:
    """Issue 35: a file whose last reply's `Tokens:` line ends it (a one-shot `aider --message` run)
    had that reply's cost and not its tokens: the end of the file added them to the total, not to
    the parts a session's usage is made of."""
    text = path.read_bytes()
    parser = AiderParser()
    parser.feed_all(text.splitlines())
    record = usage_record(parser.report, str(path))
    sent = sum(part.usage.input for part in record.parts) if record is not None else 0
    assert sent == parser.report.usage.input
    said = [
        parse_tokens(line[2:].strip()) for line in text.decode().splitlines() if line.startswith("> Tokens: ")
    ]
    assert parser.report.usage.input == sum(u.input for u, _ in filter(None, said))
