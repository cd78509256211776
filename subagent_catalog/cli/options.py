"""The options every corpus command shares (``ROOT``, ``--compression``, ``--jobs``...) and ``load``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus

F = TypeVar("F", bound=Callable[..., Any])

COMPRESSION = click.Choice(["auto", "zstd", "none"])
SEMANTICS = click.Choice(["projection", "trace"])


def _remember_no_cache(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    ctx.meta["subagent_catalog.no_cache"] = value
    return value


def corpus_options(func: F) -> F:
    """Add the ``ROOT`` argument and ``--compression``, ``--jobs``, ``--quiet`` and ``--no-cache``.

    Examples:
        >>> [p.name for p in corpus_options(lambda **kw: None).__click_params__]
        ['no_cache', 'quiet', 'jobs', 'compression', 'root']
    """
    func = click.option(
        "--no-cache",
        is_flag=True,
        expose_value=False,
        callback=_remember_no_cache,
        help="Read every log; neither use nor update the facts cache (kept outside the root).",
    )(func)
    func = click.option(
        "-q", "--quiet", is_flag=True, help="No progress bar (it is drawn on stderr, only on a terminal)."
    )(func)
    func = click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=1),
        default=None,
        help="Worker processes for reading logs (default: all cores; 1 reads in-process).",
    )(func)
    func = click.option(
        "--compression",
        type=COMPRESSION,
        default="auto",
        show_default=True,
        help="Encoding to read the root as: zstd (session.jsonl.zstd), none (session.jsonl) or auto (detect).",
    )(func)
    return click.argument("root", type=click.Path(file_okay=True, dir_okay=True, path_type=str))(func)


def semantics_option(func: F) -> F:
    """Add ``--semantics projection|trace``.

    Examples:
        >>> [p.name for p in semantics_option(lambda **kw: None).__click_params__]
        ['semantics']
    """
    return click.option(
        "--semantics",
        type=SEMANTICS,
        default="projection",
        show_default=True,
        help="Listing semantics: projection (upstream today) or trace (the superseded read path).",
    )(func)


def prices_option(func: F) -> F:
    """Add ``--prices FILE``: a user price table (TOML or CSV) extending or overriding genai-prices'.

    Examples:
        >>> @click.command()
        ... @prices_option
        ... def cost(prices: str | None) -> None:
        ...     click.echo(prices)
        >>> from click.testing import CliRunner
        >>> CliRunner().invoke(cost, ["--prices", "p.toml"]).output.strip()
        'p.toml'
    """
    option = click.option(
        "--prices",
        type=click.Path(dir_okay=False, path_type=str),
        default=None,
        help="A price table (TOML or CSV, USD per million tokens) extending or overriding genai-prices' table.",
    )
    return option(func)


def load(root: str, *, compression: str, jobs: int | None, quiet: bool) -> Corpus:
    """Read a corpus with a progress bar on stderr (unless quiet or not a terminal).

    Raises:
        CorpusRootError: the root is missing or unreadable.

    Examples:
        >>> import tempfile
        >>> load(tempfile.mkdtemp(), compression="auto", jobs=1, quiet=True).sessions.height
        0
    """
    from subagent_catalog.views.progress import progress_bar

    context = click.get_current_context(silent=True)
    use_cache = not (context is not None and context.meta.get("subagent_catalog.no_cache", False))
    with progress_bar(quiet=quiet, desc="reading logs") as progress:
        return read_corpus(
            root,
            compression=compression,  # type: ignore[arg-type]
            jobs=jobs,
            progress=progress,
            cache=use_cache,
        )
