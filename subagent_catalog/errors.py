"""Typed errors.

Bad data never raises; these are for unusable input and for the listing
failures upstream itself raises.
"""

from __future__ import annotations

from typing import Literal

CatalogErrorCode = Literal[
    "PERSISTENCE_LIST_FAILED",
    "SUBAGENT_PARENT_NOT_FOUND",
    "SUBAGENT_LINEAGE_CYCLE",
]


class SubagentCatalogError(Exception):
    """Base class of every error this package raises on purpose.

    Attributes:
        hint: what the user can do about it.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base} (hint: {self.hint})" if self.hint else base


class CorpusRootError(SubagentCatalogError):
    """The corpus root is missing, not a directory, or unreadable."""


class EmptySourceError(CorpusRootError):
    """An input holds neither a session log nor an archive manifest (or an archive of no session)."""


class CorpusLevelError(CorpusRootError):
    """The input is a folder or a log inside a corpus root (a project or a session folder, a log), not a corpus root.

    Attributes:
        level: ``"project"`` (``<root>/<project>``), ``"session"`` (``<root>/<project>/<session>``) or
            ``"log"`` (``<root>/<project>/<session>/session.jsonl``).
        corpus_root: the corpus root that was meant: the parent, two or three levels up.
    """

    def __init__(
        self, message: str, *, level: Literal["project", "session", "log"], corpus_root: str, hint: str | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.level: Literal["project", "session", "log"] = level
        self.corpus_root = corpus_root


class CatalogError(SubagentCatalogError):
    """A listing call that upstream fails as a whole.

    Attributes:
        code: a stable code (``PERSISTENCE_LIST_FAILED`` when the persisted
            listing itself fails; the trace semantics add
            ``SUBAGENT_PARENT_NOT_FOUND`` and ``SUBAGENT_LINEAGE_CYCLE``).
        path: the offending file, when there is one.
    """

    def __init__(
        self, code: CatalogErrorCode, message: str, *, path: str | None = None, hint: str | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.code: CatalogErrorCode = code
        self.path = path
        self.message = message


class SessionLookupError(SubagentCatalogError, LookupError):
    """No session log has the asked id, or several do and the call did not say which.

    Attributes:
        session_id: the id asked for.
    """

    def __init__(self, message: str, *, session_id: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.session_id = session_id


class UnknownSessionError(SessionLookupError):
    """An id that names no session of the corpus (no log's id, no header's ``parentSession``).

    Attributes:
        session_id: the id asked for.
        nearest: the known ids closest to it, best first (may be empty).
    """

    def __init__(self, session_id: str, nearest: list[str], *, message: str, hint: str | None = None) -> None:
        super().__init__(message, session_id=session_id, hint=hint)
        self.nearest = nearest


class LiveOverlayError(SubagentCatalogError, ValueError):
    """A ``live=`` overlay with a status other than ``running`` or ``idle``."""


class PricesError(SubagentCatalogError):
    """A price table that cannot be read (a missing or malformed file, a malformed entry)."""


class ResultTooLargeError(SubagentCatalogError, ValueError):
    """A result would hold more rows than its documented limit (``catalog_descendants`` over a very deep tree)."""


class BoundError(SubagentCatalogError, ValueError):
    """A numeric argument outside its kind's range (``bounds``): not finite, negative, too large, not whole."""
