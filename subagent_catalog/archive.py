"""Parquet archives: the public name of the archive API in ``subagent_catalog.store``.

Examples:
    >>> from subagent_catalog.store.export import export_archive
    >>> from subagent_catalog.store.archive import open_archive
    >>> export_archive.__module__, open_archive.__module__
    ('subagent_catalog.store.export', 'subagent_catalog.store.archive')
"""

from subagent_catalog.store.archive import Archive, open_archive
from subagent_catalog.store.archive_corpus import ArchiveCorpus
from subagent_catalog.store.export import export_archive
from subagent_catalog.store.layout import ArchiveError, partition_segment

__all__ = ["Archive", "ArchiveCorpus", "ArchiveError", "export_archive", "open_archive", "partition_segment"]
