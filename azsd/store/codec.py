"""Row payload encoding: one zstd frame (level 3) per `events.data` value (spec §2.3).

Reading accepts what AZUREAL writes (frames without a content size, from a streaming encoder) and
legacy rows that hold raw, uncompressed JSON. Every read is bounded: a row is at most
:data:`MAX_EVENT_BYTES` of JSON (an event is made of one agent line, and no line longer than that is
read), checked against the size a frame's header declares before anything is decompressed, and
while a frame that declares none is decompressed; a row over it is a :class:`CodecError`, as a
corrupt frame is, so a few bytes that would expand to gigabytes (another program's row, a
teammate's) cost nothing but the error.

>>> codec = RowCodec()
>>> codec.decode(codec.encode(b'"Compacted"'))
b'"Compacted"'
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

import zstandard

__all__ = ["MAX_EVENT_BYTES", "PARALLEL_ROWS", "ZSTD_LEVEL", "CodecError", "RowCodec"]

#: The most JSON one row may hold (the longest agent line azsd reads, azsd.ingest.parsers.base).
MAX_EVENT_BYTES: Final = 64 * 1024 * 1024

ZSTD_LEVEL: Final = 3
#: From this many rows on, :meth:`RowCodec.encode_many` compresses on several cores.
PARALLEL_ROWS: Final = 4096
#: zstd threads for a big batch (1: never; the pure-Python backend has no batch API).
_BATCH_API: Final = hasattr(zstandard.ZstdCompressor, "multi_compress_to_buffer")
_THREADS: Final = min(4, os.cpu_count() or 1) if _BATCH_API else 1
_MAGIC: Final = b"\x28\xb5\x2f\xfd"


def _threads_for(frames: int) -> int:
    """zstd threads for decompressing `frames` rows at once (0: the calling thread)."""
    return _THREADS if frames >= PARALLEL_ROWS and _THREADS > 1 else 0


def _size_said(frame: bytes) -> int:
    """The content size a zstd frame's header gives, or -1 (none, or a header zstd cannot read)."""
    try:
        return int(zstandard.frame_content_size(frame))
    except zstandard.ZstdError:
        return -1


class CodecError(ValueError):
    """A stored payload is neither a complete zstd frame nor raw JSON."""


class RowCodec:
    """A reusable compressor and decompressor. Not thread-safe: one per owning thread."""

    def __init__(self) -> None:
        self._cctx = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
        self._dctx = zstandard.ZstdDecompressor()

    def encode(self, payload: bytes) -> bytes:
        """Compress one row's JSON into a single frame."""
        return self._cctx.compress(payload)

    def encode_many(self, payloads: Sequence[bytes]) -> list[bytes]:
        """Compress each row's JSON into a frame of its own, as :meth:`encode` does, one per payload.

        A big batch is compressed by zstd's own threads with the GIL released (the frames are the
        same bytes either way).
        """
        if len(payloads) < PARALLEL_ROWS or _THREADS < 2:
            compress = self._cctx.compress
            return [compress(payload) for payload in payloads]
        frames = self._cctx.multi_compress_to_buffer(list(payloads), threads=_THREADS)
        return [frames[i].tobytes() for i in range(len(frames))]

    def decode_many(self, rows: Sequence[bytes | str]) -> list[bytes | CodecError]:
        """:meth:`decode` of each row, the error in its place where one cannot be read.

        The frames that say their content size (azsd writes it) are decompressed in one C call
        (`multi_decompress_to_buffer`, GIL released) rather than one Python call each, as long as
        their sizes add up to at most :data:`MAX_EVENT_BYTES`; the others (a frame that does not say
        its size, as AZUREAL's streaming encoder writes them, raw JSON, a batch with a bad frame)
        take the one-row path, which gives the same bytes.
        """
        out: list[bytes | CodecError | None] = [None] * len(rows)
        frames = {
            i: data
            for i, data in enumerate(rows)
            if isinstance(data, bytes) and data.startswith(_MAGIC) and _BATCH_API
        }
        batch, held = [], 0  # frames of declared sizes, at most one event's worth in all at once
        for i, frame in frames.items():
            size = _size_said(frame)
            if 0 <= size and held + size <= MAX_EVENT_BYTES:
                batch.append(i)
                held += size
        found = self._decompress_batch([frames[i] for i in batch]) if len(batch) > 1 else None
        if found is not None:
            for i, json in zip(batch, found, strict=True):
                out[i] = json
        for i, data in enumerate(rows):
            if out[i] is None:
                try:
                    out[i] = self.decode(data)
                except CodecError as exc:
                    out[i] = exc
        return out  # type: ignore[return-value]  # no None is left

    def _decompress_batch(self, frames: list[bytes]) -> list[bytes] | None:
        """Each frame's content in one call, or None if any frame cannot be done that way."""
        try:
            found = self._dctx.multi_decompress_to_buffer(
                list[bytes | bytearray | memoryview](frames), threads=_threads_for(len(frames))
            )
        except (zstandard.ZstdError, ValueError):  # a frame without a content size, or a bad one
            return None
        return [found[i].tobytes() for i in range(len(found))]

    def decode(self, data: bytes | str) -> bytes:
        """The JSON bytes of a stored row, whether zstd-compressed or raw (at most
        :data:`MAX_EVENT_BYTES`: a :class:`CodecError` says when a row is over it)."""
        if isinstance(data, str):
            data = data.encode()
        if not data.startswith(_MAGIC):
            if len(data) > MAX_EVENT_BYTES:
                raise CodecError(_too_big(len(data)))
            return data
        try:
            size = zstandard.frame_content_size(data)
            if size > MAX_EVENT_BYTES:
                raise CodecError(_too_big(size))
            if size >= 0:  # -1: the frame does not say (as Rust writes it)
                return self._dctx.decompress(data)
            with self._dctx.stream_reader(data) as reader:
                out = reader.read(MAX_EVENT_BYTES + 1)
            if len(out) > MAX_EVENT_BYTES:
                raise CodecError(_too_big(len(out), at_least=True))
            dobj = self._dctx.decompressobj()  # the whole frame there, and nothing after it
            dobj.decompress(data)
            if not dobj.eof:
                raise CodecError("truncated zstd frame")
            return out
        except zstandard.ZstdError as exc:
            raise CodecError(f"bad zstd frame: {exc}") from None


def _too_big(size: int, *, at_least: bool = False) -> str:
    more = "over " if at_least else ""
    return f"a row of {more}{size:,} bytes of JSON: over the {MAX_EVENT_BYTES:,} an event may hold"
