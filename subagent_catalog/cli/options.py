"""The options every corpus command shares (``ROOT``, ``--compression``, ``--jobs``...) and ``load_source``.

The input rule (one for every command that reads a corpus, ``source_options``):
``ROOT`` is an archive when it is an object-store URL (``s3://``, ``gs://``,
``file://``; ``--storage-option KEY=VALUE`` configures the store) or a
directory holding ``manifest.json``, and a corpus root otherwise;
``--input corpus|archive`` forces one reading. An input that holds neither
a session log nor a manifest is an error with a hint (``EmptySourceError``),
never an empty report: only ``check --allow-empty`` (whose gate judges an
empty corpus itself) and ``conformance`` (upstream-shaped lines, empty for an
empty root) accept it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from subagent_catalog.bounds import WORKERS, Bound
from subagent_catalog.cli.io import note
from subagent_catalog.corpus import open_source
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.source import Source
from subagent_catalog.views.text import printable

F = TypeVar("F", bound=Callable[..., Any])

COMPRESSION = click.Choice(["auto", "zstd", "none"])
INPUT = click.Choice(["auto", "corpus", "archive"])
_INPUT_KEY = "subagent_catalog.input"
_STORAGE_KEY = "subagent_catalog.storage_options"
_NO_CACHE_KEY = "subagent_catalog.no_cache"
_COMPRESSION_KEY = "subagent_catalog.compression"
_JOBS_KEY = "subagent_catalog.jobs"
SEMANTICS = click.Choice(["projection", "trace"])


class _Held(click.ParamType[Any]):
    bound: Bound

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """``value`` (the text given, or a default) as a number of ``bound``, or a usage error saying the range."""
        number: object = value
        if isinstance(value, str):
            try:
                number = int(value) if self.bound.integer else float(value)
            except ValueError:
                number = None
        if not self.bound.admits(number):
            self.fail(f"{printable(value, limit=60)} is not {self.bound.describe()}.", param, ctx)
        return number


class _WholeNumber(_Held, click.IntRange):
    name = "integer"

    def __init__(self, bound: Bound) -> None:
        super().__init__(min=int(bound.low), max=int(bound.high), min_open=bound.low_open)
        self.bound = bound


class _Number(_Held, click.FloatRange):
    name = "number"

    def __init__(self, bound: Bound) -> None:
        super().__init__(min=bound.low, max=bound.high, min_open=bound.low_open)
        self.bound = bound


def bounded(bound: Bound) -> click.ParamType[Any]:
    """The option type of a numeric parameter: ``bound``'s kind and range (``subagent_catalog.bounds``).

    Every numeric option of every command has one: the value is read as a
    whole number or a finite number and held to the range, so ``inf``,
    ``nan``, a negative number, ``2**63`` or ``1e400`` is a usage error
    (exit status 2, one ``Error:`` line) before anything is read; the help
    shows the range.

    Examples:
        >>> from subagent_catalog.bounds import SEED
        >>> @click.command()
        ... @click.option("--seed", type=bounded(SEED), default=0)
        ... def seeded(seed: int) -> None:
        ...     click.echo(seed)
        >>> from click.testing import CliRunner
        >>> CliRunner().invoke(seeded, ["--seed", "7"]).output
        '7\\n'
        >>> result = CliRunner().invoke(seeded, ["--seed", "-1"])
        >>> result.exit_code, result.output.splitlines()[-1]
        (2, "Error: Invalid value for '--seed': -1 is not a whole number from 0 to 4,294,967,295.")
    """
    return _WholeNumber(bound) if bound.integer else _Number(bound)


def _remember(key: str, convert: Callable[[Any], Any] = lambda value: value) -> Callable[..., Any]:
    """An option's callback keeping its value (``convert``ed) in the context's ``meta[key]``, for ``load_source``."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        ctx.meta[key] = convert(value)
        return value

    return callback


def corpus_options(func: F, *, exposed: bool = True) -> F:
    """Add the ``ROOT`` argument and ``--compression``, ``--jobs``, ``--quiet`` and ``--no-cache``.

    ``exposed=False`` hands ``--compression`` and ``--jobs`` to ``load_source``, not to the command.

    Examples:
        >>> [p.name for p in corpus_options(lambda **kw: None).__click_params__]
        ['no_cache', 'quiet', 'jobs', 'compression', 'root']
    """
    func = click.option(
        "--no-cache",
        is_flag=True,
        expose_value=False,
        callback=_remember(_NO_CACHE_KEY),
        help="Read every log; neither use nor update the facts cache (kept outside the root).",
    )(func)
    func = click.option(
        "-q", "--quiet", is_flag=True, help="No progress bar (it is drawn on stderr, only on a terminal)."
    )(func)
    func = click.option(
        "-j",
        "--jobs",
        type=bounded(WORKERS),
        default=None,
        expose_value=exposed,
        callback=_remember(_JOBS_KEY),
        help="Worker processes for reading logs (default: all cores; 1 reads in-process).",
    )(func)
    func = click.option(
        "--compression",
        type=COMPRESSION,
        default="auto",
        show_default=True,
        expose_value=exposed,
        callback=_remember(_COMPRESSION_KEY),
        help="Encoding to read the root as: zstd (session.jsonl.zstd), none (session.jsonl) or auto (detect).",
    )(func)
    return click.argument("root", type=click.Path(file_okay=True, dir_okay=True, path_type=str))(func)


def storage_options(pairs: tuple[str, ...]) -> dict[str, str] | None:
    """``--storage-option KEY=VALUE`` pairs as a dict (``None`` when there are none).

    Raises:
        click.BadParameter: a pair without ``=``.

    Examples:
        >>> storage_options(("aws_region=eu-west-1", "aws_endpoint_url=http://h:9000"))
        {'aws_region': 'eu-west-1', 'aws_endpoint_url': 'http://h:9000'}
    """
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--storage-option")
        out[key.strip()] = value
    return out or None


def source_options(func: F) -> F:
    """``corpus_options`` plus the input rule's ``--input`` and ``--storage-option`` (ROOT may be an archive).

    Examples:
        >>> [p.name for p in source_options(lambda **kw: None).__click_params__][:2]
        ['storage_option', 'input_kind']
    """
    func = click.option(
        "--storage-option",
        "storage_option",
        multiple=True,
        metavar="KEY=VALUE",
        expose_value=False,
        callback=_remember(_STORAGE_KEY, storage_options),
        help="For an archive URL ROOT (s3://..., gs://...): a storage option such as aws_endpoint_url=http://h:9000 "
        "(repeatable; credentials may also come from the environment).",
    )(func)
    func = click.option(
        "--input",
        "input_kind",
        type=INPUT,
        default="auto",
        show_default=True,
        expose_value=False,
        callback=_remember(_INPUT_KEY),
        help="Read ROOT as an archive (a URL, or a directory holding manifest.json) or a corpus root (auto), "
        "or force one.",
    )(func)
    return corpus_options(func, exposed=False)


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


def data_output_option(func: F) -> F:
    """Add ``-o FILE`` / ``--output FILE``: the exact data to a file, or escaped to stdout (``-``, the default).

    Examples:
        >>> [p.name for p in data_output_option(lambda **kw: None).__click_params__]
        ['output']
    """
    return click.option(
        "-o",
        "--output",
        default=None,
        type=click.Path(dir_okay=False, path_type=str),
        help="Write the exact data here instead of stdout ('-'), which is escaped.",
    )(func)


def format_option(choices: Sequence[str], help: str, *, default: str | None = "text") -> Callable[[F], F]:
    """Add ``-f`` / ``--format`` (the command's ``fmt``): one of ``choices``, ``default`` when not given.

    Examples:
        >>> [p.name for p in format_option(["text", "csv"], "text or csv.")(lambda **kw: None).__click_params__]
        ['fmt']
    """
    return click.option(
        "-f",
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=default,
        show_default=default is not None,
        help=help,
    )


def summary_format_option(func: F) -> F:
    """Add ``-f`` / ``--format`` ``text|json|md``: a summary for terminals, machines or CI job summaries.

    Examples:
        >>> [p.name for p in summary_format_option(lambda **kw: None).__click_params__]
        ['fmt']
    """
    return format_option(
        ("text", "json", "md"), "text for terminals, json for machines, md (Markdown) for CI job summaries."
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
    return click.option(
        "--prices",
        type=click.Path(dir_okay=False, path_type=str),
        default=None,
        help="A price table (TOML or CSV, USD per million tokens) extending or overriding genai-prices' table.",
    )(func)


def load_source(root: str, *, quiet: bool, allow_empty: bool = False) -> Source:
    """Open ROOT by the input rule (``--input``, ``--storage-option``): an archive, or a corpus read from it.

    ``--compression`` and ``--jobs`` (``source_options``: the context's, not the command's) say how.

    Raises:
        CorpusRootError: the root is missing or unreadable.
        EmptySourceError: ROOT holds no session log and no manifest (unless ``allow_empty``).
        ArchiveError: the archive's manifest is missing, unreadable or of another format.

    Examples:
        >>> import tempfile
        >>> load_source(tempfile.mkdtemp(), quiet=True, allow_empty=True).sessions.height
        0
    """
    from subagent_catalog.views.progress import progress_bar

    context = click.get_current_context(silent=True)
    meta = context.meta if context is not None else {}
    with progress_bar(quiet=quiet, desc="reading logs") as progress:
        return open_source(
            root,
            input=meta.get(_INPUT_KEY, "auto"),
            storage_options=meta.get(_STORAGE_KEY),
            compression=meta.get(_COMPRESSION_KEY, "auto"),
            jobs=meta.get(_JOBS_KEY),
            progress=progress,
            cache=not meta.get(_NO_CACHE_KEY, False),
            allow_empty=allow_empty,
        )


def note_archive(root: str, source: Source, *, verb: str, quiet: bool, events: bool = False) -> None:
    """Say on stderr that ROOT is read as an archive (``events``: and where its events come from).

    The one place the CLI tells an archive from a corpus: every other step asks the source (``frames.source``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> note_archive("r", read_corpus(tempfile.mkdtemp()), verb="reading", quiet=False)  # a corpus: nothing
    """
    from subagent_catalog.store.archive import Archive

    if not isinstance(source, Archive):
        return
    where = "its events table" if source.has_events else f"no events table: the logs under {source.log_root}"
    note(f"{verb} the archive {root}" + (f" ({where})" if events else ""), quiet=quiet)


def load_frames(root: str, *, quiet: bool, allow_empty: bool = False) -> Corpus:
    """``load_source``'s corpus frames (``source_corpus``: an archive's collected, events left in the archive).

    Examples:
        >>> import tempfile
        >>> load_frames(tempfile.mkdtemp(), quiet=True, allow_empty=True).sessions.height
        0
    """
    return load_source(root, quiet=quiet, allow_empty=allow_empty).to_corpus()


def protected_paths(root: str, source: Source) -> list[str]:
    """The local directories an output must stay out of: ROOT, and the corpus root behind it.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> root = tempfile.mkdtemp()
        >>> protected_paths(root, read_corpus(root)) == [root, root]
        True
    """
    from subagent_catalog.store.layout import is_url

    return [path for path in (root, *source.protected_roots()) if not is_url(path)]
