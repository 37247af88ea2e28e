"""Batch decoding of stored rows gives exactly what decoding them one at a time gives."""

from __future__ import annotations

import zstandard

from azsd.events import EventDecodeError, UserMessage, decode_event, decode_events, encode_event
from azsd.store.codec import CodecError, RowCodec


def _one_by_one(codec: RowCodec, rows: list[bytes | str]) -> list[bytes | str]:
    out: list[bytes | str] = []
    for row in rows:
        try:
            out.append(codec.decode(row))
        except CodecError as exc:
            out.append(f"error: {exc}")
    return out


def _batched(codec: RowCodec, rows: list[bytes | str]) -> list[bytes | str]:
    return [f"error: {r}" if isinstance(r, CodecError) else r for r in codec.decode_many(rows)]


def test_decode_many_mixed_frames_match_row_by_row() -> None:
    codec = RowCodec()
    sized = [codec.encode(b'{"UserMessage":{"content":"%d"}}' % i) for i in range(5)]
    unsized = zstandard.ZstdCompressor(level=3, write_content_size=False).compress(b'"Compacted"')
    rows: list[bytes | str] = [*sized, unsized, b'"Compacting"', '{"Command":{"name":"/x"}}', sized[0]]
    assert _batched(codec, rows) == _one_by_one(codec, rows)
    assert _batched(codec, rows)[5] == b'"Compacted"'


def test_decode_many_bad_frame_is_an_error_in_its_place_only() -> None:
    codec = RowCodec()
    good = [codec.encode(b'"Compacted"') for _ in range(3)]
    rows: list[bytes | str] = [good[0], good[1][:-3], good[2], b"\x28\xb5\x2f\xfd\x00garbage"]
    got = codec.decode_many(rows)
    assert got[0] == got[2] == b'"Compacted"'
    assert isinstance(got[1], CodecError) and isinstance(got[3], CodecError)


def _events_one_by_one(rows: list[tuple[str, bytes]]) -> list[object]:
    out: list[object] = []
    for _, json in rows:
        try:
            out.append(decode_event(json))
        except EventDecodeError as exc:
            out.append(str(exc))
    return out


def _events_batched(rows: list[tuple[str, bytes]]) -> list[object]:
    return [str(e) if isinstance(e, EventDecodeError) else e for e in decode_events(rows)]


def test_decode_events_matches_row_by_row_with_bad_rows() -> None:
    um = lambda text: ("UserMessage", encode_event(UserMessage(content=text)))  # noqa: E731
    rows = [
        um("a"),
        ("UserMessage", b'{"UserMessage":{"content":"x'),  # these two would merge into one event
        ("UserMessage", b'y"}}'),  # if the array were trusted without checking each span
        ("UserMessage", b'{"UserMessage":{"content":"b"},"Extra":1}'),
        ("UserMessage", b'{"AssistantText":{"text":"kind column disagrees"}}'),
        ("UserMessage", b' {"UserMessage":{"content":"leading space"}}'),
        ("Complete", b'{"Complete":{"success":true,"duration_ms":18446744073709551616,"cost_usd":0}}'),
        ("Complete", b'{"Complete":{"success":true,"duration_ms":5,"cost_usd":0.5}}'),
        ("Compacted", b'"Compacted"'),
        ("Compacted", b'"Compacted"'),
        ("Nonsense", b'{"Nonsense":{}}'),
        um("c"),
    ]
    assert _events_batched(rows) == _events_one_by_one(rows)
    assert str(_events_batched(rows)[2]).startswith("not an externally tagged event")


def test_decode_events_swallowed_comma_is_not_trusted() -> None:
    """Two corrupt rows that join into one valid event, and a row that holds two: same count."""
    rows = [
        ("UserMessage", b'{"UserMessage":{"content":"}'),
        ("UserMessage", b'{"}}'),
        ("UserMessage", b'{"UserMessage":{"content":"p"}},{"UserMessage":{"content":"q"}}'),
    ]
    assert _events_batched(rows) == _events_one_by_one(rows)
    assert all(isinstance(e, str) for e in _events_batched(rows))
