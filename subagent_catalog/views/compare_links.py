"""Links from a comparison page into each side's transcript pages, written by ``show --tree -o DIR``: never a dead one.

``side_pages(DIR, page_dir=...)`` reads ``DIR/manifest.json`` (``views.output_site``): the pages the last
``show --tree`` run wrote there. ``SidePages.href(session_id)`` is the link to the session's page
(``page_names.page_file``), relative to the directory the comparison page is written into, only when
the manifest names that page as written (not pending) and the file is there; else ``None``, and the
comparison shows the id without a link.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import quote

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.views.output_site import SITE_MANIFEST, read_site_manifest
from subagent_catalog.views.page_names import PAGE_NAME, page_file
from subagent_catalog.views.transcript_tree import SITE_NAMES


class PagesError(SubagentCatalogError, ValueError):
    """A directory given as a side's pages is not one that ``show --tree -o DIR`` wrote."""


@dataclass
class SidePages:
    """One side's transcript pages: which exist, and the prefix of their links from the comparison page."""

    directory: str
    prefix: str
    """The directory's ``href`` relative to the comparison page, ending in ``/`` (percent-encoded)."""
    written: frozenset[str]
    """The page files the manifest names as written (a digest recorded)."""
    _checked: dict[str, bool] = field(default_factory=dict, repr=False)

    def href(self, session_id: str | None) -> str | None:
        """The relative link to the session's page, or ``None`` when the site holds no such page.

        Examples:
            >>> pages = SidePages("/nowhere", "../pages/", frozenset({"a.html"}))
            >>> pages.href(None), pages.href("b"), pages.href("a")  # a.html is listed but not there
            (None, None, None)
        """
        if session_id is None:
            return None
        name = page_file(session_id)
        if name not in self.written:
            return None
        if name not in self._checked:
            self._checked[name] = os.path.isfile(os.path.join(self.directory, name))
        return self.prefix + name if self._checked[name] else None


def side_pages(directory: str | os.PathLike[str], *, page_dir: str | os.PathLike[str]) -> SidePages:
    """A side's pages in ``directory`` (``show --tree -o DIR``), linked from a page written into ``page_dir``.

    Args:
        directory: the directory ``show --tree -o`` wrote.
        page_dir: the directory the comparison page goes into (the links are relative to it).

    Raises:
        PagesError: ``directory`` is not a directory, or holds no ``manifest.json`` of ``show --tree``.
        OutputError: its manifest is damaged, a link, too large, or not ours.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.views.transcript_tree import write_tree_pages
        >>> site = tempfile.mkdtemp()
        >>> _ = write_tree_pages(read_corpus("data/sample"), "auth-refactor", site)
        >>> pages = side_pages(site, page_dir=os.path.join(site, "out"))
        >>> pages.href("check-sql"), pages.href("not-in-this-tree")
        ('../check-sql.html', None)
    """
    path = os.fspath(directory)
    if not os.path.isdir(path):
        raise PagesError(
            f"not a directory of pages: {path!r}", hint="pass the directory that `show --tree ID -o DIR` wrote"
        )
    files = read_site_manifest(path, names=SITE_NAMES)
    if files is None:
        raise PagesError(
            f"no {SITE_MANIFEST} in {path!r}: not a directory of pages",
            hint="pass the directory that `show --tree ID -o DIR` wrote (it names its pages in manifest.json)",
        )
    written = frozenset(name for name, digest in files.items() if digest is not None and PAGE_NAME.fullmatch(name))
    target, start = os.path.abspath(path), os.path.abspath(page_dir)  # the pages as a URL relative to page_dir
    try:
        relative = os.path.relpath(target, start)
    except ValueError:  # another drive (Windows): no relative path, an absolute file: URL
        return SidePages(path, "file://" + quote(target.replace(os.sep, "/")) + "/", written)
    url = "/".join(quote(part) for part in relative.split(os.sep) if part != ".") + "/" if relative != "." else ""
    return SidePages(path, url, written)
