"""An archive's data files checked against its manifest before any of them is read.

An archive is data from elsewhere: a file may be truncated, bit-flipped,
replaced by a FIFO or a device, hold another schema (a time zone Polars
cannot parse panics inside Polars), or hold far more rows than the manifest
says (a part repeating one row millions of times is a few megabytes on disk
and gigabytes in memory). Before a table is first scanned, every file the
manifest names for it is checked:

* locally, it is a regular file (``read.regular``: a FIFO is never opened,
  so nothing blocks), and its size is the one the manifest records (format 3
  manifests written since this check record ``file_bytes``);
* its bytes match the digest the export recorded (``file_blake2b``,
  ``store.checksum``): the whole part is hashed, in chunks, before any
  reader parses any of it, so a damaged part never reaches pyarrow's footer
  accessors (some damaged footers make them abort the process) nor Polars
  (a damaged page makes it panic, and its panic hook prints to stderr); the
  footer is then parsed from the bytes hashed. Manifests written before the
  checksums have none: their footers are read only through calls that raise
  (no per-column statistics, so each file's smallest ``list_order`` is
  unknown and the readers sort or read the column instead);
* its footer parses (pyarrow), is at most ``MAX_FOOTER_BYTES``, and every
  column the readers use has the type of its frame schema (names, integer
  widths, list shapes, timestamp units and time zones); the Arrow schema it
  stores (``ARROW:schema``, which Polars reads the names from) names the
  fields its Parquet schema names (an IPC message: Arrow verifies it before
  reading it, so damaged bytes raise);
* its row count is the one the manifest records for it (``file_rows``), and
  the table's files add up to the manifest's ``rows``.

Any failure is an ``ArchiveError`` naming the file. ``read_guard`` then turns
any error a reader still meets while decoding pages (Polars, Arrow, thrift,
zstd, UTF-8, a Rust panic, which is a ``BaseException``) into an
``ArchiveError`` naming the file it finds damaged (``damaged_file``); an error
no file explains is not the archive's, and passes as it is.
"""

from __future__ import annotations

import base64
import importlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import polars as pl

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.schemas import DESCRIPTOR_SCHEMA, EVENT_SCHEMA, PROBLEM_SCHEMA, SESSION_SCHEMA
from subagent_catalog.read.regular import open_regular, regular_file_problem
from subagent_catalog.store.checksum import DIGEST_KEY, digest_chunks
from subagent_catalog.store.layout import EVENT_EXTRA, SESSIONS_SINCE, TABLE_SCHEMAS, ArchiveError
from subagent_catalog.store.location import Location, footer_column_min

MAX_FOOTER_BYTES = 64 * 1024 * 1024
"""The largest Parquet footer read (a part of 65,536 sessions has one of about 100 KB)."""

PROBE_BATCH_ROWS = 8_192
"""Rows decoded at a time when a failed read looks for the damaged file (memory stays bounded)."""

READ_ERRORS: tuple[type[BaseException], ...] = (Exception, pl.exceptions.PanicException)
"""What decoding a damaged file may raise: any Polars or Arrow error (pyarrow's ``ArrowNotImplementedError`` is a
``NotImplementedError``, its ``ArrowException`` a bare ``Exception``) and the ``PanicException`` of a Rust panic,
which derives from ``BaseException``. The package's own typed errors pass through (a listing failure stays one)."""

_REQUIRED: dict[str, dict[str, Any]] = {
    "sessions": {
        name: kind
        for name, kind in SESSION_SCHEMA.items()
        if not any(name in added for added in SESSIONS_SINCE.values())
    },
    "descriptors": DESCRIPTOR_SCHEMA,
    "problems": PROBLEM_SCHEMA,
    "events": {**EVENT_SCHEMA, **EVENT_EXTRA},
    "facts": TABLE_SCHEMAS["facts"],
}
"""The columns every archive of a readable format version has, per table (format 3 adds sort keys)."""


def _shape(kind: Any) -> Any:
    """An Arrow type as this package compares it (string views, large and small types alike)."""
    pa: Any = importlib.import_module("pyarrow")
    types = pa.types
    if types.is_string(kind) or types.is_large_string(kind) or types.is_string_view(kind):
        return "string"
    if types.is_binary(kind) or types.is_large_binary(kind) or types.is_binary_view(kind):
        return "binary"
    if types.is_list(kind) or types.is_large_list(kind) or types.is_list_view(kind):
        return ("list", _shape(kind.value_type))
    if types.is_timestamp(kind):
        return ("timestamp", kind.unit, kind.tz)
    return str(kind)


_EXPECTED: dict[str, dict[str, Any]] = {}


def _schema_problem(table: str, arrow_schema: Any, *, complete: bool) -> str | None:
    expected = _EXPECTED.get(table)  # the column types of the table's files (TABLE_SCHEMAS), as _shape compares them
    if expected is None:
        schema = pl.DataFrame(schema=TABLE_SCHEMAS[table]).to_arrow().schema
        expected = _EXPECTED[table] = {field.name: _shape(field.type) for field in schema}
    found = {field.name: field.type for field in arrow_schema}
    for name in expected if complete else _REQUIRED[table]:
        if name not in found:
            return f"has no column {name!r}"
    for name, kind in found.items():
        want = expected.get(name)
        if want is not None and _shape(kind) != want:
            return f"column {name!r} has type {str(kind)[:80]!r}, not {want!r}"
    return None


def _field_names(kind: Any) -> Any:
    """A type's nested field names (a list's item is left out: writers name it differently)."""
    types = importlib.import_module("pyarrow").types
    if types.is_struct(kind):
        return [(field.name, _field_names(field.type)) for field in kind]
    if types.is_list(kind) or types.is_large_list(kind) or types.is_list_view(kind):
        return _field_names(kind.value_type)
    return None


def _stored_schema_problem(metadata: Any, arrow_schema: Any) -> str | None:
    """Whether the Arrow schema a part stores (``ARROW:schema``) names the fields its Parquet schema names.

    Polars takes the field names from the stored schema, pyarrow (and so
    DuckDB) from the Parquet schema: a name changed there (a byte that is not
    UTF-8, the digest recomputed) would be damage only Polars sees.

    Examples:
        >>> import io, pyarrow as pa, pyarrow.parquet as pq
        >>> buffer = io.BytesIO()
        >>> pq.write_table(pa.table({"a": [1]}), buffer)
        >>> metadata = pq.read_metadata(pa.BufferReader(buffer.getvalue()))
        >>> _stored_schema_problem(metadata, metadata.schema.to_arrow_schema()) is None
        True
        >>> _stored_schema_problem(metadata, pa.schema([("b", pa.int64())]))
        'stores an Arrow schema (ARROW:schema) whose field names differ from its Parquet schema'
    """
    stored = (metadata.metadata or {}).get(b"ARROW:schema")
    if stored is None:
        return None
    pa: Any = importlib.import_module("pyarrow")
    schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(stored)))
    if [(f.name, _field_names(f.type)) for f in schema] != [(f.name, _field_names(f.type)) for f in arrow_schema]:
        return "stores an Arrow schema (ARROW:schema) whose field names differ from its Parquet schema"
    return None


def _declared(entry: dict[str, Any], key: str, count: int) -> list[int] | None:
    values = entry.get(key)
    if isinstance(values, list) and len(values) == count and all(type(v) is int and v >= 0 for v in values):
        return list(values)
    return None


def check_table(location: Location, table: str, entry: dict[str, Any], *, complete: bool = True) -> list[int | None]:
    """Check every file of one table against the manifest entry (see the module docstring).

    Args:
        location: the archive.
        table: ``sessions``, ``descriptors``, ``problems``, ``events`` or ``facts``.
        entry: the manifest's entry of that table (``files``, ``rows``, and
            ``file_rows``/``file_bytes`` when the export recorded them).
        complete: require every column of ``TABLE_SCHEMAS`` (format 3), not
            only those every readable format has.

    Returns:
        Each file's smallest ``list_order`` from its footer's statistics
        (``None`` when they do not tell), in the order of ``entry["files"]``:
        a limited search orders the files by them without a second read. The
        footers themselves are not kept (about 170 MB at 500,000 sessions).

    Raises:
        ArchiveError: a file is missing, not a regular file, of another size,
            not Parquet, of another schema, or of another row count.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.store.export import export_archive
        >>> from subagent_catalog.synth.writer import header, write_session
        >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> _ = write_session(root, header("a", created_at=1), [], "none")
        >>> manifest = export_archive(root, out, jobs=1)
        >>> check_table(Location(out), "sessions", manifest["tables"]["sessions"])
        [0]
        >>> check_table(Location(out), "sessions", {**manifest["tables"]["sessions"], "rows": 30_000_000})
        Traceback (most recent call last):
        ...
        subagent_catalog.store.layout.ArchiveError: the sessions files hold 1 rows, its manifest says 30000000 ...
    """
    files: list[str] = list(entry["files"])
    rows = _declared(entry, "file_rows", len(files))
    sizes = _declared(entry, "file_bytes", len(files))
    digests = entry.get(DIGEST_KEY)
    digests = list(digests) if isinstance(digests, list) and len(digests) == len(files) else None
    total = 0
    largest = (0, "")
    smallest: list[int | None] = []
    for index, name in enumerate(files):
        where = location.full(name)
        size = _size(location, name, where)
        if sizes is not None and size != sizes[index]:
            raise _damaged(where, f"is {size} bytes, its manifest says {sizes[index]}")
        try:
            if digests is not None:
                metadata = _verified_footer(location, name, where, size, digests[index])
            else:
                metadata = location.footer(name)
            if metadata.serialized_size > MAX_FOOTER_BYTES:
                raise _damaged(where, f"has a Parquet footer of {metadata.serialized_size} bytes")
            arrow_schema = metadata.schema.to_arrow_schema()
            problem = _schema_problem(table, arrow_schema, complete=complete) or _stored_schema_problem(
                metadata, arrow_schema
            )
            count = int(metadata.num_rows)
        except ArchiveError:
            raise
        except READ_ERRORS as error:
            raise _damaged(where, f"is not a readable Parquet file ({_brief(error)})") from None
        if problem is not None:
            raise _damaged(where, problem)
        if rows is not None and count != rows[index]:
            raise _damaged(where, f"holds {count} rows, its manifest says {rows[index]}")
        total += count
        largest = max(largest, (count, where))
        # pyarrow's per-column footer accessors abort the process on some damaged footers (a C++ exception
        # they cannot pass on): only a footer whose bytes matched their checksum is read that deep.
        smallest.append(footer_column_min(metadata, "list_order") if digests is not None else None)
    if total != entry["rows"]:
        raise ArchiveError(
            f"the {table} files hold {total} rows, its manifest says {entry['rows']} (the largest, "
            f"{largest[1]!r}, holds {largest[0]})",
            hint="a data file was replaced or damaged: re-export the archive",
        )
    return smallest


FOOTER_KEEP = 4 * 1024 * 1024
"""The last bytes of a part kept while it is hashed, to parse its footer from (a larger footer is read again)."""


def _verified_footer(location: Location, name: str, where: str, size: int, digest: str) -> Any:
    """Hash a part's bytes and compare them with the manifest's digest; then its footer, parsed from those bytes.

    Raises:
        ArchiveError: the part cannot be read, changed size while it was read, or does not match its digest.
    """
    pa: Any = importlib.import_module("pyarrow")
    try:
        if location.local:
            with os.fdopen(open_regular(where), "rb") as handle:  # never blocks on a FIFO
                found, read, tail = digest_chunks(handle.read, keep=FOOTER_KEEP)
        else:
            filesystem, path = location._arrow(name)
            with filesystem.open_input_stream(path) as stream:
                found, read, tail = digest_chunks(stream.read, keep=FOOTER_KEEP)
    except READ_ERRORS as error:
        raise _damaged(where, f"cannot be read ({_brief(error)})") from None
    if read != size:
        raise _damaged(where, f"changed while it was read ({read} bytes, {size} a moment before)")
    if found != digest:
        raise _damaged(where, f"does not match its checksum (BLAKE2b {found[:16]}…, its manifest says {digest[:16]}…)")
    length = int.from_bytes(tail[-8:-4], "little") if len(tail) >= 12 else -1
    if tail[-4:] == b"PAR1" and 0 < length <= len(tail) - 8:
        pq: Any = importlib.import_module("pyarrow.parquet")
        return pq.read_metadata(pa.BufferReader(tail[-(length + 8) :]))
    return location.footer(name)  # a footer larger than FOOTER_KEEP (the bytes matched a moment ago)


def _size(location: Location, name: str, where: str) -> int:
    if location.local:
        problem = regular_file_problem(where)
        if problem is not None:
            raise _damaged(where, problem)
        return os.stat(where).st_size
    fs: Any = importlib.import_module("pyarrow.fs")
    filesystem, path = location._arrow(name)
    try:
        info = filesystem.get_file_info(path)
    except READ_ERRORS as error:
        raise _damaged(where, f"cannot be read ({_brief(error)})") from None
    if info.type != fs.FileType.File:
        raise _damaged(where, "is missing" if info.type == fs.FileType.NotFound else "is not a file")
    return int(info.size)


def _brief(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:160]}{'…' if len(text) > 160 else ''}"


def _damaged(where: str, problem: str) -> ArchiveError:
    return ArchiveError(
        f"archive data file {where!r} {problem}", hint="the archive was damaged or edited: re-export it"
    )


def damaged_file(location: Location, files: list[str]) -> tuple[str, str] | None:
    """The first of ``files`` that cannot be decoded to its end, and why (``None`` when every one can).

    Each file is decoded in batches of ``PROBE_BATCH_ROWS`` rows by pyarrow,
    then, if pyarrow reads it all, by Polars' streaming engine; so memory
    stays bounded whatever the file declares.

    Examples:
        >>> import tempfile
        >>> here = Location(tempfile.mkdtemp())
        >>> _ = open(here.full("p.parquet"), "wb").write(b"PAR1 not really")
        >>> damaged_file(here, ["p.parquet"])[0].endswith("p.parquet")
        True
    """
    pq: Any = importlib.import_module("pyarrow.parquet")
    for name in files:
        where = location.full(name)
        try:
            if location.local:
                problem = regular_file_problem(where)
                if problem is not None:
                    return where, problem
                parquet = pq.ParquetFile(where)
            else:
                filesystem, path = location._arrow(name)
                parquet = pq.ParquetFile(filesystem.open_input_file(path))
            for batch in parquet.iter_batches(batch_size=PROBE_BATCH_ROWS, use_threads=False):
                batch.validate(full=True)
            scan = pl.scan_parquet(where, hive_partitioning=False, glob=False, storage_options=location.storage_options)
            scan.select(pl.all().hash().sum()).collect(engine="streaming")  # every value decoded, none kept
        except READ_ERRORS as error:
            return where, _brief(error)
    return None


@contextmanager
def read_guard(location: Location, files: Callable[[], list[str]]) -> Iterator[None]:
    """Turn any error met while reading an archive into an ``ArchiveError`` naming the damaged file.

    ``files()`` gives, once an error is met, the files the block may have
    read; the first that ``damaged_file`` finds damaged is named. When none
    is, the error is not the archive's (a bug, say): it passes as it is,
    never relabelled. The package's typed errors (``SubagentCatalogError``:
    an ``ArchiveError``, a listing's ``CatalogError``) and ``KeyboardInterrupt``
    pass through.

    Raises:
        ArchiveError: reading failed, and ``files()`` holds a damaged file.

    Examples:
        >>> import tempfile
        >>> here = Location(tempfile.mkdtemp())
        >>> _ = open(here.full("p.parquet"), "wb").write(b"PAR1 not really")
        >>> with read_guard(here, lambda: ["p.parquet"]):
        ...     pl.read_parquet(here.full("p.parquet"))
        Traceback (most recent call last):
        ...
        subagent_catalog.store.layout.ArchiveError: cannot read archive ...: data file ...p.parquet' is damaged ...
        >>> with read_guard(here, lambda: []):
        ...     raise KeyError("a bug")
        Traceback (most recent call last):
        ...
        KeyError: 'a bug'
    """
    try:
        yield
    except SubagentCatalogError:
        raise
    except READ_ERRORS as error:
        damaged = read_error(location, files(), error)
        if damaged is None:
            raise
        raise damaged from None


def read_error(location: Location, files: list[str], error: BaseException) -> ArchiveError | None:
    """The ``ArchiveError`` of a failed read of ``files``: the damaged file named (``None``: none is damaged).

    Examples:
        >>> import tempfile
        >>> here = Location(tempfile.mkdtemp())
        >>> _ = open(here.full("p.parquet"), "wb").write(b"PAR1 not really")
        >>> print(read_error(here, ["p.parquet"], ValueError("bad")))  # doctest: +ELLIPSIS
        cannot read archive ...: data file '...p.parquet' is damaged (...) (hint: ... re-export it)
        >>> read_error(here, [], ValueError("bad")) is None
        True
    """
    found = damaged_file(location, files) if not isinstance(error, MemoryError) else None
    if found is None:
        return None
    where, why = found
    return ArchiveError(
        f"cannot read archive {location.url!r}: data file {where!r} is damaged ({why})",
        hint="the archive was damaged or edited: re-export it",
    )
