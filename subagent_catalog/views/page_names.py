"""Page file names and links for transcript pages: one name per session id on every file system.

``show --tree`` writes a page per session into one directory, named by ``page_file``; the
ids come from the logs, so the names must never let one session's page stand for another's:
they are injective over all strings, lower-case ASCII (so case-insensitive and normalising file
systems cannot merge two), at most 105 bytes, never a Windows device name, never hidden, and
never the name of the directory's other files (``manifest.json``, ``children_file``'s pages).
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import quote, urlsplit


def page_link(session_id: str) -> str:
    """The relative ``href`` of a session's page next to this one: ``ID.html``, the id percent-encoded.

    An id cannot become a scheme (``javascript:``), a path outside the
    directory (``../``) or a query.

    Examples:
        >>> page_link("auth-refactor"), page_link("javascript:alert(1)"), page_link("../x")
        ('auth-refactor.html', 'javascript%3Aalert%281%29.html', '..%2Fx.html')
    """
    return quote(session_id, safe="-._~") + ".html"


PAGE_NAME = re.compile(r"(?:[a-z0-9][a-z0-9._-]{0,99}|_[a-z0-9-]{0,48}_[0-9a-f]{32})\.html")
"""Every name ``page_file`` gives."""

CHILDREN_NAME = re.compile(r"_[a-z0-9-]{0,48}_[0-9a-f]{32}\.children-[1-9][0-9]{0,9}\.html")
"""Every name ``children_file`` gives (the pages' manifest accepts these two kinds only)."""

INDEX_FILE = "index.html"
"""A site's start page (``show --tree``: the top's page; ``report --site``: the report); no session's page."""

INDEX_STEM = "index"

_PLAIN_STEM = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")

_RESERVED = re.compile(r"(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:\..*)?")
"""Stems Windows keeps for devices (``nul.html`` and ``con.tar.html`` are devices there too)."""


def _mangled(session_id: str) -> str:
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    readable = re.sub(r"[^a-z0-9]+", "-", session_id.lower())[:48]
    return f"_{readable}_{digest}"


def page_file(session_id: str) -> str:
    """A session's page file name: one name per id on every file system, and a link with nothing to escape.

    An id of at most 100 lower-case letters, digits and ``-._`` that starts with a letter or a
    digit and is no Windows device name (``con``, ``nul``, ``com1``...) is its own name. Any other
    id gets ``_``, a readable part (its letters and digits, lower-cased) and 128 bits of the
    SHA-256 of the whole id (so does ``index``: ``INDEX_FILE`` is the site's start page).
    No two ids share a name: a plain name never starts with ``_`` and a
    mangled one always does, and two mangled names differ in their digests. Every name is at most
    105 bytes of lower-case ASCII, so ids differing only in case or in Unicode normalisation get
    names that differ on case-insensitive, normalising file systems too (macOS, Windows). The
    pages' other files (``manifest.json``, ``children_file``'s pages) never match ``PAGE_NAME``.

    Examples:
        >>> page_file("auth-refactor")
        'auth-refactor.html'
        >>> page_file("index") != INDEX_FILE
        True
        >>> page_file("../x"), page_file("Auth-Refactor")
        ('_-x_d6b96a97d147daaae49eb87a5ca7bfbc.html', '_auth-refactor_014cd0c6ea9a6b791e4d9ff09184d2b6.html')
        >>> len(page_file("L" * 1_000_000)) < 100
        True
    """
    if _PLAIN_STEM.fullmatch(session_id) and not _RESERVED.fullmatch(session_id) and session_id != INDEX_STEM:
        return session_id + ".html"
    return _mangled(session_id) + ".html"


def children_file(session_id: str, part: int) -> str:
    """The file name of one more page of a session's children (``part`` from 2): never a ``page_file`` name.

    Examples:
        >>> children_file("hub", 2)
        '_hub_08d33503ee27d4c13055d0cefec5e730.children-2.html'
        >>> PAGE_NAME.fullmatch(children_file("hub", 2)) is None
        True
    """
    return f"{_mangled(session_id)}.children-{part}.html"


def safe_href(href: str) -> str | None:
    """``href`` when it is a relative reference or an ``http``, ``https`` or ``file`` URL, else ``None``.

    Examples:
        >>> safe_href("c.html"), safe_href("https://x/c"), safe_href("javascript:alert(1)"), safe_href(" JavaScript:x")
        ('c.html', 'https://x/c', None, None)
    """
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in href):
        return None
    scheme = urlsplit(href.strip()).scheme.lower()
    return href if scheme in ("", "http", "https", "file") else None
