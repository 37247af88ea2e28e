"""Line decoding, the skip report, bounded line splitting, detection, overlap and ingest errors."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from azsd.errors import IngestError
from azsd.events import AssistantText, Init, UserMessage
from azsd.ingest.file import ingest_file, overlap_prefix_len, parse_file
from azsd.ingest.parsers import (
    JSONL_FORMATS,
    TOO_LONG,
    UnknownFormatError,
    detect_format,
    iter_lines,
    make_parser,
    split_lines,
)
from azsd.store import Store


@pytest.mark.parametrize("fmt", JSONL_FORMATS)
def test_malformed_lines_are_skipped_and_counted_never_raised(fmt: str) -> None:
    parser = make_parser(fmt)
    bad = [
        b"not json at all",
        b'{"type": "user", "message": ',  # torn
        b"[1, 2, 3]",
        b'"a string"',
        b'{"type":"user","message":"\xff\xfe"}',  # invalid UTF-8
        b'{"type":"definitely-not-a-type"}',
        TOO_LONG,
        b"",
        b"   ",
    ]
    events = parser.feed_all(bad)
    assert events == []
    assert parser.report.lines == len(bad)
    assert parser.report.skipped == {
        "invalid_json": 2,
        "not_an_object": 2,
        "invalid_utf8": 1,
        "unknown_type": 1,
        "too_long": 1,
    }
    assert "7 skipped" in parser.report.summary()


@pytest.mark.parametrize("fmt", JSONL_FORMATS)
def test_wrongly_shaped_known_lines_do_not_raise(fmt: str) -> None:
    parser = make_parser(fmt)
    shapes = [
        b'{"type":"assistant","message":"oops"}',
        b'{"type":"user","message":{"content":[1,null,"x"]}}',
        b'{"type":"item.completed","item":"oops"}',
        b'{"type":"response_item","payload":[]}',
        b'{"type":"event_msg","payload":{"type":"token_count","info":"x"}}',
        b'{"type":"result","session_id":"s","duration_ms":"slow"}',
    ]
    for shape in shapes:
        parser.feed(shape)  # must not raise
    assert parser.report.lines == len(shapes)


def test_unknown_format_name() -> None:
    with pytest.raises(UnknownFormatError, match="expected one of"):
        make_parser("yaml")


def test_split_lines_keeps_the_torn_rest() -> None:
    assert split_lines(b"") == ([], b"")
    assert split_lines(b"abc") == ([], b"abc")
    assert split_lines(b"a\n") == ([b"a"], b"")
    assert split_lines(b"a\n\nb\nc") == ([b"a", b"", b"b"], b"c")


@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=20), st.integers(1, 17))
def test_iter_lines_yields_every_line_whatever_the_chunking(lines: list[bytes], chunk: int) -> None:
    data = b"".join(line + b"\n" for line in lines)
    assert list(iter_lines(io.BytesIO(data), chunk=chunk)) == lines


def test_iter_lines_skips_huge_lines_without_holding_them() -> None:
    huge = b"x" * 5000
    data = b"first\n" + huge + b"\nlast\n" + huge
    out = list(iter_lines(io.BytesIO(data), max_line=1000, chunk=64))
    assert out == [b"first", TOO_LONG, b"last", TOO_LONG]
    assert list(iter_lines(io.BytesIO(b"a\ntorn"), final=False)) == [b"a"]
    assert list(iter_lines(io.BytesIO(b"a\ntorn"))) == [b"a", b"torn"]


@pytest.mark.parametrize(
    ("first", "fmt"),
    [
        (b'{"type":"system","subtype":"init","session_id":"s"}', "claude-stream-json"),
        (b'{"type":"summary","summary":"t","leafUuid":"u"}', "claude-session"),
        (b'{"parentUuid":null,"type":"user","sessionId":"s","message":{}}', "claude-session"),
        (b'{"type":"thread.started","thread_id":"t"}', "codex-exec-json"),
        (b'{"id":"0","msg":{"type":"task_started"}}', "codex-exec-json"),
        (b'{"model":"o3","provider":"openai","sandbox":"read-only","approval":"never"}', "codex-exec-json"),
        (b'{"type":"session_meta","payload":{"id":"x"}}', "codex-rollout"),
        (b'{"id":"x","timestamp":"t","instructions":null}', "codex-rollout"),
    ],
)
def test_detect_format(first: bytes, fmt: str) -> None:
    assert detect_format([b"", b"garbage", first]) == fmt


def test_detect_format_gives_none_for_other_json() -> None:
    assert detect_format([b'{"hello":"world"}', b"[]"]) is None


def test_overlap_prefix_len() -> None:
    a, b, c, d = (AssistantText(text=t) for t in "abcd")
    init = Init(cwd="/", model="m")
    assert overlap_prefix_len([], [init, a]) == 0
    assert overlap_prefix_len([init, a, b], [init, a, b]) == 3
    assert overlap_prefix_len([init, a, b], [init, b, c]) == 2  # Init skipped, then b overlaps
    assert overlap_prefix_len([a, b, c], [b, c, d]) == 2
    assert overlap_prefix_len([a, b, c], [d]) == 0
    assert overlap_prefix_len([a], [init, init]) == 0  # a new run that only began (issue 13)
    assert overlap_prefix_len([a, b, a, b], [a, b, a, b, c]) == 4


def test_ingest_of_a_file_of_no_known_format(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"hello": "world"}\n')
    with pytest.raises(IngestError, match="not a JSONL file of any known agent format"):
        parse_file(path)
    with pytest.raises(IngestError, match="No such file"):
        parse_file(tmp_path / "missing.jsonl")
    with pytest.raises(IngestError, match="unknown format"):
        parse_file(path, "yaml")


def test_ingest_appends_only_the_new_tail(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    init = '{"type":"system","subtype":"init","session_id":"s","cwd":"/w","model":"m"}\n'
    text = (
        '{"type":"assistant","session_id":"s",'
        '"message":{"id":"m%d","content":[{"type":"text","text":"%s"}]}}\n'
    )
    path.write_text(init + text % (1, "one"))
    with Store.open(tmp_path) as store:
        sid = store.create_session().id
        store.append_events(sid, [UserMessage(content="prompt")])
        # The run's Init is stored: the session does not hold it yet (issue 13; spec §4.5 dropped it).
        assert ingest_file(store, sid, path).appended == 2
        # The agent wrote more; only the new line is appended.
        path.write_text(init + text % (1, "one") + text % (2, "two"))
        report = ingest_file(store, sid, path)
        assert (report.appended, report.duplicates) == (1, 2)
        assert store.load_events(sid).plain() == [
            UserMessage(content="prompt"),
            Init(cwd="/w", model="m"),
            AssistantText(text="one"),
            AssistantText(text="two"),
        ]


def test_iter_lines_never_reads_past_stop() -> None:
    data = b"one\ntwo\nthree\nfour\n"
    assert list(iter_lines(io.BytesIO(data), stop=8)) == [b"one", b"two"]
    assert list(iter_lines(io.BytesIO(data), stop=10, chunk=3)) == [b"one", b"two", b"th"]
    assert list(iter_lines(io.BytesIO(data), stop=10, final=False)) == [b"one", b"two"]
    assert list(iter_lines(io.BytesIO(data), stop=len(data) + 5)) == [b"one", b"two", b"three", b"four"]
