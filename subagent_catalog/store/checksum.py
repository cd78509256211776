"""Checksums of an archive's Parquet parts: recorded at export, checked before any reader touches a part.

A damaged part can do worse than fail to read: a few flipped bits in a
Parquet footer make pyarrow's footer accessors throw a C++ exception through
code that cannot pass it on (the process aborts: "terminate called after
throwing an instance of 'parquet::ParquetException'"), a damaged page makes
Polars panic (the panic hook prints to stderr before the error is raised),
and a flipped bit inside a compressed value may decode to a wrong number.
So every part's BLAKE2b digest (16 bytes) is computed at export from the
bytes written (they are in memory already) and recorded in the manifest
(``file_blake2b``, beside ``file_bytes`` and ``file_rows``); the reader
hashes each part's bytes, in chunks, before it parses the footer
(``store.archive_check``), and parses the footer from the bytes it hashed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

DIGEST_KEY = "file_blake2b"
"""The manifest field (in each table's entry) listing its files' digests, as hex."""

DIGEST_BYTES = 16
"""The digest's size: 128 bits (damage, not an adversary, is what it detects; the manifest is not signed)."""

CHUNK_BYTES = 8 * 1024 * 1024
"""Bytes read and hashed at a time (memory stays bounded whatever a part's size)."""


def part_digest(data: bytes | bytearray | memoryview) -> str:
    """The digest of one part's bytes, as the manifest records it.

    Examples:
        >>> part_digest(b"PAR1")
        '0a0e356e2cd99be2d5a1be15db07f4de'
    """
    return hashlib.blake2b(data, digest_size=DIGEST_BYTES).hexdigest()


def digest_chunks(read: Callable[[int], bytes], *, keep: int) -> tuple[str, int, bytes]:
    """Hash a stream read ``CHUNK_BYTES`` at a time: its digest, its size and its last bytes.

    Args:
        read: reads at most ``n`` bytes (``b""`` at the end), as ``file.read``.
        keep: how many of the last bytes to return (the Parquet footer is
            parsed from them: the bytes hashed, not a second read).

    Examples:
        >>> import io
        >>> digest, size, tail = digest_chunks(io.BytesIO(b"PAR1").read, keep=2)
        >>> digest == part_digest(b"PAR1"), size, tail
        (True, 4, b'R1')
    """
    hasher = hashlib.blake2b(digest_size=DIGEST_BYTES)
    size = 0
    tail = b""
    while chunk := read(CHUNK_BYTES):
        hasher.update(chunk)
        size += len(chunk)
        tail = (tail + chunk)[-keep:] if keep else b""
    return hasher.hexdigest(), size, tail
