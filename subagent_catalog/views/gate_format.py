"""The data-quality gate's result as terminal text, Markdown (CI summaries) and JSON."""

from __future__ import annotations

import json
import re

from subagent_catalog.views.gate import CheckResult, GateResult
from subagent_catalog.views.text import printable


def _status_word(check: CheckResult) -> str:
    if check.status == "fail":
        return "FAIL"
    if check.status == "unevaluated":
        return "UNEVALUATED" if check.selected else "unevaluated"
    if check.status == "warn":
        return "warn"
    return "ok"


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
        >>> from subagent_catalog.views.gate import run_checks
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> print(format_text(run_checks(read_corpus(tempfile.mkdtemp()))).splitlines()[0])
        check: PASSED (8 checks selected, semantics projection)
    """
    selected = sum(1 for check in result.checks if check.selected)
    verdict = f"FAILED: {', '.join(result.failing)}" if result.failed else "PASSED"
    lines = [
        f"check: {verdict} ({selected} checks selected, semantics {result.semantics})",
        f"root: {printable(result.root)}",
        *([f"window: {result.window} by created_at"] if result.window else []),
        "",
    ]
    width = max(len(check.name) for check in result.checks)
    for check in result.checks:
        mark = "*" if check.selected else " "
        lines.append(f" {mark} {check.name:<{width}}  {check.count:>7}  {_status_word(check)}")
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
            at = f":{row['line']}" if row["line"] is not None else ""
            lines.append(f"  {printable(row['session_id'], limit=80)}  {where}{at}")
            lines.append(f"      {printable(row['cause'], limit=80)}: {printable(row['detail'])}")
        if shown.height < check.count:
            lines.append(f"  … and {check.count - shown.height} more (use --limit 0 or --format json for all)")
    return "\n".join(lines)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def _md(value: object, *, limit: int = 200) -> str:
    text = printable(value, limit=limit)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def format_markdown(result: GateResult, *, limit: int = 20) -> str:
    """The gate's report as GitHub-flavoured Markdown (for CI job summaries).

    Every value from the corpus is escaped (HTML and Markdown punctuation),
    so ids, paths and messages render as text.

    Examples:
        >>> from subagent_catalog.views.gate import run_checks
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> format_markdown(run_checks(read_corpus(tempfile.mkdtemp()))).splitlines()[0]
        '## subagent-catalog check: passed'
    """
    lines = [
        f"## subagent-catalog check: {'**failed**' if result.failed else 'passed'}",
        "",
        f"Root {_md(result.root, limit=400)}, semantics `{result.semantics}`"
        + (f", sessions created in `{result.window}`." if result.window else "."),
        "",
        "| check | selected | count | status | meaning |",
        "|---|:-:|--:|---|---|",
    ]
    for check in result.checks:
        lines.append(
            f"| `{check.name}` | {'yes' if check.selected else ''} | {check.count} | {_status_word(check)} "
            f"| {_md(check.description)} |"
        )
    for note, names in _unevaluated(result).items():
        lines += ["", f"**Not evaluated** ({', '.join(names)}): {_md(note)}"]
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
            path = _md(row["path"]) + (f":{row['line']}" if row["line"] is not None else "")
            lines.append(
                f"| {_md(row['session_id'], limit=80)} | {path} | {_md(row['cause'])} | {_md(row['detail'])} |"
            )
        if shown.height < check.count:
            lines += ["", f"… and {check.count - shown.height} more."]
    return "\n".join(lines)


def format_json(result: GateResult) -> str:
    """The gate's result as indented JSON (every offender included).

    Examples:
        >>> from subagent_catalog.views.gate import run_checks
        >>> import json, tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> json.loads(format_json(run_checks(read_corpus(tempfile.mkdtemp()))))["failing"]
        []
    """
    return json.dumps(result.to_dict(), ensure_ascii=False, indent=2)
