"""User rules: a pattern (literal or regular expression) that makes a finding wherever a transcript holds it.

A rules file is TOML, one ``[[rule]]`` table per rule::

    [[rule]]
    name = "aws-key"                  # the findings' kind: letters, digits, '-', '_' and '.'
    pattern = "AKIA[0-9A-Z]{16}"
    regex = true                      # default false: the pattern is literal text
    ignore_case = false               # default false
    in = "tool-result"                # message | tool-call | tool-result | any (default any)
    severity = "error"                # info | warn | error (default warn)
    message = "an AWS access key in a tool result"

Rules run on the search engine (``search_events``): the same bounded syntax (Rust's ``regex``: linear
time, no look-around or back-references), the same byte scan of raw logs, archives' events. One
finding per rule and session: the first match is the evidence, the count is in the message. A fork's
seed (its parent's history) is not searched in the fork: its matches are the parent's.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import polars as pl

from subagent_catalog.analysis.findings.options import FindingsError
from subagent_catalog.analysis.findings.schema import SEVERITIES, Finding, Severity
from subagent_catalog.analysis.search import DEFAULT_TYPES, search_events
from subagent_catalog.analysis.search_match import SearchError, compile_pattern
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.source import Source
from subagent_catalog.regular import NotRegularFileError, read_regular

__all__ = ["MAX_RULES_BYTES", "Rule", "RuleScope", "load_rules", "rule_findings"]

RuleScope = Literal["message", "tool-call", "tool-result", "any"]
MAX_RULES_BYTES = 1 << 20
"""A rules file larger than this is refused."""

_SCOPES: dict[str, tuple[tuple[str, ...], frozenset[str] | None]] = {
    "message": (("user/message", "assistant/message", "assistant/chunk"), frozenset({"text", "reasoning"})),
    "tool-call": (("tool/call",), None),
    "tool-result": (("tool/result",), None),
    "any": (DEFAULT_TYPES, None),
}
_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
_KEYS = {"name", "pattern", "regex", "ignore_case", "in", "severity", "message"}
_HINT = "docs/findings.md describes a rules file"


@dataclass(frozen=True)
class Rule:
    """One user rule (see the module's description of a rules file).

    Examples:
        >>> Rule("secret", "password=").scope
        'any'
        >>> Rule("bad name!", "x")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        subagent_catalog.analysis.findings.options.FindingsError: rule name 'bad name!' must be 1-64 letters, ...
    """

    name: str
    pattern: str
    regex: bool = False
    ignore_case: bool = False
    scope: RuleScope = "any"
    severity: Severity = "warn"
    message: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise FindingsError(f"rule name {self.name!r} must be 1-64 letters, digits, '-', '_' or '.'", hint=_HINT)
        if not isinstance(self.pattern, str) or not self.pattern:
            raise FindingsError(f"rule {self.name!r}: pattern must be a non-empty string", hint=_HINT)
        for flag in ("regex", "ignore_case"):
            if not isinstance(getattr(self, flag), bool):
                raise FindingsError(f"rule {self.name!r}: {flag} must be true or false", hint=_HINT)
        if self.scope not in get_args(RuleScope):
            raise FindingsError(
                f"rule {self.name!r}: in must be one of {', '.join(get_args(RuleScope))}, not {self.scope!r}",
                hint=_HINT,
            )
        if self.severity not in SEVERITIES:
            raise FindingsError(
                f"rule {self.name!r}: severity must be one of {', '.join(SEVERITIES)}, not {self.severity!r}",
                hint=_HINT,
            )
        if self.message is not None and not isinstance(self.message, str):
            raise FindingsError(f"rule {self.name!r}: message must be a string", hint=_HINT)
        try:  # the search engine's own check (Rust regex: linear time, bounded size), before any log is read
            compile_pattern(self.pattern, regex=self.regex, ignore_case=self.ignore_case)
        except SearchError as error:
            raise FindingsError(f"rule {self.name!r}: {error.args[0]}", hint=error.hint) from None


def _rule(table: Any, where: str) -> Rule:
    if not isinstance(table, dict):
        raise FindingsError(f"{where}: a rule must be a table", hint=_HINT)
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise FindingsError(f"{where}: unknown key {unknown[0]!r} (keys: {', '.join(sorted(_KEYS))})", hint=_HINT)
    for key in ("name", "pattern"):
        if key not in table:
            raise FindingsError(f"{where}: a rule needs {key!r}", hint=_HINT)
    return Rule(
        table["name"],
        table["pattern"],
        regex=table.get("regex", False),
        ignore_case=table.get("ignore_case", False),
        scope=table.get("in", "any"),
        severity=table.get("severity", "warn"),
        message=table.get("message"),
    )


def load_rules(path: str | os.PathLike[str]) -> list[Rule]:
    """The rules of a TOML rules file, checked (a regular file of at most ``MAX_RULES_BYTES``).

    Raises:
        FindingsError: the file cannot be read, is not TOML, or a rule is malformed (the error names it).

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "rules.toml")
        >>> _ = open(path, "w").write('[[rule]]\\nname = "todo"\\npattern = "TODO"\\nin = "message"\\n')
        >>> [(rule.name, rule.pattern, rule.regex, rule.scope, rule.severity) for rule in load_rules(path)]
        [('todo', 'TODO', False, 'message', 'warn')]
    """
    where = f"rules file {os.fspath(path)!r}"
    try:
        data = read_regular(path, limit=MAX_RULES_BYTES + 1)
    except NotRegularFileError as error:
        raise FindingsError(f"{where}: {error}", hint="give a regular TOML file") from None
    except OSError as error:
        raise FindingsError(f"cannot read {where}: {error.strerror or error}", hint=_HINT) from None
    if len(data) > MAX_RULES_BYTES:
        raise FindingsError(f"{where} is larger than {MAX_RULES_BYTES:,} bytes", hint=_HINT)
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise FindingsError(f"{where} is not UTF-8 TOML: {error}", hint=_HINT) from None
    unknown = sorted(set(document) - {"rule"})
    if unknown:
        raise FindingsError(f"{where}: unknown table {unknown[0]!r}", hint=_HINT)
    tables = document.get("rule", [])
    if not isinstance(tables, list):
        raise FindingsError(f"{where}: write each rule as [[rule]]", hint=_HINT)
    rules = [_rule(table, f"{where}, rule {n + 1}") for n, table in enumerate(tables)]
    names = [rule.name for rule in rules]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise FindingsError(f"{where}: rule {twice[0]!r} is defined twice", hint=_HINT)
    return rules


def rule_findings(source: Source, corpus: Corpus, rules: Sequence[Rule]) -> list[Finding]:
    """The findings of user rules: one per rule and session that holds a match (outside a fork's seed).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> found = rule_findings(corpus, corpus, [Rule("make", "make", scope="tool-call", message="ran make")])
        >>> [(f.session_id, f.message) for f in found]
        [('storm-no', 'ran make (5 matches)'), ('storm-yes', 'ran make (5 matches)')]
    """
    seeds = corpus.sessions.select("list_order", pl.col("seed_length").fill_null(0))
    found: list[Finding] = []
    for rule in rules:
        types, fields = _SCOPES[rule.scope]
        hits = search_events(source, rule.pattern, types=types, regex=rule.regex, ignore_case=rule.ignore_case)
        hits = hits.join(seeds, on="list_order", how="left").filter(pl.col("seq") >= pl.col("seed_length").fill_null(0))
        if fields is not None:
            hits = hits.filter(pl.col("field").is_in(list(fields)))
        hits = hits.sort("list_order", "seq", "block", "start")
        for _, rows in hits.group_by("list_order", maintain_order=True):
            first = rows.row(0, named=True)
            count = int(rows["matches"].sum())
            found.append(
                Finding.about(
                    first,
                    rule.name,
                    rule.severity,
                    f"{rule.message or f'matches rule {rule.name}'} ({count} match{'es' if count != 1 else ''})",
                    first["snippet"] or "",
                    turn=first["turn"],
                    step=first["step"],
                    seq=first["seq"],
                    seq_end=int(rows["seq"].max()),  # type: ignore[arg-type]
                )
            )
    return found
