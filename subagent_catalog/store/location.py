"""Where an archive lives: a local directory or an object-store URL, read and written alike.

A ``Location`` is a small picklable value (the URL and its storage options),
so an export can hand it to every worker, which opens its own connection:
workers write their Parquet parts straight to the archive. Local paths use
plain file I/O (parts are created exclusively, never through a link), and so
does a ``file://`` URL, which names a local path (``local_location``); URLs
of object stores (``s3://``, ``gs://``) go through ``pyarrow.fs``, configured
from the same ``storage_options`` Polars takes (object_store keys such as
``aws_endpoint_url``, ``aws_access_key_id``, ``aws_region``...), so one set
of options serves the manifest, the parts and the readers.
"""

from __future__ import annotations

import importlib
import os
import stat
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

import polars as pl

from subagent_catalog.read.regular import read_regular
from subagent_catalog.store.layout import ArchiveError, is_url

S3_OPTIONS: dict[str, str] = {
    "aws_access_key_id": "access_key",
    "access_key_id": "access_key",
    "aws_secret_access_key": "secret_key",
    "secret_access_key": "secret_key",
    "aws_session_token": "session_token",
    "session_token": "session_token",
    "aws_token": "session_token",
    "token": "session_token",
    "aws_region": "region",
    "region": "region",
    "aws_default_region": "region",
    "aws_endpoint_url": "endpoint_override",
    "aws_endpoint": "endpoint_override",
    "endpoint_url": "endpoint_override",
    "endpoint": "endpoint_override",
    "aws_allow_http": "allow_http",
    "allow_http": "allow_http",
    "aws_virtual_hosted_style_request": "force_virtual_addressing",
    "virtual_hosted_style_request": "force_virtual_addressing",
}
"""``storage_options`` keys (Polars/object_store names) understood for ``s3://``, and their ``pyarrow.fs`` argument."""

_S3_ENVIRONMENT: dict[str, tuple[str, ...]] = {
    "endpoint_override": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"),
    "allow_http": ("AWS_ALLOW_HTTP",),
}
"""Environment variables read for an ``s3://`` option not given (as object_store reads them for Polars' scans)."""

GCS_OPTIONS: dict[str, str] = {
    "google_endpoint_url": "endpoint_override",
    "endpoint_url": "endpoint_override",
    "endpoint": "endpoint_override",
    "google_anonymous": "anonymous",
    "anonymous": "anonymous",
}
"""``storage_options`` keys understood for ``gs://`` (credentials come from the environment)."""

_TRUE = ("1", "true", "yes", "on")


def _flag(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in _TRUE)


def local_location(location: str, storage_options: dict[str, Any] | None = None) -> str:
    """A location with a ``file://`` URL replaced by the local path it names; any other location as it is.

    A ``file://`` URL is a local directory: reading and writing it take the
    local path (the lock, exclusive parts, no links followed, the corpus-root
    checks), never ``pyarrow.fs``.

    Raises:
        ArchiveError: a ``file://`` URL with storage options, a host, a query
            or a fragment, or without an absolute path.

    Examples:
        >>> local_location("file:///tmp/arch%20ive"), local_location("file://localhost/tmp/a")
        ('/tmp/arch ive', '/tmp/a')
        >>> local_location("s3://bucket/a"), local_location("out/a")
        ('s3://bucket/a', 'out/a')
        >>> try:
        ...     local_location("file://server/share")
        ... except ArchiveError as error:
        ...     print(str(error).split(" (hint")[0])
        file URL 'file://server/share' names the host 'server': only local paths are read
    """
    parsed = urlparse(location)
    if parsed.scheme.lower() != "file":
        return location
    hint = "write file:///absolute/path (percent-encode '?', '#' and '%' in names), or give the path itself"
    if storage_options:
        raise ArchiveError(
            f"file URL {location!r} takes no storage options (it names a local path)",
            hint="drop --storage-option / storage_options for a local path",
        )
    if parsed.netloc not in ("", "localhost"):
        raise ArchiveError(
            f"file URL {location!r} names the host {parsed.netloc!r}: only local paths are read", hint=hint
        )
    if parsed.query or parsed.fragment or parsed.params or not parsed.path.startswith("/"):
        raise ArchiveError(f"file URL {location!r} is not a plain absolute path", hint=hint)
    return unquote(parsed.path, errors="surrogateescape")


def arrow_filesystem(url: str, storage_options: dict[str, Any] | None) -> tuple[Any, str]:
    """A ``pyarrow.fs`` filesystem for an object-store URL, and the path of the URL inside it.

    Raises:
        ArchiveError: an unknown scheme or storage option, or a URL without a bucket.

    Examples:
        >>> options = {"aws_endpoint_url": "http://127.0.0.1:9", "aws_region": "x"}
        >>> fs, path = arrow_filesystem("s3://bucket/arch", options)
        >>> type(fs).__name__, path
        ('S3FileSystem', 'bucket/arch')
        >>> arrow_filesystem("s3://bucket/a", {"aws_bogus": 1})
        Traceback (most recent call last):
        ...
        subagent_catalog.store.layout.ArchiveError: storage option 'aws_bogus' is not one ... (hint: ...)
    """
    fs: Any = importlib.import_module("pyarrow.fs")
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    options = dict(storage_options or {})
    if scheme == "file":  # a Location reads and writes a file:// URL as the local path (local_location)
        return fs.LocalFileSystem(), local_location(url, storage_options)
    if scheme in ("s3", "s3a"):
        known, make = S3_OPTIONS, fs.S3FileSystem
    elif scheme in ("gs", "gcs"):
        known, make = GCS_OPTIONS, fs.GcsFileSystem
    else:
        raise ArchiveError(
            f"archive location {url!r} has a scheme this package cannot open",
            hint="use a local path, file://, s3:// or gs://",
        )
    if not parsed.netloc:
        raise ArchiveError(f"archive location {url!r} names no bucket", hint="write s3://BUCKET/prefix")
    kwargs: dict[str, Any] = {}
    for key, value in options.items():
        name = known.get(key.lower())
        if name is None:
            raise ArchiveError(
                f"storage option {key!r} is not one this package understands for {scheme}://",
                hint=f"use {', '.join(sorted(k for k in known if k.startswith(('aws_', 'google_'))))}",
            )
        kwargs[name] = value
    if scheme in ("s3", "s3a"):  # what object_store (Polars' scans) takes from the environment, pyarrow too
        for name, variables in _S3_ENVIRONMENT.items():
            found = next((os.environ[v] for v in variables if os.environ.get(v)), None)
            if name not in kwargs and found is not None:
                kwargs[name] = found
    allow_http = _flag(kwargs.pop("allow_http", False))
    endpoint = kwargs.get("endpoint_override")
    if isinstance(endpoint, str) and "://" in endpoint:
        given = urlparse(endpoint)
        kwargs["endpoint_override"] = given.netloc + given.path.rstrip("/")
        kwargs["scheme"] = given.scheme
    elif allow_http:
        kwargs["scheme"] = "http"
    for flag in ("anonymous", "force_virtual_addressing"):
        if flag in kwargs:
            kwargs[flag] = _flag(kwargs[flag])
    try:
        filesystem = make(**kwargs)
    except (TypeError, ValueError, OSError) as error:
        raise ArchiveError(f"cannot open {url!r}: {error}", hint="check the storage options") from None
    return filesystem, (parsed.netloc + parsed.path).rstrip("/")


@dataclass(frozen=True)
class Location:
    """An archive location: a local directory, or an object-store URL with its storage options.

    Picklable: workers open their own filesystem from it. A ``file://`` URL
    is kept as the local path it names (``local_location``).

    Examples:
        >>> import tempfile
        >>> here = Location(tempfile.mkdtemp())
        >>> here.write_new("gen-000001/x.bin", b"ab")
        >>> here.read("gen-000001/x.bin", limit=10), here.list_files("gen-000001")
        (b'ab', ['gen-000001/x.bin'])
    """

    url: str
    storage_options: dict[str, Any] | None = None
    _fs: list[Any] = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        local = local_location(self.url, self.storage_options)
        if local != self.url:
            object.__setattr__(self, "url", local)
            object.__setattr__(self, "storage_options", None)

    @property
    def local(self) -> bool:
        """Whether this is a local path (not a URL)."""
        return not is_url(self.url)

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "storage_options": self.storage_options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "url", state["url"])
        object.__setattr__(self, "storage_options", state["storage_options"])
        object.__setattr__(self, "_fs", [])

    def full(self, relative: str) -> str:
        """The location of a file below this one (a local path or a URL).

        Examples:
            >>> Location("s3://b/a/").full("gen-000001/m")
            's3://b/a/gen-000001/m'
        """
        if self.local:
            return os.path.join(self.url, *relative.split("/")) if relative else self.url
        return self.url.rstrip("/") + ("/" + relative if relative else "")

    def scan(self, names: list[str], **options: Any) -> pl.LazyFrame:
        """These Parquet files below this location as one lazy scan, in this order (no globbing, no Hive keys)."""
        files = [self.full(name) for name in names]
        return pl.scan_parquet(
            files, hive_partitioning=False, glob=False, storage_options=self.storage_options, **options
        )

    def _arrow(self, relative: str) -> tuple[Any, str]:
        if not self._fs:
            self._fs.extend(arrow_filesystem(self.url, self.storage_options))
        filesystem, base = self._fs
        return filesystem, base + ("/" + relative if relative else "")

    def footer(self, relative: str) -> Any:
        """A Parquet file's footer (``pyarrow.parquet.FileMetaData``), read by pyarrow."""
        pq: Any = importlib.import_module("pyarrow.parquet")
        if self.local:
            return pq.read_metadata(self.full(relative))
        filesystem, path = self._arrow(relative)
        return pq.read_metadata(path, filesystem=filesystem)

    def write_new(self, relative: str, data: bytes | memoryview) -> None:
        """Create a file that must not exist yet (locally: exclusive, never through a link).

        Raises:
            OSError: the file exists or cannot be written (full disk, permissions, network...).
        """
        if self.local:
            path = self.full(relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "xb") as handle:
                handle.write(data)
            return
        filesystem, path = self._arrow(relative)
        if self._info(filesystem, path) is not None:
            raise FileExistsError(17, "File exists", self.full(relative))
        with filesystem.open_output_stream(path) as stream:
            stream.write(data)

    def put(self, relative: str, data: bytes) -> None:
        """Write or replace an object (object stores only: a put is atomic there).

        Raises:
            OSError: the object cannot be written.
        """
        filesystem, path = self._arrow(relative)
        with filesystem.open_output_stream(path) as stream:
            stream.write(data)

    def read(self, relative: str, *, limit: int) -> bytes:
        """At most ``limit`` bytes of a file.

        Raises:
            OSError: it cannot be read (``FileNotFoundError`` when missing, ``NotRegularFileError``
                when it is a FIFO, a device or a directory).
        """
        if self.local:
            return read_regular(self.full(relative), limit=limit)  # never blocks on a FIFO, never reads a device
        filesystem, path = self._arrow(relative)
        if self._info(filesystem, path) is None:
            raise FileNotFoundError(2, "No such file or directory", self.full(relative))
        with filesystem.open_input_stream(path) as stream:
            data: bytes = stream.read(limit)
        return data

    @staticmethod
    def _info(filesystem: Any, path: str) -> Any:
        fs: Any = importlib.import_module("pyarrow.fs")
        info = filesystem.get_file_info(path)
        return None if info.type == fs.FileType.NotFound else info

    def exists(self, relative: str) -> bool:
        """Whether a file or directory exists below this location."""
        if self.local:
            return os.path.lexists(self.full(relative))
        filesystem, path = self._arrow(relative)
        return self._info(filesystem, path) is not None

    def delete(self, relative: str) -> bool:
        """Remove one regular file (locally never through a symbolic link); ``False`` when it was not there."""
        if self.local:  # every directory on the way, and the file, checked not to be a link
            parts = relative.split("/")
            path = os.path.join(self.url, *parts)
            try:
                for depth in range(1, len(parts)):
                    if not stat.S_ISDIR(os.lstat(os.path.join(self.url, *parts[:depth])).st_mode):
                        return False
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    return False
                os.unlink(path)
            except OSError:
                return False
            return True
        filesystem, path = self._arrow(relative)
        try:
            filesystem.delete_file(path)
        except (FileNotFoundError, OSError):
            return False
        return True

    def list_names(self, relative: str = "") -> list[str]:
        """The names directly below a directory (empty when it does not exist)."""
        if self.local:
            try:
                return sorted(os.listdir(self.full(relative)))
            except (FileNotFoundError, NotADirectoryError):
                return []
        fs: Any = importlib.import_module("pyarrow.fs")
        filesystem, path = self._arrow(relative)
        try:
            infos = filesystem.get_file_info(fs.FileSelector(path, allow_not_found=True, recursive=False))
        except FileNotFoundError:
            return []
        return sorted(info.base_name for info in infos)

    def list_files(self, relative: str) -> list[str]:
        """Every regular file below a directory, as names relative to this location (links not followed)."""
        if self.local:
            base = self.full(relative)
            out = []
            for folder, dirs, files in os.walk(base):
                dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
                inner = os.path.relpath(folder, self.url).replace(os.sep, "/")
                for name in files:
                    if stat.S_ISREG(os.lstat(os.path.join(folder, name)).st_mode):
                        out.append(f"{inner}/{name}")
            return sorted(out)
        fs: Any = importlib.import_module("pyarrow.fs")
        filesystem, path = self._arrow(relative)
        infos = filesystem.get_file_info(fs.FileSelector(path, allow_not_found=True, recursive=True))
        _, base = self._arrow("")
        return sorted(info.path[len(base) + 1 :] for info in infos if info.type == fs.FileType.File)


def read_parquet(location: Location, names: list[str], *, filters: Any = None, columns: list[str] | None = None) -> Any:
    """Parts of this archive as one Arrow table (pyarrow only, one thread: safe in a forked worker).

    Examples:
        >>> import tempfile
        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> here = Location(tempfile.mkdtemp())
        >>> pq.write_table(pa.table({"a": [1, 2]}), here.full("p.parquet"))
        >>> read_parquet(here, ["p.parquet"], filters=[("a", "=", 2)]).num_rows
        1
    """
    import pyarrow.parquet as pq

    paths, filesystem = _arrow_paths(location, names)
    return pq.read_table(
        paths, filesystem=filesystem, filters=filters, columns=columns, use_threads=False, partitioning=None
    )


def _arrow_paths(location: Location, names: list[str]) -> tuple[list[str], Any]:
    """The parts' paths for pyarrow and the filesystem they are on (``None``: local)."""
    if location.local:
        return [location.full(name) for name in names], None
    return [location._arrow(name)[1] for name in names], location._arrow("")[0]


def parquet_dataset(location: Location, names: list[str]) -> Any:
    """Parts of this archive as one ``pyarrow.dataset`` (what DuckDB scans), read lazily by its reader.

    Examples:
        >>> import tempfile
        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> here = Location(tempfile.mkdtemp())
        >>> pq.write_table(pa.table({"a": [1, 2]}), here.full("p.parquet"))
        >>> parquet_dataset(here, ["p.parquet"]).count_rows()
        2
    """
    import pyarrow.dataset as ds

    paths, filesystem = _arrow_paths(location, names)
    return ds.dataset(paths, format="parquet", filesystem=filesystem, partitioning=None)


def parquet_column_min(location: Location, name: str, column: str) -> int | None:
    """The smallest value of an integer column of one Parquet part, from its footer's statistics alone.

    ``None`` when the statistics do not tell (a row group without them, or
    whose values are all null; no rows at all; no such column): read the
    column then.

    Examples:
        >>> import tempfile
        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> here = Location(tempfile.mkdtemp())
        >>> pq.write_table(pa.table({"a": [5, 3, None, 9]}), here.full("p.parquet"), row_group_size=2)
        >>> parquet_column_min(here, "p.parquet", "a"), parquet_column_min(here, "p.parquet", "b")
        (3, None)
    """
    return footer_column_min(location.footer(name), column)


def footer_column_min(metadata: Any, column: str) -> int | None:
    """The smallest value of an integer column from a Parquet footer's statistics (``parquet_column_min``).

    Only for a footer whose bytes are known good (``store.archive_check`` calls it on parts that matched
    their checksum): pyarrow's per-column footer accessors abort the process on some damaged footers.

    Examples:
        >>> import io
        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> buffer = io.BytesIO()
        >>> pq.write_table(pa.table({"a": [5, 3, None, 9]}), buffer, row_group_size=2)
        >>> footer_column_min(pq.read_metadata(io.BytesIO(buffer.getvalue())), "a")
        3
    """
    smallest: int | None = None
    for group in range(metadata.num_row_groups):
        rows = metadata.row_group(group)
        if rows.num_rows == 0:
            continue
        chunks = [rows.column(i) for i in range(rows.num_columns) if rows.column(i).path_in_schema == column]
        statistics = chunks[0].statistics if len(chunks) == 1 else None
        if statistics is None or not statistics.has_min_max or not isinstance(statistics.min, int):
            return None
        smallest = statistics.min if smallest is None else min(smallest, statistics.min)
    return smallest


BATCH_BYTES = 32 * 1024 * 1024
"""About how many bytes of decoded rows ``iter_parquet`` hands over at a time."""


def iter_parquet(
    location: Location,
    names: list[str],
    *,
    where: Any = None,
    columns: list[str] | None = None,
    batch_rows: int,
    batch_bytes: int = BATCH_BYTES,
) -> Any:
    """Parts of this archive as Arrow record batches (pyarrow only, one thread), a bounded batch at a time.

    A batch holds at most ``batch_rows`` rows and, judged from the first rows
    of each row group, about ``batch_bytes`` bytes (a part repeating one large
    row millions of times costs one batch of it). Each batch is validated in
    full (UTF-8 text, offsets), so damaged text raises ``ArrowInvalid`` here
    instead of reaching Polars, whose conversion of invalid text to Python
    panics. With ``where`` (a pyarrow expression) each batch is filtered, as
    a one-batch table.

    Examples:
        >>> import tempfile
        >>> import pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq
        >>> here = Location(tempfile.mkdtemp())
        >>> pq.write_table(pa.table({"a": [1, 2, 3]}), here.full("p.parquet"))
        >>> [b.num_rows for b in iter_parquet(here, ["p.parquet"], where=pc.field("a") > 1, batch_rows=1) if b.num_rows]
        [1, 1]
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name in names:  # ParquetFile.iter_batches decodes page by page (a dataset scan decodes a row group whole)
        if location.local:
            parquet = pq.ParquetFile(location.full(name))
        else:
            filesystem, path = location._arrow(name)
            parquet = pq.ParquetFile(filesystem.open_input_file(path))
        for group in range(parquet.num_row_groups):
            size = batch_rows
            probe = next(
                parquet.iter_batches(batch_size=64, row_groups=[group], columns=columns, use_threads=False), None
            )
            if probe is not None and probe.num_rows:
                size = max(1, min(batch_rows, batch_bytes * probe.num_rows // max(1, probe.nbytes)))
            for batch in parquet.iter_batches(batch_size=size, row_groups=[group], columns=columns, use_threads=False):
                batch.validate(full=True)  # pyarrow does not check UTF-8 when it reads: invalid text stops here
                yield batch if where is None else pa.Table.from_batches([batch]).filter(where)
