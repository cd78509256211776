"""Parse the pages of a written site: their ids and links (shared by the site tests and the browser test)."""

from __future__ import annotations

import urllib.parse
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value is not None:
                self.ids.append(value)
            if tag == "a" and name == "href" and value is not None:
                self.hrefs.append(value)


def parse_page(path: Path) -> tuple[list[str], list[str]]:
    """A page's element ids (every one, repeats kept) and its ``<a href>`` values."""
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page.ids, page.hrefs


def duplicate_ids(path: Path) -> dict[str, int]:
    """The ids a page holds more than once, with their counts."""
    return {name: n for name, n in Counter(parse_page(path)[0]).items() if n > 1}


def broken_links(directory: Path) -> list[tuple[str, str]]:
    """Every ``(page, href)`` of the site's pages whose file or ``#fragment`` does not exist.

    A link with a scheme (``https:``) is broken too: a site's links are relative.
    """
    ids = {path.name: set(parse_page(path)[0]) for path in directory.glob("*.html")}
    broken = []
    for path in sorted(directory.glob("*.html")):
        for href in parse_page(path)[1]:
            parts = urllib.parse.urlsplit(href)
            if parts.scheme or parts.netloc or parts.query:
                broken.append((path.name, href))
                continue
            target = urllib.parse.unquote(parts.path) or path.name
            if "/" in target or target not in ids:
                broken.append((path.name, href))
            elif parts.fragment and urllib.parse.unquote(parts.fragment) not in ids[target]:
                broken.append((path.name, href))
    return broken
