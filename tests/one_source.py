"""The forms, tables and normalisations of the "one source" differential (``tests/test_one_source.py``).

**One corpus, read in every form.** ``data/sample`` (26 logs: subagent trees, tool errors, three models,
problem rows, a torn tail, an empty file) is copied to ``WORK/corpus`` with every file's modification time
set to ``CANONICAL_MTIME_NS``, then:

* ``plain``: the root read as its ``session.jsonl`` logs (the reference every other form is held to);
* ``zstd``: the same logs re-encoded as ``session.jsonl.zstd`` (``zstd_copy``: the header alone in the first
  frame, one checksummed frame per record, a torn last record as a torn final frame);
* ``archive``: ``canonical_export(WORK, "arc-ev", events=True)`` read with ``open_archive``;
* ``archive-no-events``: ``canonical_export(WORK, "arc-no", events=False)``, read while its recorded root is
  gone (only what needs no event is compared; the rest must be the typed "holds no events table" error);
* ``window-...``: a ``window_corpus`` of the archive: unbounded (the whole), spanning every session's
  creation time, and a narrower day; each held to the same window of the plain root.

Every form is read from ``WORK`` as the working directory through a relative path of six characters
(``corpus``, ``arc-ev``, ``arc-no``), and while a form is read the directory ``corpus`` holds that form's
logs (plain or zstd) or nothing (the archives: they must stand alone). So every path a result names is the
same string in every form (``canonical_export`` exports the relative root ``corpus``), tables wrap the same,
and the only normalisations are:

* an archive's own location is written as ``corpus`` (the names have the same length);
* the zstd form (``normalise_zstd``, applied to both sides): the file suffix ``.jsonl.zstd`` is ``.jsonl``, the
  encoding ``zstd`` is ``none``, a log's size in bytes (``bytes``, the summary's ``bytes`` line, the report's
  card) and byte offsets into a log (``read_offset``, ``offset``) are blanked, and the two logs whose reading
  names the encoding by design (``ENCODING_SPECIFIC``: an empty file is "empty or header-less Zstandard session
  log" with no line; a torn last record is an "incomplete final frame" of other byte counts) have those
  messages and lines blanked;
* OpenTelemetry ids derive from each log's size unless a run id is given: every ``otel`` call gives one;
* a report's generation time (``tests.inputs_diff.GENERATED``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from subagent_catalog.read.zstdframes import compress_frame
from tests.fuzz.archives import CANONICAL_MTIME_NS, canonical_export
from tests.inputs_diff import GENERATED

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"
CORPUS, ARCHIVE, NO_EVENTS = "corpus", "arc-ev", "arc-no"
"""The forms' locations under ``WORK`` (relative, six characters each)."""
PARENT = "run-webapp-1"
"""The root of the sample's largest tree (16 sessions, 4 failed): the parent listed and the session shown."""
PROJECT = "--home-dev-projects-webapp--"
NARROW = ("2026-01-01", "2026-01-02")
"""A window of 16 of the 26 sessions."""
SPAN = ("2025-12-31", "2026-01-04")
"""A window around every session's creation time."""
RUN_ID = "one-source"
"""The run id every OpenTelemetry export is given: its ids then derive from it, not from the logs' sizes."""
ENCODING_SPECIFIC = ("_no-cwd/empty-file/session.jsonl", "torn-writer/session.jsonl")
"""The logs whose reading names the encoding by design (after ``.jsonl.zstd`` became ``.jsonl``)."""

FUNCTION_FORMS = ("zstd", "archive", "archive-no-events", "window-all", "window-span", "window-narrow")
CLI_FORMS = ("zstd", "archive", "archive-no-events")


# --------------------------------------------------------------------------- the forms


def zstd_copy(source: Path, target: Path) -> None:
    """Re-encode the plain corpus at ``source`` as zstd logs at ``target`` (names, times and records kept).

    The header is alone in the first frame and every other record in a checksummed frame of its own (what
    upstream writes, one write batch a record); a last record without its newline becomes a torn final
    frame (its end cut off, as a writer killed mid-frame leaves it); an empty log stays empty.
    """
    for path in sorted(source.rglob("*")):
        out = target / path.relative_to(source)
        if path.is_dir():
            out.mkdir(parents=True, exist_ok=True)
            continue
        out = out.with_name(out.name + ".zstd")
        out.parent.mkdir(parents=True, exist_ok=True)
        frames = []
        for line in path.read_bytes().splitlines(keepends=True):
            frames.append(compress_frame(line) if line.endswith(b"\n") else compress_frame(line + b"\n")[:-6])
        out.write_bytes(b"".join(frames))
        times = path.stat()
        os.utime(out, ns=(times.st_atime_ns, times.st_mtime_ns))


@dataclass
class Forms:
    """The work directory, where each form is kept while another is read, and the results memo of the plain form."""

    work: Path
    memo: dict[Any, Any] = field(default_factory=dict)
    placed: str | None = None

    @contextlib.contextmanager
    def at(self, form: str) -> Iterator[Path]:
        """Make ``WORK/corpus`` hold ``form``'s logs (``plain``, ``zstd``) or nothing (any other form)."""
        assert self.placed is None, f"{self.placed} is placed already"
        logs = form if form in ("plain", "zstd") else None
        if logs is not None:
            (self.work / "keep" / logs).rename(self.work / CORPUS)
        self.placed = form
        try:
            yield self.work
        finally:
            if logs is not None:
                (self.work / CORPUS).rename(self.work / "keep" / logs)
            self.placed = None

    def reference(self, key: Any, compute: Callable[[], Any]) -> Any:
        """The plain form's result for ``key``, computed once with the plain logs in place."""
        if key not in self.memo:
            with self.at("plain"):
                self.memo[key] = compute()
        return self.memo[key]


def build_forms(work: Path) -> Forms:
    """Copy the sample, re-encode it, export the two archives; the logs are kept aside (``Forms.at``)."""
    root = work / CORPUS
    shutil.copytree(SAMPLE, root)
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(CANONICAL_MTIME_NS, CANONICAL_MTIME_NS))
    (work / "keep").mkdir()
    zstd_copy(root, work / "keep" / "zstd")
    canonical_export(work, ARCHIVE, events=True)
    canonical_export(work, NO_EVENTS, events=False)
    root.rename(work / "keep" / "plain")
    return Forms(work)


def read_form(form: str) -> Any:
    """The source a form's functions take (run with ``WORK`` as the working directory, the form in place)."""
    from subagent_catalog.analysis.window import window_corpus
    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.store.archive import open_archive

    if form in ("plain", "zstd"):
        return read_corpus(CORPUS, cache=False, jobs=1)
    if form == "archive-no-events":
        return open_archive(NO_EVENTS)
    archive = open_archive(ARCHIVE)
    if form == "archive":
        return archive
    return window_corpus(archive, **window_bounds(form))


def window_bounds(form: str) -> dict[str, str]:
    """The ``since``/``until`` of a window form (none for ``window-all``)."""
    bounds = {"window-span": SPAN, "window-narrow": NARROW}.get(form)
    return {} if bounds is None else {"since": bounds[0], "until": bounds[1]}


def reference_source(form: str) -> Any:
    """The plain form's source a form is held to: the plain root, or the same window of it."""
    from subagent_catalog.analysis.window import window_corpus
    from subagent_catalog.corpus import read_corpus

    corpus = read_corpus(CORPUS, cache=False, jobs=1)
    return window_corpus(corpus, **window_bounds(form)) if form.startswith("window-") else corpus


# --------------------------------------------------------------------------- the functions


@dataclass(frozen=True)
class Call:
    """One call of a public function over a source; ``events``: it reads events (none over ``arc-no``)."""

    function: str
    run: Callable[[Any], Any]
    events: bool = False


def _calls() -> list[Call]:
    import subagent_catalog as sc

    live = {"fork-webapp-1": "running"}

    return [
        Call("catalog", lambda s: (sc.catalog(s), sc.catalog(s, semantics="trace", live=live))),
        Call("catalog_descendants", lambda s: sc.catalog_descendants(s, semantics="trace")),
        Call("compare", lambda s: sc.compare(s, s, resamples=50, seed=1)),
        Call("deviations", lambda s: sc.deviations(s, live=live)),
        Call("error_groups", lambda s: sc.error_groups(s)),
        Call("findings", lambda s: sc.findings(s, cache=False), events=True),
        Call("list_agents_text", lambda s: sc.list_agents_text(s, PARENT, scope="descendants", semantics="trace")),
        Call("list_children", lambda s: sc.list_children(s, PARENT)),
        Call("list_descendants", lambda s: sc.list_descendants(s, PARENT, semantics="trace", live=live)),
        Call("otlp_traces", lambda s: list(sc.otlp_traces(s, run_id=RUN_ID)), events=True),
        Call("project_subset", lambda s: sc.project_subset(s, [PROJECT])),
        Call("require_session", lambda s: (sc.require_session(s, PARENT), outcome(lambda: sc.require_session(s, "x")))),
        Call("run_summary", lambda s: sc.run_summary(s)),
        Call("run_trees", lambda s: (sc.run_trees(s), sc.run_trees(s, scope="descendants"))),
        Call("scan_events", lambda s: sc.scan_events(s).collect(), events=True),
        Call("search_events", lambda s: sc.search_events(s, "e", limit=200), events=True),
        Call("search_sessions", lambda s: sc.search_sessions(s, "task", ignore_case=True), events=True),
        Call("sql", lambda s: (sc.sql(s, "select * from catalog"), sc.sql(s, "select * from run_trees"))),
        Call("sql", lambda s: sc.sql(s, "select * from events"), events=True),
        Call("subset", lambda s: sc.subset(s, pl.col("outcome") == "completed")),
        Call("to_otlp", lambda s: sc.to_otlp(s, run_id=RUN_ID), events=True),
        Call("tool_calls", lambda s: (sc.tool_calls(s), sc.tool_calls(s, part="tree"))),
        Call("transcript", lambda s: sc.transcript(s, PARENT), events=True),
        Call("transcript_text", lambda s: sc.transcript_text(s, PARENT, 3), events=True),
        Call("trends", lambda s: (sc.trends(s), sc.trends(s, by="week"))),
        Call("unpriced_models", lambda s: sc.unpriced_models(s)),
        Call("usage_by_model", lambda s: (sc.usage_by_model(s), sc.usage_by_model(s, by="model"))),
        Call("usage_samples", lambda s: sc.usage_samples(s, part="tree")),
        Call("window_corpus", lambda s: sc.window_corpus(s, since=NARROW[0], until=NARROW[1])),
    ]


CALLS = _calls()
NOT_A_SOURCE = {
    "in_window": "takes a frame (the windows are the window forms)",
    "load_rules": "takes a rules file",
    "open_source": "takes a location: it opens the forms",
    "parse_instant": "takes a text",
    "price_table": "takes prices",
    "read_corpus": "takes a root: it reads the forms",
    "send_otlp": "takes traces (to_otlp's, compared)",
    "write_otlp_json": "takes traces (to_otlp's, compared)",
}
"""The public functions that take no source, and what they take instead."""


def takes_a_source(function: Any) -> bool:
    """Whether a public function's first parameter is a corpus, an archive or a source (by its annotation)."""
    import inspect

    parameters = list(inspect.signature(function).parameters.values())
    annotation = str(parameters[0].annotation) if parameters else ""
    return bool(re.search(r"\b(Source|Corpus|CorpusSource|Archive)\b", annotation))


def outcome(call: Callable[[], Any]) -> Any:
    """A call's value, or its typed error as ``("error", type, message)``."""
    from subagent_catalog.errors import SubagentCatalogError

    try:
        return call()
    except SubagentCatalogError as error:
        return ("error", type(error).__name__, str(error))


def plain_value(value: Any, *, events: bool = True) -> Any:
    """A result as plain comparable data: frames, corpora (their tables), dataclasses, spans (their JSON)."""
    if isinstance(value, pl.LazyFrame):
        value = value.collect()
    if isinstance(value, pl.DataFrame):
        return value
    if hasattr(value, "sessions") and hasattr(value, "descriptors") and hasattr(value, "problems"):
        tables = {name: getattr(value, name) for name in ("sessions", "descriptors", "problems", "listing_error")}
        tables["root"], tables["compression"] = str(value.root), value.compression
        if events:
            tables["events"] = outcome(lambda: value.events)
        return {name: plain_value(table) for name, table in tables.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain_value(getattr(value, f.name), events=events) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {key: plain_value(item, events=events) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(item, events=events) for item in value]
    if type(value).__name__ == "ReadableSpan":
        return json.loads(value.to_json())
    return value


def differences(left: Any, right: Any, where: str = "") -> list[str]:
    """Where two plain values differ (frames by ``.equals``, column by column); empty when equal."""
    if isinstance(left, pl.DataFrame) and isinstance(right, pl.DataFrame):
        if left.schema != right.schema or left.height != right.height:
            return [f"{where}: {left.shape} {dict(left.schema)} != {right.shape} {dict(right.schema)}"]
        return [f"{where}.{name}: {left[name].to_list()[:6]} != {right[name].to_list()[:6]}"
                for name in left.columns if not left[name].equals(right[name])]  # fmt: skip
    if isinstance(left, dict) and isinstance(right, dict):
        if left.keys() != right.keys():
            return [f"{where}: keys {sorted(left)} != {sorted(right)}"]
        return [line for key in left for line in differences(left[key], right[key], f"{where}.{key}")]
    if isinstance(left, list) and isinstance(right, list):
        if len(left) != len(right):
            return [f"{where}: {len(left)} items != {len(right)} items"]
        return [
            line
            for i, (a, b) in enumerate(zip(left, right, strict=True))
            for line in differences(a, b, f"{where}[{i}]")
        ]
    if isinstance(left, pl.DataFrame) or isinstance(right, pl.DataFrame):
        return [f"{where}: {type(left).__name__} != {type(right).__name__}"]
    return [] if left == right else [f"{where}: {str(left)[:300]!r} != {str(right)[:300]!r}"]


# --------------------------------------------------------------------------- normalisations

_TORN = re.compile(r"(?:final record without newline|incomplete final frame): \d+ bytes dropped(?: \(byte \d+\))?")
_EMPTY = "empty or header-less Zstandard session log"
_BYTES_LINE = re.compile(r"^(bytes +).*$", re.MULTILINE)
_ZSTD_WORD = re.compile(r"\bzstd\b")
_OFFSETS = ("read_offset", "offset")
"""Byte offsets into a log, which its encoding moves: blanked in every row."""
_BLANKED = ("read_line", "line", *_OFFSETS)
"""The fields of an ``ENCODING_SPECIFIC`` log's row that name a place in the file: blanked in its rows."""


def normalise_zstd_text(text: str) -> str:
    """A text with what names the encoding written as for the plain logs (``normalise_zstd``).

    Examples:
        >>> normalise_zstd_text("p/torn-writer/session.jsonl.zstd: incomplete final frame: 46 bytes dropped (zstd)")
        'p/torn-writer/session.jsonl: torn tail (none)'
    """
    text = text.replace(".jsonl.zstd", ".jsonl").replace(_EMPTY, "empty or header-less session log")
    text = _TORN.sub("torn tail", text)
    return _BYTES_LINE.sub(r"\1<size>", _ZSTD_WORD.sub("none", text))


def _specific(row: dict[str, Any]) -> bool:
    return any(isinstance(v, str) and normalise_zstd_text(v).endswith(ENCODING_SPECIFIC) for v in row.values())


def _zstd_texts(column: pl.Expr) -> pl.Expr:
    """``normalise_zstd_text`` as an expression."""
    column = column.str.replace_all(".jsonl.zstd", ".jsonl", literal=True)
    column = column.str.replace_all(_EMPTY, "empty or header-less session log", literal=True)
    return column.str.replace_all(_TORN.pattern, "torn tail").str.replace_all(_ZSTD_WORD.pattern, "none")


def normalise_zstd(value: Any) -> Any:
    """A plain value (``plain_value``) or parsed JSON with what names the encoding normalised (module docstring)."""
    if isinstance(value, pl.DataFrame):
        frame = value.drop("bytes", strict=False)
        frame = frame.with_columns(_zstd_texts(pl.col(n)) for n, kind in frame.schema.items() if kind == pl.String)
        if "path_bytes" in frame.columns:
            frame = frame.with_columns(_zstd_texts(pl.col("path_bytes").cast(pl.String)).cast(pl.Binary))
        frame = frame.with_columns(pl.lit(None).alias(name) for name in _OFFSETS if name in frame.columns)
        if "path" in frame.columns:
            specific = pl.any_horizontal(pl.col("path").str.ends_with(name) for name in ENCODING_SPECIFIC)
            frame = frame.with_columns(
                pl.when(specific).then(None).otherwise(pl.col(name)).alias(name)
                for name in _BLANKED
                if name in frame.columns
            )
        return frame
    if isinstance(value, dict):
        specific = _specific(value)
        if str(value.get("key", "")).endswith(_OFFSETS):  # an OpenTelemetry attribute
            return {**value, "value": None}
        out = {}
        for key, item in value.items():
            if key == "bytes" or str(key).endswith(_OFFSETS) or (specific and key in _BLANKED):
                item = None
            elif key == "path_bytes" and isinstance(item, str):  # hex, in JSON
                item = normalise_zstd_text(bytes.fromhex(item).decode()).encode().hex()
            out[_ZSTD_WORD.sub("none", key) if isinstance(key, str) else key] = normalise_zstd(item)
        return out
    if isinstance(value, list):
        return [normalise_zstd(item) for item in value]
    if isinstance(value, str):
        return normalise_zstd_text(value)
    return value


def normalise_zstd_output(text: str) -> Any:
    """A command's output (JSON, JSON lines or text) with what names the encoding normalised."""
    try:
        return normalise_zstd(json.loads(text))
    except ValueError:
        pass
    try:
        return [normalise_zstd(json.loads(line)) for line in text.splitlines()] if text.strip() else text
    except ValueError:
        return _REPORT_BYTES.sub("<size>", normalise_zstd_text(text))


_REPORT_BYTES = re.compile(r'<div class="big">[0-9.]+ [KMG]?i?B</div><div class="lbl">[0-9,]+ bytes</div>')
"""The report's card of the logs' size."""


# --------------------------------------------------------------------------- the command line


@dataclass(frozen=True)
class Run:
    """One command line: ``{in}`` is the form's input, ``{out}`` an output file or directory under ``WORK/out``.

    ``output``: the ``{out}`` file's suffix, compared too (``archive``: an export directory, compared by its
    tables); ``events``: it needs events (over ``arc-no``: the "holds no events table" error); ``named``: it
    names runs by their first prompt, or pairs them by it, which is read from the events (over ``arc-no``: it
    runs, naming runs by id, its output not compared); ``table``: it
    prints a table whose wrapping follows its cells' widths (the zstd form's paths are longer: its JSON twin is
    compared instead); ``corpus_only``: ROOT is a corpus root (over an archive: one ``Error:`` line);
    ``forms``: run over the forms (else only over the damaged archives).
    """

    name: str
    args: tuple[str, ...]
    output: str | None = None
    events: bool = False
    named: bool = False
    table: bool = False
    corpus_only: bool = False
    forms: bool = True

    @property
    def command(self) -> str:
        return self.args[0]

    def argv(self, location: str, out: str) -> list[str]:
        return [arg.replace("{in}", location).replace("{out}", out) for arg in self.args]


def run_tables() -> tuple[str, ...]:
    """The ``runs --table`` choices, from the command itself."""
    from subagent_catalog.cli import main

    option = next(p for p in main.commands["runs"].params if p.name == "table")
    return tuple(option.type.choices)  # type: ignore[attr-defined]


def sql_tables() -> tuple[str, ...]:
    from subagent_catalog.interop.sql_tables import SQL_TABLES

    return tuple(SQL_TABLES)


LABELS = ("-q", "--resamples", "100", "--label-a", "A", "--label-b", "B")
"""``compare``'s labels are given: they would name the inputs (one of them the fixed archive)."""


def _runs() -> list[Run]:
    narrow = ("--since", NARROW[0], "--until", NARROW[1])
    runs = [
        Run("summary", ("summary", "{in}", "-q")),
        Run("summary-json", ("summary", "{in}", "-q", "-f", "json", "--semantics", "trace")),
        Run("summary-window", ("summary", "{in}", "-q", *narrow)),
        Run("check", ("check", "{in}", "-q")),
        Run("check-json", ("check", "{in}", "-q", "-f", "json", "--fail-on", "all", "--max", "corrupt=1")),
        Run("check-window", ("check", "{in}", "-q", "-f", "markdown", "--semantics", "trace", *narrow)),
        Run("conformance", ("conformance", "{in}", "--all-parents", "--semantics", "trace")),
        Run("list", ("list", "{in}", "-q", PARENT)),
        Run(
            "list-json", ("list", "{in}", "-q", "-f", "json", "--scope", "descendants", "--semantics", "trace", PARENT)
        ),
        Run("list-window", ("list", "{in}", "-q", "-f", "csv", "--scope", "descendants", *narrow, PARENT)),
        Run("report", ("report", "{in}", "-q", "-o", "{out}"), ".html", named=True),
        Run("report-window", ("report", "{in}", "-q", "-o", "{out}", "-p", PARENT, *narrow), ".html", named=True),
        Run("show", ("show", "{in}", "-q", PARENT), events=True),
        Run("show-html", ("show", "{in}", "-q", "-o", "{out}", PARENT), ".html", events=True),
        Run("search", ("search", "{in}", "-q", "e", "--limit", "60"), events=True),
        Run("search-json", ("search", "{in}", "-q", "-f", "json", "-i", "TASK"), events=True),
        Run("findings", ("findings", "{in}", "-q"), events=True),
        Run("findings-json", ("findings", "{in}", "-q", "-f", "json"), events=True),
        Run("otel", ("otel", "{in}", "-q", "-o", "{out}", "--run-id", RUN_ID), ".jsonl", events=True),
        Run("compare", ("compare", "{in}", "{in}", *LABELS)),
        Run("compare-json", ("compare", "{in}", "{in}", *LABELS, "-f", "json", "--match", "prompt"), named=True),
        Run("compare-a", ("compare", "{in}", ARCHIVE, *LABELS)),
        Run("compare-b", ("compare", ARCHIVE, "{in}", *LABELS)),
        Run("export", ("export", "{in}", "{out}", "-q", "--jobs", "1"), "archive", corpus_only=True),
        Run("export-into", ("export", CORPUS, "{in}", "-q", "--jobs", "1"), forms=False),
    ]
    for table in run_tables():
        runs.append(Run(f"runs-{table}", ("runs", "{in}", "-q", "-t", table), table=True))
        runs.append(Run(f"runs-{table}-json", ("runs", "{in}", "-q", "-t", table, "-f", "json")))
    for table in sql_tables():
        query = f"select * from {table}"
        runs.append(Run(f"sql-{table}", ("sql", "{in}", "-q", query), table=True, events=table == "events"))
        runs.append(Run(f"sql-{table}-json", ("sql", "{in}", "-q", query, "-f", "json"), events=table == "events"))
    return runs


RUNS = _runs()
DAMAGE_RUNS = sorted(
    (
        run
        for run in RUNS
        if not run.corpus_only
        and (run.table or run.command not in ("runs", "sql"))
        and not run.name.endswith(("-json", "-window", "-html"))
        and run.name != "compare"
    ),
    key=lambda run: run.name == "export-into",
)
"""One run of each command over a damaged archive (each ``runs`` and ``sql`` table once, ``compare`` with it as
either side, ``export`` into it last: an incremental export reads its facts, and rewrites it)."""


@dataclass(frozen=True)
class Ran:
    """A run's exit status, stdout and ``{out}`` output (normalised), and its raw stderr."""

    code: int
    stdout: str
    output: Any
    stderr: str


def invoke(run: Run, form: str, work: Path) -> Ran:
    """Run one command line over a form in this process (``WORK`` the working directory, the form in place)."""
    from click.testing import CliRunner

    from subagent_catalog.cli import main

    location = {"archive": ARCHIVE, "archive-no-events": NO_EVENTS}.get(form, CORPUS)
    out = work / "out" / f"{run.name}{run.output if run.output not in (None, 'archive') else ''}"
    shutil.rmtree(out, ignore_errors=True) if out.is_dir() else out.unlink(missing_ok=True)
    out.parent.mkdir(exist_ok=True)
    result = CliRunner().invoke(main, run.argv(location, os.path.relpath(out, work)), catch_exceptions=False)

    def same_place(text: str) -> str:
        return text.replace(location, CORPUS)

    output: Any = None
    if run.output == "archive" and result.exit_code == 0:
        from subagent_catalog.store.archive import open_archive

        output = plain_value(open_archive(out).to_corpus())
    elif run.output is not None and out.is_file():
        output = GENERATED.sub("generated <time>", same_place(out.read_text(encoding="utf-8", errors="replace")))
    return Ran(result.exit_code, same_place(result.stdout), output, result.stderr)


def normalise_ran(ran: Ran, form: str) -> list[Any]:
    """What must be the same over two forms: exit status, stdout and output (``normalise_zstd`` for ``zstd``)."""
    if form != "zstd":
        return [ran.code, ran.stdout, ran.output]
    output = ran.output
    output = normalise_zstd(output) if isinstance(output, dict) else output
    output = normalise_zstd_output(output) if isinstance(output, str) else output
    return [ran.code, normalise_zstd_output(ran.stdout), output]


# --------------------------------------------------------------------------- damaged archives

FLIP_COLUMNS = {
    "sessions": "session_id",
    "descriptors": "session_id",
    "problems": "kind",
    "events": "session_id",
    "facts": "rel_path_bytes",
}
"""Per table (``facts``: the manifest's ``fingerprints``), the column whose pages the bit flips hit: one every
reader of the table reads."""
DAMAGE_KINDS = (*FLIP_COLUMNS, "forged-schema", "events-panic")
"""A seeded bit flip in each kind of part that both Polars and pyarrow refuse; a forged byte in a sessions part's
``ARROW:schema`` field name; a flip in an events part that makes Polars panic (and pyarrow refuse it)."""


def _entry(manifest: dict[str, Any], table: str) -> dict[str, Any]:
    return manifest["fingerprints"] if table == "facts" else manifest["tables"][table]  # type: ignore[no-any-return]


def replace_part(archive: Path, table: str, data: bytes, index: int = 0) -> str:
    """Write a part of ``table`` as ``data`` with its size and digest recorded (a careful forger); its name."""
    from subagent_catalog.store.checksum import DIGEST_KEY, part_digest

    manifest = json.loads((archive / "manifest.json").read_text())
    entry = _entry(manifest, table)
    name = entry["files"][index]
    (archive / name).write_bytes(data)
    entry["file_bytes"][index] = len(data)
    entry[DIGEST_KEY][index] = part_digest(data)
    (archive / "manifest.json").write_text(json.dumps(manifest))
    return str(name).split("/")[-1]


def pyarrow_refuses(data: bytes, work: Path) -> bool:
    """Whether pyarrow (DuckDB's reader) refuses a part, read in a child (a damaged part may abort it)."""
    path = work / "probe-pyarrow.parquet"
    path.write_bytes(data)
    code = "import sys, pyarrow.parquet as pq; pq.read_table(sys.argv[1])"
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, timeout=120, check=False)
    return done.returncode != 0


def fresh_facts(archive: Path, logs: Path) -> None:
    """Give the facts parts the ``ctime_ns`` and ``inode`` of the logs at ``logs`` (``canonical_export`` zeroed them,
    so an incremental export reused none), sizes and digests recorded: an export into it reuses them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from subagent_catalog.store.export import encode_parquet

    manifest = json.loads((archive / "manifest.json").read_text())
    for index, name in enumerate(_entry(manifest, "facts")["files"]):
        table = pq.read_table(archive / name)
        stats = [os.stat(logs / path) for path in table["rel_path"].to_pylist()]
        for column, values in (("ctime_ns", [s.st_ctime_ns for s in stats]), ("inode", [s.st_ino for s in stats])):
            position = table.schema.get_field_index(column)
            table = table.set_column(position, column, pa.array(values, table.schema.field(column).type))
        replace_part(archive, "facts", encode_parquet(table), index)


def damage(base: Path, out: Path, kind: str, *, seed: int = 51, tries: int = 600) -> str:
    """A copy of ``base`` at ``out`` with one part damaged as ``kind`` says (``DAMAGE_KINDS``); the part's name.

    The damage is found, not hoped for (``tests.fuzz.archives.find_damage``): seeded flips are tried on a
    child reader until one is refused as the kind needs. The archive's bytes are the same on every machine
    (``canonical_export``), so the damage is too (but in a facts part ``fresh_facts`` gave this machine's
    ``ctime_ns`` and ``inode``).
    """
    import random

    from tests.fuzz.archives import find_damage, flipped, forged_schema_byte

    shutil.copytree(base, out)
    table = "sessions" if kind == "forged-schema" else "events" if kind == "events-panic" else kind
    manifest = json.loads((out / "manifest.json").read_text())
    data = (out / _entry(manifest, table)["files"][0]).read_bytes()
    if kind == "forged-schema":
        return replace_part(out, table, forged_schema_byte(data, "session_id"))
    rng = random.Random(seed)
    for _ in range(20):
        region = f"column:{FLIP_COLUMNS[table]}"
        flips = find_damage(
            data, rng, region=region, want="panic" if kind == "events-panic" else "error", flips=1, tries=tries
        )
        assert flips is not None, f"none of {tries} seeded flips damages the {kind} part as wanted"
        if kind != "events-panic" or pyarrow_refuses(flipped(data, flips), out.parent):
            return replace_part(out, table, flipped(data, flips))
    raise AssertionError(f"no Polars panic on the {kind} part that pyarrow refuses too")


def damage_child(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """(In the child) each run over the damaged copy; one that ends without an ``Error:`` line also over the
    healthy copy, unless its baseline is ``known`` (a command that does not read the damaged part prints the same)."""
    from tests.fuzz.archives import _cli

    os.chdir(spec["work"])
    results = {}
    for name, args, healthy in spec["runs"]:
        result = _cli(args, keep_stdout=True)
        errors = any(line.startswith("Error: ") for line in result["stderr"].splitlines())
        if not errors and name not in spec["known"]:
            result["healthy"] = _cli(healthy, keep_stdout=True)
        results[name] = result
    return results


CHILD = """
import json, sys
from tests.one_source import damage_child
print(json.dumps(damage_child(json.loads(sys.argv[1]))))
"""


def run_damage(
    work: Path, damaged: str, healthy: str, known: list[str], env: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """Every ``DAMAGE_RUNS`` line over the archive at ``WORK/damaged`` (``healthy``: a healthy copy, for the
    baselines not ``known``) in one child interpreter, descriptors 1 and 2 captured as a terminal would show them
    (the CLI's own panic filter runs, as in ``python -m subagent_catalog``): by run, its exit status, stdout and
    stderr (and ``healthy``: the same over the healthy copy)."""
    runs = [(run.name, run.argv(damaged, f"out/{damaged}-{run.name}"), run.argv(healthy, f"out/{healthy}-{run.name}"))
            for run in DAMAGE_RUNS]  # fmt: skip
    (work / "out").mkdir(exist_ok=True)
    repo = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps({"work": str(work), "runs": runs, "known": known})],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": repo, "SUBAGENT_CATALOG_CACHE": "off", **env},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
