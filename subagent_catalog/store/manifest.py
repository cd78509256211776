"""The archive manifest, validated before anything trusts it.

A manifest is read from disk or an object store, so it may be truncated,
ill-typed or hostile. ``parse_manifest`` checks the fields the package
uses (with pydantic) and that every data file it names is one this package
could have written: a relative name inside the manifest's own generation
directory, of the exact form ``gen-NNNNNN/<table>/project_dir=<segment>/part-NNNNNN-NNNN.parquet``
(format 3; ``part-NNNNNN.parquet`` and an unpartitioned ``gen-NNNNNN/facts/`` in earlier formats). Names with
``..``, absolute paths, URLs or glob characters never reach a reader or a
``remove``. Fields the package only reports (``versions``, ``engine``,
``update``...) are kept as they are.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

import pydantic

from subagent_catalog.store.checksum import DIGEST_BYTES, DIGEST_KEY
from subagent_catalog.store.layout import ARCHIVE_FORMAT, ArchiveError

FORMAT_VERSION = 8
"""Written by this version: parts written by workers (named by task), every table partitioned by project
directory (the facts table too), descriptors and problems ordered by sort keys (``order_by``); sessions
with outcomes, time split, usage samples and tool call records, events with ``in_seed`` (format 4),
each event's decoded ``text`` and ``text_fields`` (format 5), the text of events outside
``TEXT_TYPES`` in the events files' ``data_text`` column instead of ``text`` (format 6), and the sessions'
active time and context size (``layout.SESSIONS_SINCE_7``, format 7), and their title, first human prompt and
name (``layout.SESSIONS_SINCE_8``, format 8)."""

READABLE_VERSIONS = frozenset({5, 6, 7, 8})
"""Versions ``open_archive`` reads (each table's row order is in its ``order_by``; an older archive reads the
columns added since, ``layout.SESSIONS_SINCE``, as null: not known)."""

MAX_MANIFEST_BYTES = 256 * 1024 * 1024
"""The largest manifest read (it names files, not rows: real ones are kilobytes to a few megabytes)."""

GENERATION = re.compile(r"gen-\d{6}")
_TABLE_FILE = re.compile(
    r"(?P<gen>gen-\d{6})/(?:(?P<table>sessions|descriptors|problems|events|facts)/project_dir=[A-Za-z0-9._~-]{1,200}"
    r"|(?P<facts>facts))/part-\d{6}(?:-\d{4})?\.parquet"
)


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow", strict=True, defer_build=True)


Digest = Annotated[str, pydantic.StringConstraints(pattern=rf"^[0-9a-f]{{{2 * DIGEST_BYTES}}}$")]


class TableEntry(_Model):
    """One table's files and row count.

    Since the read checks, also each file's row count and size; since the checksums, each file's digest
    (``file_blake2b``, ``store.checksum``).
    """

    files: list[str]
    rows: int = pydantic.Field(ge=0)
    file_rows: list[pydantic.NonNegativeInt] | None = None
    file_bytes: list[pydantic.NonNegativeInt] | None = None
    file_blake2b: list[Digest] | None = None


class Tables(_Model):
    """The four frame tables."""

    sessions: TableEntry
    descriptors: TableEntry
    problems: TableEntry
    events: TableEntry


class Manifest(_Model):
    """The fields of ``manifest.json`` this package relies on (others are kept)."""

    format: Literal["subagent-catalog-archive"]
    format_version: int
    generation: int = pydantic.Field(ge=1, le=999_999)
    data_dir: str
    root: str
    compression: Literal["zstd", "none"]
    events: bool
    reader_digest: str
    listing_error: str | None = None
    listing_error_path: str | None = None
    tables: Tables
    fingerprints: TableEntry
    row_counts: dict[str, int | None] = pydantic.Field(default_factory=dict)


def parse_manifest(text: str | bytes, *, where: str) -> dict[str, Any]:
    """A manifest's fields, validated (see the module docstring).

    Args:
        text: the manifest's bytes or text.
        where: the manifest's location, for messages.

    Returns:
        The manifest as a dict (unknown fields kept).

    Raises:
        ArchiveError: not JSON, not a manifest of this package, a version it
            cannot read, an ill-typed field, or a file name outside its
            generation.

    Examples:
        >>> parse_manifest('{"format": "x"}', where="m.json")
        Traceback (most recent call last):
        ...
        subagent_catalog.store.layout.ArchiveError: 'm.json' is not a subagent_catalog archive manifest (hint: ...)
        >>> parse_manifest('{"format": "subagent-catalog-archive"', where="m.json")
        Traceback (most recent call last):
        ...
        subagent_catalog.store.layout.ArchiveError: 'm.json' is not valid JSON (truncated or damaged?)...(hint: ...)
    """
    if len(text) > MAX_MANIFEST_BYTES:
        raise ArchiveError(
            f"{where!r} is {len(text)} bytes, more than any manifest ({MAX_MANIFEST_BYTES})",
            hint="this is not an archive manifest",
        )
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ArchiveError(
            f"{where!r} is not valid JSON (truncated or damaged?): {str(error)[:200]}",
            hint="re-export the archive; an export replaces the manifest only when it completes",
        ) from None
    if not isinstance(value, dict) or value.get("format") != ARCHIVE_FORMAT:
        raise ArchiveError(
            f"{where!r} is not a subagent_catalog archive manifest",
            hint="check the path; an export never overwrites foreign data",
        )
    version = value.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise ArchiveError(
            f"archive format version {version!r} in {where!r} is not one this version reads "
            f"({', '.join(map(str, sorted(READABLE_VERSIONS)))})",
            hint="re-export the archive with this version of subagent_catalog",
        )
    try:
        manifest = Manifest.model_validate(value)
        if not GENERATION.fullmatch(manifest.data_dir):
            raise ValueError(f"data_dir {manifest.data_dir!r} is not a generation directory name")
        entries = [
            *((name, getattr(manifest.tables, name)) for name in Tables.model_fields),
            ("fingerprints", manifest.fingerprints),
        ]
        for field_name, entry in entries:
            table = "facts" if field_name == "fingerprints" else field_name
            for index, name in enumerate(entry.files):
                match = _TABLE_FILE.fullmatch(name)
                if match is None or match["gen"] != manifest.data_dir or (match["facts"] or match["table"]) != table:
                    raise ValueError(
                        f"{field_name}.files[{index}] = {name[:120]!r} is not a {table} file of {manifest.data_dir}"
                    )
        for field_name, entry in entries:
            for key in ("file_rows", "file_bytes", DIGEST_KEY):
                values = getattr(entry, key)
                if values is not None and len(values) != len(entry.files):
                    raise ValueError(f"{field_name}.{key} has {len(values)} values for {len(entry.files)} files")
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        problem = f"{'.'.join(str(part) for part in first['loc']) or '(top)'}: {first['msg']}"
    except ValueError as error:
        problem = str(error)
    else:
        return value
    raise ArchiveError(
        f"{where!r} is not a valid archive manifest: {problem}",
        hint="the manifest was damaged or edited: re-export the archive",
    )
