"""Row payload encoding: one zstd frame (level 3) per `events.data` value (spec §2.3).

Reading accepts what AZUREAL writes (frames without a content size, from a streaming encoder) and
legacy rows that hold raw, uncompressed JSON.

>>> codec = RowCodec()
>>> codec.decode(codec.encode(b'"Compacted"'))
b'"Compacted"'
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

import zstandard

__all__ = ["PARALLEL_ROWS", "ZSTD_LEVEL", "CodecError", "RowCodec"]

ZSTD_LEVEL: Final = 3
#: From this many rows on, :meth:`RowCodec.encode_many` compresses on several cores.
PARALLEL_ROWS: Final = 4096
#: zstd threads for a big batch (1: never; the pure-Python backend has no batch API).
_BATCH_API: Final = hasattr(zstandard.ZstdCompressor, "multi_compress_to_buffer")
_THREADS: Final = min(4, os.cpu_count() or 1) if _BATCH_API else 1
_MAGIC: Final = b"\x28\xb5\x2f\xfd"


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

    def decode(self, data: bytes | str) -> bytes:
        """The JSON bytes of a stored row, whether zstd-compressed or raw."""
        if isinstance(data, str):
            return data.encode()
        if not data.startswith(_MAGIC):
            return data
        try:
            size = zstandard.frame_content_size(data)
            if size >= 0:  # -1: the frame does not say (as Rust writes it)
                return self._dctx.decompress(data)
            dobj = self._dctx.decompressobj()
            out = dobj.decompress(data)
            if not dobj.eof:
                raise CodecError("truncated zstd frame")
            return out
        except zstandard.ZstdError as exc:
            raise CodecError(f"bad zstd frame: {exc}") from None
