"""The ``check`` command's gate options: ``--allow-empty``, ``--max``, ``--max-rate`` and ``--baseline``.

``gate_options`` adds them to a command and hands it one ``gate`` argument:
the keyword arguments of ``subagent_catalog.analysis.gate.run_checks``
(``allow_empty``, ``max_count``, ``max_rate``, ``baseline``). A malformed
``CHECK=N`` / ``CHECK=R`` or an unknown check name is a usage error (exit
status 2) listing the valid names. The baseline is read and checked before
the corpus is: a missing, unreadable, malformed or newer-version file, or
one written with other ``--semantics``, is one ``Error: ...`` line with a
hint, exit status 2 (the command line named a file it cannot use).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from subagent_catalog.analysis.gate_policy import BaselineError, load_baseline, parse_max, parse_max_rate
from subagent_catalog.views.text import terminal_safe

__all__ = ["BaselineUsageError", "gate_options"]

F = TypeVar("F", bound=Callable[..., Any])


class BaselineUsageError(click.ClickException):
    """A ``--baseline`` the command cannot use: one ``Error:`` line, exit status 2."""

    exit_code = 2


def _limits(parse: Callable[[str], tuple[str, Any]]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Any]:
        limits: dict[str, Any] = {}
        for value in values:
            try:
                name, limit = parse(value)
            except ValueError as error:
                raise click.BadParameter(str(error), ctx=ctx, param=param) from error
            if name in limits and limits[name] != limit:
                raise click.BadParameter(f"{name} is given twice ({limits[name]} and {limit})", ctx=ctx, param=param)
            limits[name] = limit
        return limits

    return callback


def gate_options(func: F) -> F:
    """Add ``--allow-empty``, ``--max``, ``--max-rate`` and ``--baseline``; the command gets one ``gate`` argument.

    ``gate`` holds ``run_checks``'s keyword arguments. Place it below the
    command's other options (it reads ``semantics`` to check the baseline's).

    Examples:
        >>> command = gate_options(lambda gate, semantics="projection": gate)
        >>> [p.name for p in command.__click_params__]
        ['baseline', 'max_rate', 'max_count', 'allow_empty']
        >>> command(allow_empty=True, max_count={"corrupt": 5}, max_rate={}, baseline=None)["max_count"]
        {'corrupt': 5}
    """

    @functools.wraps(func)
    def wrapper(
        *args: Any,
        allow_empty: bool = False,
        max_count: dict[str, int] | None = None,
        max_rate: dict[str, float] | None = None,
        baseline: str | None = None,
        **kwargs: Any,
    ) -> Any:
        loaded = None
        if baseline is not None:
            try:
                loaded = load_baseline(baseline)
                loaded.check_semantics(kwargs.get("semantics", "projection"))
            except BaselineError as error:
                raise BaselineUsageError(terminal_safe(str(error))) from error
        gate = {"allow_empty": allow_empty, "max_count": max_count, "max_rate": max_rate, "baseline": loaded}
        return func(*args, gate=gate, **kwargs)

    command: Any = wrapper
    command = click.option(
        "--baseline",
        default=None,
        metavar="FILE",
        help="An earlier 'check --format json' output: fail only on offenders it does not hold.",
    )(command)
    command = click.option(
        "--max-rate",
        "max_rate",
        multiple=True,
        metavar="CHECK=R",
        callback=_limits(parse_max_rate),
        help="Tolerate (new) offenders of CHECK up to a share R of the session files (0.01 or 1%); repeatable.",
    )(command)
    command = click.option(
        "--max",
        "max_count",
        multiple=True,
        metavar="CHECK=N",
        callback=_limits(parse_max),
        help="Tolerate up to N (new) offenders of CHECK; repeatable. Names a check: selects it.",
    )(command)
    command = click.option(
        "--allow-empty",
        is_flag=True,
        help="Pass a corpus without a listed session (by default no session file, or only skipped ones, fails).",
    )(command)
    return cast(F, command)
