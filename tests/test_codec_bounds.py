"""Every row decode is bounded (azsd.store.codec.MAX_EVENT_BYTES): a few kilobytes that would expand
to hundreds of megabytes (a zstd "bomb" another program or a teammate wrote) are an error that costs
nothing, and never stop the rows beside them from being read."""

from __future__ import annotations

import io
import sqlite3
import time
from pathlib import Path

import pytest
import zstandard

from azsd.events import AssistantText, encode_event
from azsd.store import Store, store_path
from azsd.store.codec import MAX_EVENT_BYTES, CodecError, RowCodec
from tests.test_cli import Azs, azs
from tests.test_client import daemon, worktree

__all__ = ["azs", "daemon", "worktree"]  # the fixtures, re-exported for pytest

CHUNK = b"\0" * (1 << 20)


def bomb(size: int, *, declared: bool) -> bytes:
    """A zstd frame of `size` zero bytes, made without holding them (a few kilobytes), its content
    size in its header or not (as AZUREAL's streaming encoder writes frames)."""
    cctx = zstandard.ZstdCompressor(level=19, write_content_size=declared)
    out = io.BytesIO()
    writer = cctx.stream_writer(out, size=size if declared else -1, closefd=False)
    for start in range(0, size, len(CHUNK)):
        writer.write(CHUNK[: min(len(CHUNK), size - start)])
    writer.flush(zstandard.FLUSH_FRAME)
    return out.getvalue()


@pytest.mark.parametrize("declared", [True, False], ids=["size-in-header", "no-size"])
def test_a_bomb_is_refused_before_it_is_expanded(declared: bool) -> None:
    frame = bomb(MAX_EVENT_BYTES + (8 << 20), declared=declared)
    assert len(frame) < 64 * 1024  # kilobytes in the store
    start = time.perf_counter()
    with pytest.raises(CodecError, match="over the"):
        RowCodec().decode(frame)
    assert time.perf_counter() - start < 30  # (an error, not a hang; no timing is asserted finer)


def test_a_frame_that_lies_about_its_size_is_refused() -> None:
    real = zstandard.ZstdCompressor().compress(b'"x"' * 1000)
    header_says_3 = RowCodec().encode(b'"x"')
    lying = header_says_3[:6] + real[6:]  # a declared size, then another frame's body
    with pytest.raises(CodecError):
        RowCodec().decode(lying)


def test_one_bad_row_among_many_leaves_the_others_readable() -> None:
    codec = RowCodec()
    good = [codec.encode(encode_event(AssistantText(text=f"row {i}"))) for i in range(5)]
    rows = [*good[:2], bomb(MAX_EVENT_BYTES + 1, declared=True), b"\x28\xb5\x2f\xfd garbage", *good[2:]]
    out = codec.decode_many(rows)
    assert [isinstance(r, CodecError) for r in out] == [False, False, True, True, False, False, False]
    assert out[0] == encode_event(AssistantText(text="row 0"))


def test_a_raw_row_over_the_limit_is_refused() -> None:
    with pytest.raises(CodecError, match="over the"):
        RowCodec().decode(b"{" + b" " * MAX_EVENT_BYTES + b"}")


def test_a_bomb_another_program_wrote_costs_show_one_event(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        sid = store.create_session("s").id
        store.append_events(sid, [AssistantText(text="before")])
    with sqlite3.connect(store_path(tmp_path)) as db:  # as another program writes a row
        db.execute(
            "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, 2, 'AssistantText', ?, 1)",
            (sid, bomb(MAX_EVENT_BYTES + (8 << 20), declared=False)),
        )
    with Store.open(tmp_path) as store:
        store.append_events(sid, [AssistantText(text="after")])
        loaded = store.load_events(sid)
    assert loaded.plain() == [AssistantText(text="before"), AssistantText(text="after")]
    assert loaded.skipped == 1


def test_show_says_how_many_events_could_not_be_read(azs: Azs, worktree: Path) -> None:
    assert azs("new", "x")[0] == 0
    codec = RowCodec()
    rows = [
        (1, "AssistantText", codec.encode(encode_event(AssistantText(text="readable one")))),
        (2, "AssistantText", bomb(MAX_EVENT_BYTES + (8 << 20), declared=True)),
        (3, "AssistantText", codec.encode(encode_event(AssistantText(text="readable two")))),
    ]
    with sqlite3.connect(store_path(worktree)) as db:  # another program's rows (AZUREAL writes too)
        db.executemany(
            "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (1, ?, ?, ?, 1)", rows
        )
    code, out, err = azs("show", "1")
    assert code == 0
    assert "readable one" in out and "readable two" in out
    assert "1 event could not be read" in err, err
