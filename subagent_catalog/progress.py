"""The progress protocol every long read accepts: a ``(done, total)`` callback, quiet by default.

The library never draws a bar itself; ``subagent_catalog.views.progress``
adapts tqdm to this protocol for the CLI and notebooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    pass


class Progress(Protocol):
    """Receives progress: called with files done and files in all."""

    def __call__(self, done: int, total: int) -> None:
        """Report that ``done`` of ``total`` files are read."""


def quiet(done: int, total: int) -> None:
    """The default progress callback: does nothing.

    Examples:
        >>> quiet(1, 2) is None
        True
    """
    return None
