"""Row payload encoding: one zstd frame (level 3) per `events.data` value (spec §2.3).

Reading accepts what AZUREAL writes (frames without a content size, from a streaming encoder) and
legacy rows that hold raw, uncompressed JSON.

>>> codec = RowCodec()
>>> codec.decode(codec.encode(b'"Compacted"'))
b'"Compacted"'
"""

from __future__ import annotations

from typing import Final

import zstandard

__all__ = ["ZSTD_LEVEL", "CodecError", "RowCodec"]

ZSTD_LEVEL: Final = 3
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
