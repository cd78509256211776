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

__all__ = ["TqdmProgress", "progress_bar"]


class TqdmProgress:
    """A ``(done, total) -> None`` callback that drives a tqdm bar.

    Args:
        desc: the bar's label.
        file: where the bar is drawn (default: ``sys.stderr``).
        disable: ``True`` draws nothing, ``None`` draws only on a terminal
            (tqdm's own rule), ``False`` always draws.
        leave: keep the finished bar on screen.

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
    ) -> None:
        self.desc = desc
        self.file = file
        self.disable = disable
        self.leave = leave
        self._bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        """Move the bar to ``done`` of ``total``."""
        if self._bar is None:
            from tqdm.auto import tqdm  # type: ignore[import-untyped]

            self._bar = tqdm(
                total=total,
                desc=self.desc,
                unit="file",
                file=self.file if self.file is not None else sys.stderr,
                disable=self.disable,
                leave=self.leave,
                dynamic_ncols=True,
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
