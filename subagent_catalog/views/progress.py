"""Progress bars for ``read_corpus``: a tqdm adapter for the ``Progress`` protocol.

``read_corpus(progress=...)`` calls its callback as ``(done, total)`` after
each file. ``TqdmProgress`` turns those calls into a ``tqdm.auto`` bar
(a terminal bar on stderr, a widget in Jupyter). The bar is created lazily on
the first call, so a root with no files draws nothing.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, TextIO

__all__ = ["TqdmProgress", "notebook_progress", "progress_bar"]

PROGRESS_VARIABLE = "SUBAGENT_CATALOG_PROGRESS"
"""``off`` keeps notebook reads quiet, ``on`` draws the bar outside notebooks too (on stderr)."""

NOTEBOOK_DELAY = 1.0
"""Seconds a notebook read runs before its bar appears (a cached read stays silent)."""


class TqdmProgress:
    """A ``(done, total) -> None`` callback that drives a tqdm bar.

    Args:
        desc: the bar's label.
        file: where the bar is drawn (default: ``sys.stderr``).
        disable: ``True`` draws nothing, ``None`` draws only on a terminal
            (tqdm's own rule), ``False`` always draws.
        leave: keep the finished bar on screen.
        delay: seconds before the bar first shows (tqdm's ``delay``).

    Examples:
        >>> import io
        >>> out = io.StringIO()
        >>> with TqdmProgress(desc="reading", file=out, disable=False, leave=True) as progress:
        ...     for done in range(1, 4):
        ...         progress(done, 3)
        >>> "3/3" in out.getvalue()
        True
    """

    def __init__(
        self,
        *,
        desc: str = "reading logs",
        file: TextIO | None = None,
        disable: bool | None = None,
        leave: bool = False,
        delay: float = 0.0,
    ) -> None:
        self.desc = desc
        self.file = file
        self.disable = disable
        self.leave = leave
        self.delay = delay
        self._bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        """Move the bar to ``done`` of ``total``."""
        if self._bar is None:
            if self.disable or (self.disable is None and not _is_terminal(self.file or sys.stderr)):
                return  # no bar (tqdm's own rule for ``disable=None``), without importing tqdm (25 ms)
            from tqdm.auto import tqdm  # type: ignore[import-untyped]

            self._bar = tqdm(
                total=total,
                desc=self.desc,
                unit="file",
                file=self.file if self.file is not None else sys.stderr,
                disable=self.disable,
                leave=self.leave,
                dynamic_ncols=True,
                delay=self.delay,
            )
        if self._bar.total != total:
            self._bar.total = total
        step = done - self._bar.n
        if step > 0:
            self._bar.update(step)

    def close(self) -> None:
        """Close the bar (safe to call more than once).

        Examples:
            >>> TqdmProgress(disable=True).close()
        """
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> TqdmProgress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def progress_bar(*, quiet: bool = False, desc: str = "reading logs", file: TextIO | None = None) -> TqdmProgress:
    """The progress callback the command line uses.

    Args:
        quiet: draw nothing.
        desc: the bar's label.
        file: where to draw (default ``sys.stderr``); without ``quiet`` the
            bar is drawn only when that stream is a terminal.

    Examples:
        >>> import io
        >>> out = io.StringIO()
        >>> with progress_bar(file=out) as progress:
        ...     progress(1, 1)
        >>> out.getvalue()
        ''
    """
    return TqdmProgress(desc=desc, file=file, disable=True if quiet else None)


def in_notebook() -> bool:
    """Whether this process is an interactive Jupyter kernel (IPython with a kernel, already imported).

    Examples:
        >>> in_notebook()
        False
    """
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def notebook_progress() -> TqdmProgress | None:
    """The default progress of a read given none: a bar in an interactive notebook, else ``None``.

    The bar (``tqdm.auto``: a widget in Jupyter) shows once the read has run ``NOTEBOOK_DELAY``
    seconds. Quiet in CI (``CI`` set), outside a notebook, and with ``SUBAGENT_CATALOG_PROGRESS=off``;
    ``SUBAGENT_CATALOG_PROGRESS=on`` draws it on stderr anywhere.

    Examples:
        >>> notebook_progress() is None  # not in a notebook
        True
    """
    import os

    setting = os.environ.get(PROGRESS_VARIABLE, "").strip().lower()
    if setting in ("off", "0", "no", "false"):
        return None
    if setting not in ("on", "1", "yes", "true") and (os.environ.get("CI") or not in_notebook()):
        return None
    return TqdmProgress(desc="reading logs", disable=False, leave=False, delay=NOTEBOOK_DELAY)


def _is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (a stream without ``isatty`` is not).

    Examples:
        >>> import io
        >>> _is_terminal(io.StringIO())
        False
    """
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):  # a closed or detached stream
        return False
