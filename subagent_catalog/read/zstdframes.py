"""Zstandard frame container of ``session.jsonl.zstd`` logs.

Upstream writes the header alone in the first frame and one checksummed
frame per write batch. It finds frame boundaries structurally (without
decompressing), rejects bad structure, keeps a torn final frame apart, and
decodes each complete frame on its own (checking its checksum).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import zstandard

from subagent_catalog.read.limits import PlaintextTooLarge

ZSTD_MAGIC = 0xFD2FB528


class ZstdStructureError(ValueError):
    """A complete frame region whose structure upstream rejects.

    Attributes:
        offset: byte offset of the damage.
    """

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True)
class FrameScan:
    """Complete frames ``(start, end)`` in file order, and a torn final frame's start."""

    frames: list[tuple[int, int]] = field(default_factory=list)
    torn_start: int | None = None


def scan_frames(buffer: bytes, max_frames: int | None = None) -> FrameScan:
    """Locate complete frames as upstream's ``scanZstdFrames`` does.

    Raises:
        ZstdStructureError: on a bad magic number, a reserved header bit or
            a reserved block type.

    Examples:
        >>> import zstandard
        >>> frame = zstandard.ZstdCompressor(write_checksum=True).compress(b"x\\n")
        >>> scan_frames(frame + frame[:5]).torn_start == len(frame)
        True
    """
    frames: list[tuple[int, int]] = []
    size = len(buffer)
    offset = 0
    while offset < size:
        start = offset
        if size - offset < 4:
            return FrameScan(frames, start)
        if int.from_bytes(buffer[offset : offset + 4], "little") != ZSTD_MAGIC:
            raise ZstdStructureError(f"corrupt Zstandard session log: invalid frame magic at byte {offset}", offset)
        offset += 4
        if offset == size:
            return FrameScan(frames, start)
        descriptor = buffer[offset]
        offset += 1
        if descriptor & 0x18:
            raise ZstdStructureError(
                f"corrupt Zstandard session log: reserved frame-header bit at byte {offset - 1}",
                offset - 1,
            )
        content_size_flag = descriptor >> 6
        single_segment = bool(descriptor & 0x20)
        checksum = bool(descriptor & 0x04)
        dictionary_flag = descriptor & 0x03
        dictionary_bytes = 4 if dictionary_flag == 3 else dictionary_flag
        content_size_bytes = (1 if single_segment else 0) if content_size_flag == 0 else 1 << content_size_flag
        remaining = (0 if single_segment else 1) + dictionary_bytes + content_size_bytes
        if size - offset < remaining:
            return FrameScan(frames, start)
        offset += remaining
        while True:
            if size - offset < 3:
                return FrameScan(frames, start)
            block_header = int.from_bytes(buffer[offset : offset + 3], "little")
            offset += 3
            last_block = bool(block_header & 1)
            block_type = (block_header >> 1) & 0x03
            block_size = block_header >> 3
            if block_type == 0x03:
                raise ZstdStructureError(
                    f"corrupt Zstandard session log: reserved block type at byte {offset - 3}",
                    offset - 3,
                )
            payload = 1 if block_type == 0x01 else block_size
            if size - offset < payload:
                return FrameScan(frames, start)
            offset += payload
            if last_block:
                break
        if checksum:
            if size - offset < 4:
                return FrameScan(frames, start)
            offset += 4
        frames.append((start, offset))
        if max_frames is not None and len(frames) == max_frames:
            return FrameScan(frames)
    return FrameScan(frames)


_LOCAL = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompressor.

    A ``ZstdDecompressor`` (and every ``decompressobj`` made from it) shares
    one native context that is not thread-safe, and decoding releases the
    GIL: Polars runs a lazy scan's sources on several threads at once, so a
    process-wide one crashed the interpreter. One per thread keeps the
    context reused (creating one per frame would cost an allocation each).
    """
    decompressor: zstandard.ZstdDecompressor | None = getattr(_LOCAL, "decompressor", None)
    if decompressor is None:
        decompressor = _LOCAL.decompressor = zstandard.ZstdDecompressor()
    return decompressor


_PIECE = 4096  # compressed bytes fed at a time when a frame does not declare its size


def decode_frame(frame: bytes, *, budget: int | None = None) -> bytes:
    """Decompress one complete frame, verifying its checksum.

    With a ``budget``, a frame that declares a larger content size is refused
    before decoding, and one that declares none is decoded piece by piece and
    refused as soon as it passes the budget (a decompression bomb never
    reaches memory).

    Raises:
        zstandard.ZstdError: on damage (bad checksum, bad blocks).
        PlaintextTooLarge: the frame decompresses to more than ``budget`` bytes.

    Examples:
        >>> import zstandard
        >>> decode_frame(zstandard.ZstdCompressor(write_checksum=True).compress(b"hi\\n"))
        b'hi\\n'
    """
    decompressor = _decompressor().decompressobj()
    declared = 0 if budget is None else zstandard.frame_content_size(frame)
    if budget is not None and declared > budget:
        raise PlaintextTooLarge(budget, declared)
    if budget is not None and declared < 0:  # no size declared: decoded a piece at a time
        out, trailing = _bounded(decompressor, frame, budget)
    else:
        out = decompressor.decompress(frame)
        trailing = bool(decompressor.unused_data)
    if not decompressor.eof:
        raise zstandard.ZstdError("frame ended before its last block")
    if trailing:
        raise zstandard.ZstdError("data after the end of the frame")
    return out


def _bounded(decompressor: Any, data: bytes, budget: int) -> tuple[bytes, bool]:
    """Decode ``data`` a few KiB at a time (a piece yields at most ~170 MiB) within ``budget``.

    Returns the plaintext and whether bytes follow the frame's end.
    """
    out = bytearray()
    view = memoryview(data)
    for start in range(0, len(view), _PIECE):
        out += decompressor.decompress(view[start : start + _PIECE])
        if len(out) > budget:
            raise PlaintextTooLarge(budget)
        if decompressor.eof:
            return bytes(out), bool(decompressor.unused_data) or start + _PIECE < len(view)
    return bytes(out), False


def decode_torn_prefix(partial: bytes, *, budget: int | None = None) -> bytes:
    """Plaintext recoverable from an incomplete final frame (empty on failure).

    Raises:
        PlaintextTooLarge: the partial frame decompresses to more than ``budget`` bytes.

    Examples:
        >>> import zstandard
        >>> frame = zstandard.ZstdCompressor(write_checksum=True).compress(b"a\\n" * 100)
        >>> decode_torn_prefix(frame[:4])
        b''
    """
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    try:
        if budget is None:
            return decompressor.decompress(partial)
        return _bounded(decompressor, partial, budget)[0]
    except zstandard.ZstdError:
        return b""


def compress_frame(plaintext: bytes, *, level: int = 3) -> bytes:
    """One independently decodable, checksummed frame (what upstream writes).

    Examples:
        >>> decode_frame(compress_frame(b"abc\\n"))
        b'abc\\n'
    """
    return zstandard.ZstdCompressor(level=level, write_checksum=True).compress(plaintext)
