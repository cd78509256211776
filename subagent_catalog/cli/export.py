"""``export``: a corpus's frames to a partitioned Parquet archive (a directory or an object store)."""

from __future__ import annotations

import click

from subagent_catalog.bounds import POSITIVE_COUNT
from subagent_catalog.cli.io import echo, note, translate_errors
from subagent_catalog.cli.options import bounded, corpus_options, storage_options
from subagent_catalog.outputs import OutputError, inside
from subagent_catalog.views.text import terminal_safe

__all__ = ["export"]


@click.command()
@corpus_options
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=str))
@click.option("--events", is_flag=True, help="Also write the events table (every event of every readable log).")
@click.option(
    "--engine",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="Where logs are read: this machine (a process pool) or a Dask cluster.",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="Dask scheduler address (tcp://host:8786); with --engine dask and none, a local cluster runs.",
)
@click.option(
    "--incremental/--full",
    default=True,
    show_default=True,
    help="Re-read only files whose path, size, mtime, ctime or inode changed since the last export, or read all.",
)
@click.option(
    "--batch-size",
    type=bounded(POSITIVE_COUNT),
    default=None,
    help="Most files per read task (default 64 to 256; larger past 131,072 files, so at most 512 tasks).",
)
@click.option(
    "--storage-option",
    "storage_option",
    multiple=True,
    metavar="KEY=VALUE",
    help="For an object-store OUT_DIR (s3://...): a storage option such as aws_endpoint_url=http://host:9000 "
    "or aws_region=eu-west-1 (repeatable; credentials may also come from the environment).",
)
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Export a root that holds no session log (refused by default: a wrong or unmounted root "
    "must not replace an archive).",
)
@translate_errors
def export(
    root: str,
    compression: str,
    jobs: int | None,
    quiet: bool,
    out_dir: str,
    events: bool,
    engine: str,
    scheduler: str | None,
    incremental: bool,
    batch_size: int | None,
    storage_option: tuple[str, ...],
    allow_empty: bool,
) -> None:
    """Write the corpus's frames to OUT_DIR as a partitioned Parquet archive plus manifest.json.

    Tables: sessions, descriptors, problems (and events with --events),
    partitioned by project directory; manifest.json records the package and
    Polars versions, the root, the compression, row counts and the creation
    time. Exporting again into the same directory updates it. OUT_DIR may be
    an object-store URL (s3://bucket/prefix, gs://...; workers write their
    parts there directly) or a file:///path URL (the local directory it
    names). A ROOT that is a project or a session folder, or that holds no
    session log (without --allow-empty), is refused before OUT_DIR is touched.

    \b
    Examples:
        subagent-catalog export data/sample out/sample-archive
        subagent-catalog export data/sample out/events-archive --events --engine dask   # a local cluster
        subagent-catalog export data/sample s3://bucket/archive --storage-option aws_region=eu-west-1
        subagent-catalog export data/sample "file://$PWD/out/url-archive"
    """
    from subagent_catalog.store.export import export_archive
    from subagent_catalog.store.layout import is_url
    from subagent_catalog.store.location import local_location
    from subagent_catalog.views.progress import progress_bar

    options = storage_options(storage_option)
    root = local_location(root)  # a file:// URL is the local path it names
    target = local_location(out_dir, options)
    if not is_url(target) and inside(target, root):  # by device and inode: links and bind mounts seen through
        raise OutputError(
            f"refusing to write {target!r}: it is inside the corpus {root!r}",
            hint="corpora are read-only: write outputs outside the corpus root",
        )
    with progress_bar(quiet=quiet, desc="reading logs") as progress:
        manifest = export_archive(
            root,
            target,
            events=events,
            engine=engine,  # type: ignore[arg-type]
            scheduler=scheduler,
            incremental=incremental,
            compression=compression,  # type: ignore[arg-type]
            jobs=jobs,
            batch_size=batch_size,
            progress=progress,
            storage_options=options,
            allow_empty=allow_empty,
        )
    counts = manifest.get("row_counts", {})
    shown = ", ".join(
        f"{name} {counts[name]}"
        for name in ("sessions", "descriptors", "problems", "events")
        if counts.get(name) is not None
    )
    update = manifest.get("update", {})
    echo(terminal_safe(f"exported {root} to {out_dir}: {shown}"))
    if update:
        echo(f"files read {update.get('files_read')}, reused {update.get('files_reused')}")
    if manifest.get("listing_error"):
        note(f"warning: upstream's listing fails: {manifest['listing_error']}")
