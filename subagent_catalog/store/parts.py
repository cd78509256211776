"""Parquet parts of an archive generation, written where the work runs.

``PartWriter`` turns Arrow tables into Parquet parts named
``gen-NNNNNN/<table>/project_dir=<segment>/part-TTTTTT-KKKK.parquet`` (one
per project directory the rows belong to; ``TTTTTT`` is the task that wrote
it, so workers never collide) and writes them straight to the archive
location. It uses pyarrow only: forked workers must not run Polars.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

from subagent_catalog.store.checksum import part_digest
from subagent_catalog.store.layout import PARQUET_CODEC, partition_segment
from subagent_catalog.store.location import Location

PARTITIONED = ("sessions", "descriptors", "problems", "events", "facts")
"""Tables split by ``project_dir`` (every table of format 3)."""


def part_name(data_dir: str, table: str, project: str | None, task: int, index: int) -> str:
    """The name of one part, relative to the archive.

    Examples:
        >>> part_name("gen-000002", "sessions", "--w--", 7, 0)
        'gen-000002/sessions/project_dir=--w--/part-000007-0000.parquet'
        >>> part_name("gen-000002", "_walk", None, 3, 1)
        'gen-000002/_walk/part-000003-0001.parquet'
    """
    folder = f"{data_dir}/{table}/{partition_segment(project)}" if table in PARTITIONED else f"{data_dir}/{table}"
    return f"{folder}/part-{task:06d}-{index:04d}.parquet"


SCRATCH_ROW_GROUP = 8192
"""Rows per row group of the scratch tables: read tasks filter them by range, statistics skip the rest."""


def encode_parquet(table: Any, *, row_group_size: int | None = None) -> bytes:
    """An Arrow table as Parquet bytes (zstd).

    Examples:
        >>> import pyarrow as pa
        >>> encode_parquet(pa.table({"a": [1]}))[:4]
        b'PAR1'
    """
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink, compression=PARQUET_CODEC, row_group_size=row_group_size)
    return sink.getvalue()


@dataclass
class PartWriter:
    """Writes one task's parts.

    Examples:
        >>> import tempfile
        >>> import pyarrow as pa
        >>> writer = PartWriter(Location(tempfile.mkdtemp()), "gen-000001", 4)
        >>> writer.write("sessions", pa.table({"project_dir": ["p", "q"], "a": [1, 2]}))
        >>> writer.files["sessions"][1], writer.rows["sessions"]
        ('gen-000001/sessions/project_dir=q/part-000004-0001.parquet', 2)
    """

    location: Location
    data_dir: str
    task: int
    files: dict[str, list[str]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    parts: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    """Each part written: its row count, size in bytes and digest (``part_digest``), which the manifest records."""
    count: int = 0

    def write(self, table_name: str, table: Any) -> None:
        """Write an Arrow table as parts (one per project directory for partitioned tables)."""
        if table.num_rows == 0:
            return
        groups: list[tuple[str | None, Any]] = [(None, table)]
        if table_name in PARTITIONED:  # the rows per project_dir value, in order of first appearance
            import pyarrow.compute as pc

            column = table.column("project_dir")
            groups = []
            for value in pc.unique(column).to_pylist():
                mask = pc.is_null(column) if value is None else pc.fill_null(pc.equal(column, value), False)
                groups.append((value, table.filter(mask)))
        for project, rows in groups:
            name = part_name(self.data_dir, table_name, project, self.task, self.count)
            self.count += 1
            self.files.setdefault(table_name, []).append(name)  # before writing: a failure removes what began
            size = SCRATCH_ROW_GROUP if table_name.startswith("_") else None
            data = encode_parquet(rows, row_group_size=size)
            self.location.write_new(name, data)
            self.rows[table_name] = self.rows.get(table_name, 0) + rows.num_rows
            self.parts[name] = (rows.num_rows, len(data), part_digest(data))
