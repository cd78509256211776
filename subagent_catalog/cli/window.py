"""The command line's ``--since`` / ``--until`` options (a time window over session creation times).

``window_options`` adds both options to a command and hands it one
``window`` argument (a ``subagent_catalog.analysis.window.Window``). Values
are read with ``parse_instant`` (ISO dates and datetimes, naive means UTC,
or spans back from now such as ``"7 days"``); a value that cannot be read,
or a ``--since`` not before ``--until``, is a usage error (exit status 2)
whose message lists the accepted forms.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

import click

from subagent_catalog.analysis.window import Window, WindowError, parse_instant

__all__ = ["window_options"]

F = TypeVar("F", bound=Callable[..., Any])


def _instant(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        parse_instant(value)
    except WindowError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from error
    return value


def window_options(func: F) -> F:
    """Add ``--since`` and ``--until``; the command gets one ``window`` keyword argument instead.

    Place it below the command's other options and above ``translate_errors``.

    Examples:
        >>> command = window_options(lambda window: window)
        >>> [p.name for p in command.__click_params__]
        ['until', 'since']
        >>> command(since="2026-01-01", until=None).bounded
        True
    """

    @functools.wraps(func)
    def wrapper(*args: Any, since: str | None = None, until: str | None = None, **kwargs: Any) -> Any:
        try:  # spans count back from one shared now
            window = Window.of(since, until, now=datetime.now(UTC))
        except WindowError as error:  # since not before until
            raise click.UsageError(str(error)) from error
        return func(*args, window=window, **kwargs)

    command: Any = wrapper
    command = click.option(
        "--until",
        default=None,
        metavar="WHEN",
        callback=_instant,
        help="Only sessions created before WHEN (same forms as --since).",
    )(command)
    command = click.option(
        "--since",
        default=None,
        metavar="WHEN",
        callback=_instant,
        help="Only sessions created at or after WHEN: an ISO date or datetime (naive means UTC) "
        "or a span back from now ('7 days', '36h', '2 weeks').",
    )(command)
    return cast(F, command)
