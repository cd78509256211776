"""Which sessions a linked report gets a page for: the first ``cap`` it names that a log carries.

``report --site DIR`` renders the report with a ``SiteLinks``: each session a row names asks it for
an ``href`` as the row is made; the sessions granted a page (at most ``cap``, in the order the report
names them) are the pages the site then writes. A session is granted a page together with its
ancestors' (those a log carries), so every page links up to its parent's. A session it refuses is
still named, beside a note saying why it has no page (``why``: no log carries the id, or the cap);
the report says how many.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from subagent_catalog.frames.display import escape
from subagent_catalog.views.names import name_html
from subagent_catalog.views.page_names import page_file

MAX_SITE_PAGES = 2_000
"""Session pages ``report --site`` writes at most (the sessions the report names first)."""

NO_PAGE_CSS = ".nopage{color:#57606a;font-size:11px;cursor:help}"
"""The mark's style (for a page's ``<style>``)."""


def no_page_mark(why: str = "no page: this site has no page for it") -> str:
    """The mark beside a session a site names without a page: ``(no page)``, saying why on hover.

    Examples:
        >>> no_page_mark("no page: <why>")
        '<span class="nopage" title="no page: &lt;why&gt;">(no page)</span>'
    """
    return f'<span class="nopage" title="{escape(why)}">(no page)</span>'


@dataclass
class SiteLinks:
    """The pages of a linked report: granted while the report is made, written after.

    Examples:
        >>> links = SiteLinks.of(["a", "b", "c"], cap=2)
        >>> links.href("a"), links.href("nowhere"), links.href("b"), links.href("c"), links.href("a")
        ('a.html', None, 'b.html', None, 'a.html')
        >>> links.why("c"), links.refused
        ('no page: the site holds at most 2 session pages', 1)
        >>> family = SiteLinks.of(["root", "kid"], parents={"kid": "root"})
        >>> family.href("kid"), list(family.granted)  # the parent's page comes with the child's
        ('kid.html', ['kid', 'root'])
    """

    known: frozenset[str]
    cap: int = MAX_SITE_PAGES
    parents: Mapping[str, str | None] = field(default_factory=dict)
    """Each session's parent (``parentSession``): a page is granted with its ancestors'."""
    granted: dict[str, str] = field(default_factory=dict)
    """Each session with a page: its file name, in the order the report named them."""
    over: set[str] = field(default_factory=set)

    @classmethod
    def of(
        cls, ids: Iterable[str | None], *, cap: int = MAX_SITE_PAGES, parents: Mapping[str, str | None] | None = None
    ) -> SiteLinks:
        """Links over the sessions a log carries (``ids``, with their ``parents``), at most ``cap`` pages."""
        return cls(frozenset(sid for sid in ids if sid is not None), cap, dict(parents or {}))

    @property
    def refused(self) -> int:
        """How many sessions the report names that have a log but no page (past the cap)."""
        return len(self.over)

    def href(self, session_id: str | None) -> str | None:
        """The page of a session the report names (granting one while fewer than ``cap`` are), else ``None``."""
        if session_id is None or session_id not in self.known:
            return None
        page = self.granted.get(session_id)
        if page is None:
            line = self._line(session_id)
            if len(self.granted) + len(line) <= self.cap:
                self.granted.update((sid, page_file(sid)) for sid in line)
                page = self.granted[session_id]
            else:
                self.over.add(session_id)
        return page

    def _line(self, session_id: str) -> list[str]:
        """The session and its ancestors a log carries that have no page yet, nearest first."""
        line: list[str] = []
        sid: str | None = session_id
        while sid is not None and sid in self.known and sid not in self.granted and sid not in line:
            line.append(sid)
            sid = self.parents.get(sid)
        return line

    def page(self, session_id: str) -> str | None:
        """A granted session's page (a page's links to other sessions: granting none)."""
        return self.granted.get(session_id)

    def why(self, session_id: str | None) -> str | None:
        """Why a session the report names has no page (``None`` when it has one)."""
        if session_id is None:
            return "no page: the log has no session id"
        if session_id in self.granted:
            return None
        if session_id not in self.known:
            return "no page: no log in the corpus carries this id"
        return f"no page: the site holds at most {self.cap:,} session pages"

    def name(self, session_id: str | None, *, label: str | None = None, name: str | None = None) -> str:
        """``name_html`` linked to the session's page, or with a note saying why it has none.

        Examples:
            >>> links = SiteLinks.of(["a"], cap=0)
            >>> links.name("a")  # doctest: +NORMALIZE_WHITESPACE
            '<span class="nm"><code class="nm-id nm-only" title="a">a</code></span>
            <span class="nopage" title="no page: the site holds at most 0 session pages">(no page)</span>'
        """
        href = self.href(session_id)
        shown = name_html(session_id, label=label, name=name, href=href)
        if href is not None:
            return shown
        return f"{shown} {no_page_mark(self.why(session_id) or '')}"
