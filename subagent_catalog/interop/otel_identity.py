"""An export's identity: what trace and span ids derive from besides the session, so a changed export is new.

A receiver keeps the first span it gets under a (trace id, span id), so ids
that derived from session ids alone made a second export to another project,
or one with a corrected price table or another ``max_text``, change nothing.
Ids now derive from the session *and* the trace's scope:

- ``project`` (another Phoenix project gets new traces), and
- with a user ``run_id``: that id (the user says what is the same export);
  without: the digest of the settings that shape the spans (the exporter's
  version, the conventions, ``max_text``, the price table's ``digest()`` or
  the price function's name) and of the facts of the run's logs (each log's
  id, size, event count, first and last event time, verdict and outcome:
  a log that grew or changed gives its run new ids; the other runs keep theirs).

The same export sent again gives the same ids (a receiver keeps one copy).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from subagent_catalog.interop.otel_attributes import PriceFunction
from subagent_catalog.interop.otel_conventions import Conventions
from subagent_catalog.prices import PriceTable
from subagent_catalog.version import __version__

__all__ = ["FACT_COLUMNS", "ExportIdentity", "log_facts_digest", "settings_digest"]

FACT_COLUMNS = (
    "session_id",
    "bytes",
    "event_count",
    "first_event_ms",
    "last_event_ms",
    "verdict",
    "outcome",
    "seed_length",
    "parent_session",
)
"""The ``sessions`` columns a run's content digest covers (not the path or mtime: a moved corpus is the same)."""


def _digest(parts: Iterable[object]) -> str:
    hasher = hashlib.blake2b(digest_size=16)
    for part in parts:
        hasher.update(repr(part).encode("utf-8", "surrogatepass"))
        hasher.update(b"\x00")
    return hasher.hexdigest()


def settings_digest(
    *, conventions: Conventions, max_text: int, price: PriceFunction | None, table: PriceTable | None
) -> str:
    """The digest of the settings that shape every span: another ``max_text`` or price table gives another.

    Examples:
        >>> from subagent_catalog.prices import price_table
        >>> a = settings_digest(conventions="openinference", max_text=10, price=None, table=price_table())
        >>> a == settings_digest(conventions="openinference", max_text=10, price=None, table=price_table())
        True
        >>> a != settings_digest(conventions="openinference", max_text=11, price=None, table=price_table())
        True
    """
    if price is not None:
        priced = f"function {getattr(price, '__module__', '?')}.{getattr(price, '__qualname__', repr(price))}"
    else:
        priced = f"table {table.digest() if table is not None else None}"
    return _digest(("subagent-catalog", __version__, conventions, max_text, priced))


def log_facts_digest(rows: Iterable[object]) -> str:
    """The content digest of a run: its logs' ``FACT_COLUMNS`` values, in the order given.

    Examples:
        >>> first = log_facts_digest([("s1", 100, 4)])
        >>> first == log_facts_digest([("s1", 100, 4)]) != log_facts_digest([("s1", 120, 5)])
        True
    """
    return _digest(rows)


@dataclass(frozen=True)
class ExportIdentity:
    """What an export's ids derive from (besides each session), and a name for it.

    Attributes:
        project: the Phoenix project (``openinference.project.name``).
        run_id: the user's run id (``--run-id``), or ``None``.
        settings: ``settings_digest`` of the export.
        digest: the content digest of everything exported (settings, the
            exported runs' contents, the selected sessions); with ``run_id``
            it still names the content, though the ids ignore it.
        traces: the traces the export holds.

    Examples:
        >>> identity = ExportIdentity("dsh", None, "ab" * 16, "cd" * 16, 3)
        >>> identity.name, identity.scope("e" * 32)
        ('dsh/cdcdcdcdcdcdcdcd', ('dsh', 'abababababababababababababababab', 'eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee'))
        >>> ExportIdentity("dsh", "nightly-7", "ab" * 16, "cd" * 16, 3).name
        'dsh/run nightly-7'
    """

    project: str
    run_id: str | None
    settings: str
    digest: str
    traces: int

    @property
    def name(self) -> str:
        """``<project>/<16 hex digits of the digest>``, or ``<project>/run <run id>``."""
        return f"{self.project}/run {self.run_id}" if self.run_id is not None else f"{self.project}/{self.digest[:16]}"

    def scope(self, run_digest: str) -> tuple[str, ...]:
        """What a trace's ids derive from besides its sessions: the project and the run id, or the digests."""
        if self.run_id is not None:
            return (self.project, "run", self.run_id)
        return (self.project, self.settings, run_digest)
