"""The progress protocol every long read accepts: a ``(done, total)`` callback, quiet by default.

The library never draws a bar itself; ``subagent_catalog.views.progress``
adapts tqdm to this protocol for the CLI and notebooks. A read given no
``progress`` asks ``default_progress()``: importing ``subagent_catalog`` sets it to a
bar that shows in an interactive notebook once a read takes more than a second
(loaded at the first read; the core itself never loads a UI library).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


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


class ClosableProgress(Progress, Protocol):
    """A progress callback that draws something and must be closed when the read ends."""

    def close(self) -> None:
        """Stop drawing."""


_default: Callable[[], ClosableProgress | None] | None = None


def set_default_progress(factory: Callable[[], ClosableProgress | None] | None) -> None:
    """Set what a read without ``progress=`` reports to (``None``: nothing, the default).

    Importing ``subagent_catalog`` sets ``views.progress.notebook_progress``: a bar in an
    interactive notebook, nothing elsewhere; ``set_default_progress(None)`` turns it off.

    Examples:
        >>> set_default_progress(None)
        >>> default_progress() is None
        True
    """
    global _default
    _default = factory


def default_progress() -> ClosableProgress | None:
    """The progress callback for a read that was given none (``None``: stay quiet).

    Examples:
        >>> set_default_progress(lambda: None)
        >>> default_progress() is None
        True
    """
    return _default() if _default is not None else None
