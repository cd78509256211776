"""Which sessions a linked report gets a page for: the first ``cap`` it names that a log carries.

``report --site DIR`` renders the report with a ``SiteLinks``: each session a row names asks it for
an ``href`` as the row is made; the sessions granted a page (at most ``cap``, in the order the report
names them) are the pages the site then writes. A session it refuses is still named, beside a note
saying why it has no page (``why``: no log carries the id, or the cap); the report says how many.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from subagent_catalog.frames.display import escape
from subagent_catalog.views.names import name_html
from subagent_catalog.views.page_names import page_file

MAX_SITE_PAGES = 2_000
"""Session pages ``report --site`` writes at most (the sessions the report names first)."""


@dataclass
class SiteLinks:
    """The pages of a linked report: granted while the report is made, written after.

    Examples:
        >>> links = SiteLinks.of(["a", "b", "c"], cap=2)
        >>> links.href("a"), links.href("nowhere"), links.href("b"), links.href("c"), links.href("a")
        ('a.html', None, 'b.html', None, 'a.html')
        >>> links.why("c"), links.refused
        ('no page: the site holds at most 2 session pages', 1)
    """

    known: frozenset[str]
    cap: int = MAX_SITE_PAGES
    granted: dict[str, str] = field(default_factory=dict)
    """Each session with a page: its file name, in the order the report named them."""
    over: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, ids: Iterable[str | None], *, cap: int = MAX_SITE_PAGES) -> SiteLinks:
        """Links over the sessions a log carries (``ids``), at most ``cap`` pages."""
        return cls(frozenset(sid for sid in ids if sid is not None), cap)

    @property
    def refused(self) -> int:
        """How many sessions the report names that have a log but no page (past the cap)."""
        return len(self.over)

    def href(self, session_id: str | None) -> str | None:
        """The page of a session the report names (granting one while fewer than ``cap`` are), else ``None``."""
        if session_id is None or session_id not in self.known:
            return None
        page = self.granted.get(session_id)
        if page is None and len(self.granted) < self.cap:
            page = self.granted[session_id] = page_file(session_id)
        if page is None:
            self.over.add(session_id)
        return page

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
        return f'{shown} <span class="nopage" title="{escape(self.why(session_id) or "")}">(no page)</span>'
