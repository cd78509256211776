"""The data-quality gate's result as terminal text, Markdown (CI summaries) and JSON."""

from __future__ import annotations

import json

from subagent_catalog.analysis.gate import CheckResult, GateResult
from subagent_catalog.frames.units import plural
from subagent_catalog.views.text import md_cell, printable


def _status_word(check: CheckResult) -> str:
    if check.status == "fail":
        return "FAIL"
    if check.status == "unevaluated":
        return "UNEVALUATED" if check.selected else "unevaluated"
    return check.status if check.status in ("warn", "tolerated") else "ok"


def _tolerance(check: CheckResult, result: GateResult) -> str:
    """What a check's status was judged against: new offenders (with a baseline), its thresholds."""
    parts = []
    if result.baseline is not None and check.count:
        parts.append(f"{check.new} new")
    if check.max_count is not None:
        parts.append(f"max {check.max_count}")
    if check.max_rate is not None:
        now = "" if check.rate is None else f", now {check.rate * 100:.4g}%"
        parts.append(f"max-rate {check.max_rate * 100:.4g}%{now}")
    return ", ".join(parts)


def _context_lines(result: GateResult, md: bool) -> list[str]:
    """The empty-corpus and baseline lines (terminal text, or Markdown with values escaped)."""
    show = md_cell if md else printable
    lines = []
    if result.empty is not None:
        empty = result.empty
        state = "allowed by --allow-empty" if empty.allowed else f"hint: {show(empty.hint, limit=600)}"
        lines.append(f"{'**Empty corpus**' if md else 'empty'}: {show(empty.message, limit=600)} ({state})")
    if result.baseline is not None:
        lines.append(
            f"{'**Baseline**' if md else 'baseline'}: {show(result.baseline, limit=400)}: "
            f"{result.known} offenders already in it (not counted), "
            f"{result.new_offenders} new"
        )
    return lines


def _unevaluated(result: GateResult) -> dict[str, list[str]]:
    """Selected checks that could not run, grouped by the reason."""
    notes: dict[str, list[str]] = {}
    for check in result.checks:
        if check.status == "unevaluated" and check.selected:
            notes.setdefault(check.note or "unknown reason", []).append(check.name)
    return notes


def format_text(result: GateResult, *, limit: int = 20) -> str:
    """The gate's terminal report: one line per check, then the offenders of each check that found any.

    Args:
        result: a gate result.
        limit: offenders shown per check (``0``: all).

    Examples:
        >>> from subagent_catalog.analysis.gate import run_checks
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> print(format_text(run_checks(read_corpus(tempfile.mkdtemp()), allow_empty=True)).splitlines()[0])
        check: PASSED (8 checks selected, semantics projection)
        >>> print(format_text(run_checks(read_corpus(tempfile.mkdtemp()))).splitlines()[0])
        check: FAILED: empty corpus (8 checks selected, semantics projection)
    """
    window = f"window: {result.window} by created_at: {result.window_files} of {result.session_files} session files"
    checks = f"{plural(result.selected_checks, 'check')} selected"
    failing = ", ".join((["empty corpus"] if result.empty_fails else []) + result.failing)
    lines = [
        f"check: {f'FAILED: {failing}' if result.failed else 'PASSED'} ({checks}, semantics {result.semantics})",
        f"root: {printable(result.root)}",
        *([window] if result.window else []),
        *_context_lines(result, md=False),
        "",
    ]
    width = max(len(check.name) for check in result.checks)
    for check in result.checks:
        mark = "*" if check.selected else " "
        extra = _tolerance(check, result)
        line = f" {mark} {check.name:<{width}}  {check.count:>7}  {_status_word(check)}"
        lines.append(f"{line:<{width + 24}}  ({extra})" if extra else line)
    lines.append("   (* = in --fail-on)")
    for note, names in _unevaluated(result).items():
        lines += ["", f"not evaluated ({', '.join(names)}): {printable(note)}"]
    for check in result.checks:
        if check.count == 0:
            continue
        lines += ["", f"{check.name} ({check.count}): {check.description}"]
        shown = check.offenders if limit == 0 else check.offenders.head(limit)
        for row in shown.iter_rows(named=True):
            where = printable(row["path"], limit=200)
            at = (f":{row['line']}" if row["line"] is not None else "") + (
                "  (in baseline)" if row.get("in_baseline") else ""
            )
            lines.append(f"  {printable(row['session_id'], limit=80)}  {where}{at}")
            lines.append(f"      {printable(row['cause'], limit=80)}: {printable(row['detail'])}")
        if shown.height < check.count:
            lines.append(f"  … and {check.count - shown.height} more (use --limit 0 or --format json for all)")
    return "\n".join(lines)


def format_markdown(result: GateResult, *, limit: int = 20) -> str:
    """The gate's report as GitHub-flavoured Markdown (for CI job summaries).

    Every value from the corpus is escaped (HTML and Markdown punctuation),
    so ids, paths and messages render as text.

    Examples:
        >>> from subagent_catalog.analysis.gate import run_checks
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> format_markdown(run_checks(read_corpus(tempfile.mkdtemp()), allow_empty=True)).splitlines()[0]
        '## subagent-catalog check: passed'
    """
    window = f", sessions created in `{result.window}` ({result.window_files} of {result.session_files} files)"
    lines = [
        f"## subagent-catalog check: {'**failed**' if result.failed else 'passed'}",
        "",
        f"Root {md_cell(result.root, limit=400)}, semantics `{result.semantics}`"
        + (window if result.window else "")
        + ".",
        "",
        *[line + "\n" for line in _context_lines(result, md=True)],
        "| check | selected | count | status | meaning |",
        "|---|:-:|--:|---|---|",
    ]
    for check in result.checks:
        extra = _tolerance(check, result)
        status = _status_word(check) + (f" ({extra})" if extra else "")
        selected = "yes" if check.selected else ""
        lines.append(f"| `{check.name}` | {selected} | {check.count} | {status} | {md_cell(check.description)} |")
    for note, names in _unevaluated(result).items():
        lines += ["", f"**Not evaluated** ({', '.join(names)}): {md_cell(note)}"]
    for check in result.checks:
        if check.count == 0:
            continue
        lines += [
            "",
            f"### {check.name} ({check.count})",
            "",
            "| session | path | cause | detail |",
            "|---|---|---|---|",
        ]
        shown = check.offenders if limit == 0 else check.offenders.head(limit)
        for row in shown.iter_rows(named=True):
            path = md_cell(row["path"]) + (f":{row['line']}" if row["line"] is not None else "")
            path += "  (in baseline)" if row.get("in_baseline") else ""
            lines.append(
                f"| {md_cell(row['session_id'], limit=80)} | {path} | {md_cell(row['cause'])} "
                f"| {md_cell(row['detail'])} |"
            )
        if shown.height < check.count:
            lines += ["", f"… and {check.count - shown.height} more."]
    return "\n".join(lines)


def format_json(result: GateResult) -> str:
    """The gate's result as indented JSON (every offender included).

    Examples:
        >>> from subagent_catalog.analysis.gate import run_checks
        >>> import json, tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> json.loads(format_json(run_checks(read_corpus(tempfile.mkdtemp()))))["failing"]
        []
    """
    return json.dumps(result.to_dict(), ensure_ascii=False, indent=2)
