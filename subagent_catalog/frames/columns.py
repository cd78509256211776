"""Rows of one schema built as columns: Arrow arrays a chunk at a time, taken over by Polars.

``Columns`` collects rows (as lists of values in schema order) and turns
each chunk into an Arrow table, or a Polars frame built over Arrow view
types, with text made UTF-8-safe a column at a time (``arrow_array``) and
columns that repeat another one sharing its buffers (``share_buffers``).
It needs pyarrow only until Polars takes a chunk, so forked workers (which
must not use Polars) build their chunks with it too.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Sequence
from typing import Any

import polars as pl

from subagent_catalog.read.jsvalue import frame_value


def arrow_type(dtype: Any, *, views: bool = False) -> Any:
    """The Arrow type a Polars column type is built from here (Polars reads it back as that type).

    Pure inspection of the Polars type: safe in a forked worker that must not run Polars.
    With ``views``, text and bytes are Arrow's view types, Polars' own layout: Polars takes
    such an array's buffers as they are, where from ``large_string`` it builds views beside
    the Arrow buffers and keeps both (the offsets too) alive.

    Examples:
        >>> arrow_type(pl.Struct({"a": pl.Int64}))
        StructType(struct<a: int64>)
        >>> arrow_type(pl.Datetime("ms", "UTC")), arrow_type(pl.List(pl.String))
        (TimestampType(timestamp[ms, tz=UTC]), LargeListType(large_list<item: large_string>))
        >>> arrow_type(pl.List(pl.String), views=True), arrow_type(pl.Binary, views=True)
        (LargeListType(large_list<item: string_view>), DataType(binary_view))
    """
    import pyarrow as pa

    views = views and hasattr(pa, "string_view")  # pyarrow < 16 has no view types
    simple = {
        pl.Int64: pa.int64(),
        pl.UInt64: pa.uint64(),
        pl.Float64: pa.float64(),
        pl.Boolean: pa.bool_(),
        pl.String: pa.string_view() if views else pa.large_string(),
        pl.Binary: pa.binary_view() if views else pa.large_binary(),
    }
    for polars_type, arrow in simple.items():
        if dtype == polars_type:
            return arrow
    if isinstance(dtype, pl.Datetime):
        return pa.timestamp(dtype.time_unit or "us", tz=dtype.time_zone)
    if isinstance(dtype, pl.List):
        return pa.large_list(arrow_type(dtype.inner, views=views))
    if isinstance(dtype, pl.Struct):
        return pa.struct([(field.name, arrow_type(field.dtype, views=views)) for field in dtype.fields])
    raise TypeError(f"no Arrow type for {dtype!r}")


def arrow_schema(schema: dict[str, Any], *, views: bool = False) -> Any:
    """The Arrow schema of a Polars column schema (see ``arrow_type``).

    Examples:
        >>> arrow_schema({"a": pl.Int64}).names
        ['a']
    """
    import pyarrow as pa

    return pa.schema([(name, arrow_type(dtype, views=views)) for name, dtype in schema.items()])


def share_buffers(frame: pl.DataFrame, shared: dict[str, str]) -> pl.DataFrame:
    """``frame`` with each ``shared`` column taking its equal values from the column it names.

    The values do not change; the memory does. A column equal throughout to
    the other one cast to its type becomes that cast (Polars shares the
    buffers: ``Int64`` as ``Datetime``, UTF-8 ``Binary`` as ``String``);
    text equal in some rows points at the other column's bytes there (views)
    and keeps its own bytes elsewhere.

    Examples:
        >>> frame = pl.DataFrame({"a": ["x" * 20, "y" * 20, None], "b": ["x" * 20, "z", None]})
        >>> share_buffers(frame, {"b": "a"}).equals(frame)
        True
        >>> frame = pl.DataFrame({"raw": [b"/r/a", b"/r/\\xff"], "text": ["/r/a", "/r/\\xff"]})
        >>> share_buffers(frame, {"text": "raw"}).equals(frame)
        True
    """
    columns = []
    for name, base in shared.items():
        dtype = frame.schema[name]
        try:
            same = frame[base].cast(dtype, strict=False)
        except pl.exceptions.ComputeError:  # bytes that are not UTF-8: this chunk keeps its own text
            continue
        equal = same.eq_missing(frame[name])
        if equal.all():
            columns.append(same.alias(name))
        elif dtype == pl.String and equal.any():
            columns.append(frame.select(pl.when(equal).then(same).otherwise(pl.col(name)).alias(name)).to_series())
    return frame.with_columns(columns) if columns else frame


def arrow_array(values: Sequence[Any], arrow: Any, pool: Any = None) -> Any:
    """One column's values as an Arrow array of type ``arrow``, its text made UTF-8-safe (``frame_value``).

    Arrow refuses a string holding a lone surrogate; only a column it refuses
    is gone through again value by value, so a chunk's text is not checked in
    Python string by string.

    Examples:
        >>> import pyarrow as pa
        >>> arrow_array(["a", "x\\udc00", None], pa.string()).to_pylist()
        ['a', 'x\\ufffd', None]
        >>> arrow_array([["\\ud800"], None], pa.large_list(pa.large_string())).to_pylist()
        [['\\ufffd'], None]
    """
    import pyarrow as pa

    try:
        return pa.array(values, type=arrow, memory_pool=pool)
    except UnicodeEncodeError:
        return pa.array([frame_value(v) for v in values], type=arrow, memory_pool=pool)


def polars_series(name: str, values: Sequence[Any], dtype: Any) -> pl.Series:
    """One column's values as a Polars series of type ``dtype``, its text made UTF-8-safe (``frame_value``).

    Polars builds it from the Python values itself: pyarrow's conversion
    imports pandas (about 40 MB) whenever pandas is installed, and pyarrow
    itself is not needed then. Values Polars refuses (which Arrow may take)
    are built by ``arrow_array`` as before, as Arrow view types (Polars'
    own layout), so a column holds the same values whichever builds it.

    Examples:
        >>> polars_series("a", ["x", "y\\udc00", None], pl.String).to_list()
        ['x', 'y\\ufffd', None]
        >>> polars_series("n", [1.0, None], pl.Int64).to_list()  # Polars refuses a float, Arrow takes it
        [1, None]
    """
    if isinstance(dtype, pl.List):
        nested = _list_series(name, values, dtype)
        if nested is not None:
            return nested
    try:
        return pl.Series(name, values, dtype=dtype, strict=True)
    except UnicodeEncodeError:  # a lone surrogate: the column gone through again value by value
        with contextlib.suppress(TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
            return pl.Series(name, [frame_value(v) for v in values], dtype=dtype, strict=True)
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        pass
    import pyarrow as pa

    # The system allocator measured a lower peak than Arrow's default pool (mimalloc), which keeps
    # what the builders free; Polars keeps view-type buffers as they are.
    built = pl.from_arrow(arrow_array(values, arrow_type(dtype, views=True), pa.system_memory_pool()))
    assert isinstance(built, pl.Series)
    return built.rename(name).cast(dtype)


def _list_series(name: str, values: Sequence[Any], dtype: Any) -> pl.Series | None:
    """A list column built from its items' own columns (a struct's from one per field): ``None`` if it has odd values.

    Polars takes a list of tuples per row ten to twenty times slower than
    the same items as flat columns, which it then groups back into the
    rows' lists. ``None`` (the caller builds the column whole) when a row is
    not a list or ``None``, or a struct item is not a tuple of its fields.

    Examples:
        >>> _list_series("l", [["a", "b"], None, [], ["c"]], pl.List(pl.String)).to_list()
        [['a', 'b'], None, [], ['c']]
        >>> _list_series("r", [[(1, "x")], None], pl.List(pl.Struct({"n": pl.Int64, "s": pl.String}))).to_list()
        [[{'n': 1, 's': 'x'}], None]
        >>> _list_series("l", [("a",)], pl.List(pl.String)) is None  # a tuple is not a list here
        True
    """
    if not all(value is None or type(value) is list for value in values):
        return None
    lengths = [len(value) if value is not None else 0 for value in values]
    items = list(itertools.chain.from_iterable(value for value in values if value))
    inner = dtype.inner
    if isinstance(inner, pl.Struct):
        fields = inner.fields
        if not all(type(item) is tuple and len(item) == len(fields) for item in items):
            return None
        columns = list(zip(*items, strict=True)) if items else [() for _ in fields]
        parts = [polars_series(field.name, column, field.dtype) for field, column in zip(fields, columns, strict=True)]
        flat = pl.DataFrame(parts).to_struct("_item")
    else:
        flat = polars_series("_item", items, inner)
    rows = itertools.chain.from_iterable(itertools.repeat(row, length) for row, length in enumerate(lengths))
    grouped = (
        pl.DataFrame([pl.Series("_row", list(rows), dtype=pl.Int64), flat])
        .group_by("_row", maintain_order=True)
        .agg(pl.col("_item"))
    )
    every = pl.DataFrame({"_row": pl.Series(range(len(values)), dtype=pl.Int64)})
    joined = every.join(grouped, on="_row", how="left", maintain_order="left")
    missing = pl.Series([value is None for value in values], dtype=pl.Boolean)
    empty = pl.lit([], dtype=dtype)
    built = joined.select(pl.when(missing).then(None).otherwise(pl.col("_item").fill_null(empty)).alias(name))
    return built.to_series().cast(dtype)


class Columns:
    """Rows of one schema collected as lists of values, turned into an Arrow table of columns per ``flush``.

    Building uses pyarrow only, so it runs in forked workers (which must not
    use Polars); ``frame()`` gives the Polars frame. With ``polars=True`` each
    chunk becomes a Polars frame as it is flushed, built by Polars from the
    values (``polars_series``, so the whole never exists twice and pyarrow is
    not needed), its ``shared`` columns over the buffers of the columns they
    repeat (``share_buffers``). Rows are kept as lists of values in schema order
    until the flush turns them into columns; strings are made UTF-8-safe
    (``frame_value``) as the columns are built.

    Examples:
        >>> cols = Columns({"a": pl.Int64, "b": pl.String})
        >>> cols.add({"a": 1, "b": "x\\udc00"})
        >>> cols.add_values([2, None])
        >>> cols.flush()
        >>> cols.frame().rows()
        [(1, 'x\\ufffd'), (2, None)]
        >>> cols = Columns({"a": pl.Int64, "b": pl.List(pl.String)}, polars=True)
        >>> cols.add({"a": 1})
        >>> cols.flush()
        >>> cols.frame().dtypes
        [Int64, List(String)]
    """

    def __init__(self, schema: dict[str, Any], *, polars: bool = False, shared: dict[str, str] | None = None) -> None:
        self.schema = schema
        self.names = list(schema)
        self.polars = polars
        self.shared = shared or {}
        self.rows: list[list[Any]] = []
        self.chunks: list[Any] = []

    def __len__(self) -> int:
        return len(self.rows)

    @functools.cached_property
    def arrow(self) -> Any:
        """The Arrow schema the chunks are built with (without ``polars=True``; pyarrow imported on first use)."""
        return arrow_schema(self.schema)

    def add(self, row: dict[str, Any]) -> None:
        """Append one row by column name (a missing column is null)."""
        get = row.get
        self.rows.append([get(name) for name in self.names])

    def add_values(self, values: list[Any]) -> None:
        """Append one row as its values in schema order (kept as given: the list is not copied)."""
        if len(values) != len(self.names):
            raise ValueError(f"a row of {len(values)} values for {len(self.names)} columns")
        self.rows.append(values)

    def _columns(self) -> list[tuple[Any, ...]]:
        """The collected rows as columns (one tuple each), the rows dropped."""
        columns = list(zip(*self.rows, strict=True))
        self.rows = []
        return columns

    def flush(self) -> None:
        """Turn the collected rows into a chunk (an Arrow table, or a Polars frame) and drop the Python values."""
        if not len(self):
            return
        if self.polars:
            self.chunks.append(self._polars_chunk())
            return
        import pyarrow as pa

        arrays = [arrow_array(values, field.type) for values, field in zip(self._columns(), self.arrow, strict=True)]
        self.chunks.append(pa.Table.from_arrays(arrays, schema=self.arrow))

    def _polars_chunk(self) -> pl.DataFrame:
        """The collected rows as a Polars frame: a column of nulls only as Polars' shared zeroed storage.

        Polars builds each column from the values (``polars_series``): no
        Arrow conversion, which would import pandas, on the common path.
        """
        height = len(self)
        columns = [
            pl.repeat(None, height, dtype=dtype, eager=True).alias(name)
            if values.count(None) == height
            else polars_series(name, values, dtype)
            for (name, dtype), values in zip(self.schema.items(), self._columns(), strict=True)
        ]
        return share_buffers(pl.DataFrame(columns), self.shared)

    def table(self) -> Any:
        """Every chunk flushed so far as one Arrow table (not copied; not with ``polars=True``)."""
        import pyarrow as pa

        assert not self.polars, "the chunks are Polars frames"
        return pa.concat_tables(self.chunks) if self.chunks else self.arrow.empty_table()

    def frame(self) -> pl.DataFrame:
        """Every chunk flushed so far, as one Polars frame (empty with the schema when none)."""
        if not self.polars:
            frame = pl.from_arrow(self.table())
            assert isinstance(frame, pl.DataFrame)
            return frame
        if not self.chunks:
            return pl.DataFrame(schema=self.schema)
        frames: list[pl.DataFrame] = self.chunks
        return pl.concat(frames, rechunk=False) if len(frames) > 1 else frames[0]
