"""The input rule: what a location names (a corpus root or an archive), and an archive exported from the wrong place.

Everything else a function needs of its input is the ``Source`` interface
(``frames.source``), which a corpus and an archive each implement.

``input_kind(location)``: an object-store URL, or a local path holding
``manifest.json``, is an archive; anything else a corpus root (a ``file://``
URL is the local path it names). ``misplaced_archive(archive)``: the error of
an archive exported from a project folder. ``inputs_below(folder)``: the error of reading a folder above
corpus roots or archives, naming them.
"""

from __future__ import annotations

import os
from typing import Literal

from subagent_catalog.errors import CorpusLevelError, CorpusRootError, EmptySourceError
from subagent_catalog.frames.units import plural
from subagent_catalog.read.discover import LOG_NAMES, holds_logs, list_top
from subagent_catalog.store.archive import Archive
from subagent_catalog.store.layout import MANIFEST, is_url
from subagent_catalog.store.location import local_location

InputKind = Literal["auto", "corpus", "archive"]
"""How to read an input location: by the input rule (``auto``), or forced."""


def input_kind(location: str | os.PathLike[str]) -> Literal["corpus", "archive"]:
    """How the input rule reads a location: ``archive`` for an object-store URL or a path holding ``manifest.json``.

    A ``file://`` URL is the local path it names (``store.location.local_location``).

    A local ``manifest.json`` counts whatever it is (a link, a directory):
    opening it then says what is wrong, rather than reading the directory
    as an empty corpus.

    Examples:
        >>> import tempfile
        >>> input_kind("s3://bucket/archive"), input_kind(tempfile.mkdtemp())
        ('archive', 'corpus')
    """
    path = local_location(os.fspath(location))
    if is_url(path) or os.path.lexists(os.path.join(path, MANIFEST)):
        return "archive"
    return "corpus"


def _is_corpus_root(path: str) -> bool:
    """Whether a log sits at ``<path>/<project>/<session>/`` (``False`` for what cannot be read)."""
    try:
        return any(holds_logs(entry) for entry in list_top(path) if entry.is_dir(follow_symlinks=False))
    except CorpusRootError:
        return False


def inputs_below(folder: str, *, limit: int = 1000) -> EmptySourceError | None:
    """The error of reading a folder without a log that holds corpus roots or archives: it names them.

    ``None`` when none of its folders (the first ``limit``, by name) is a corpus root or an archive.

    Examples:
        >>> print(inputs_below("data"))
        no session log under 'data': it holds 2 corpus roots: findings/, sample/ (hint: pass one of them as ROOT, ...)
        >>> inputs_below("data/sample/_no-cwd") is None
        True
    """
    try:
        with os.scandir(folder) as entries:
            names = sorted(entry.name for entry in entries if entry.is_dir(follow_symlinks=False))[:limit]
    except OSError:
        return None
    archives = [name for name in names if os.path.lexists(os.path.join(folder, name, MANIFEST))]
    roots = [name for name in names if name not in archives and _is_corpus_root(os.path.join(folder, name))]
    if not archives and not roots:
        return None
    counts = " and ".join(plural(len(n), kind) for n, kind in ((roots, "corpus root"), (archives, "archive")) if n)
    shown = [f"{name}/" for name in roots + archives]
    listed = ", ".join(shown[:10]) + (f" and {len(shown) - 10} more" if len(shown) > 10 else "")
    first = os.path.join(folder, (roots + archives)[0])
    return EmptySourceError(
        f"no session log under {folder!r}: it holds {counts}: {listed}",
        hint=f"pass one of them as ROOT, such as {first!r}",
    )


def misplaced_archive(archive: Archive) -> CorpusLevelError | None:
    """The error of an archive exported from a project folder (as exports did before they refused one), or ``None``.

    Told from the manifest alone: no session, and the listing failing on a log
    directly inside a folder of the exported root (``<root>/<session>/session.jsonl``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.store.export import export_archive
        >>> from subagent_catalog.store.archive import open_archive
        >>> out = tempfile.mkdtemp()
        >>> _ = export_archive(tempfile.mkdtemp(), out, jobs=1)
        >>> misplaced_archive(open_archive(out)) is None
        True
    """
    path = archive.listing_error_path
    if archive.manifest.get("row_counts", {}).get("sessions") or not isinstance(path, str):
        return None
    root = os.path.normpath(archive.root)
    if os.path.basename(path) not in LOG_NAMES or os.path.dirname(os.path.dirname(os.path.normpath(path))) != root:
        return None
    meant = os.path.normpath(os.path.join(root, os.pardir))
    return CorpusLevelError(
        f"the archive {archive.path!r} holds no session: it was exported from {archive.root!r}, a project folder",
        level="project",
        corpus_root=meant,
        hint=f"re-export it from the corpus root, its parent: {meant!r}",
    )
