"""The fuzz suite's **SQL** tier: random and hostile queries through ``subagent-catalog sql``.

Each case draws one query from a family: table functions over files and URLs (the secret file
outside the corpus, a corpus log, ``/etc/passwd``, ``/proc``, HOME, ``http://127.0.0.1:9``,
``s3://``...), statements that are not a read-only query (``COPY``, ``EXPORT``, ``ATTACH``,
``INSTALL``, ``LOAD``, ``PRAGMA``, ``SET``, ``CALL``, ``CREATE``..., alone or hidden behind a
``SELECT``), queries whose answer is known from the frames, random valid queries, blow-ups (cross
joins, recursive CTEs, huge lists and strings, large results), deep nesting, huge queries, and
garbage (random Unicode, lone surrogates as an undecodable argv gives them, NUL, control
characters), then maybe mutates it. A batch of cases runs in one child interpreter, the CLI
in-process (``--memory-limit 256 --timeout 3``), with HOME, TMPDIR and the working directory in a
sandbox. Invariants, checked on every case:

* **typed error or correct result**: exit 0, or 1 (2 for a usage error) with exactly one
  ``Error:`` line, the last, and no traceback, ``internal error`` or panic; a query whose answer
  is known prints that answer; a query over files, URLs or a refused statement never exits 0;
* **nothing read from outside**: the secret planted outside the corpus never appears on stdout or
  stderr;
* **nothing written anywhere**: the corpus, HOME (no ``~/.duckdb``), TMPDIR, the working
  directory and the outside directory are byte for byte unchanged after every case;
* **no hang**: every case ends within ``CASE_S`` seconds (the child is killed after
  ``CASE_S`` a case);
* **bounded memory**: the child's peak RSS (``VmHWM``) stays under ``RSS_BOUND_MB``.

``python -m tests.fuzz.sql --cases N [--seed S]`` (``make fuzz-sql N=...``) runs the long tier;
``tests/test_fuzz_sql.py`` runs a seeded sample in ``make test``.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz import case_seeds, tier_parser
from tests.fuzz.interop_common import (
    SANDBOX_DIRS,
    SECRET,
    Sandbox,
    children_hwm_kb,
    hwm_kb,
    line_violations,
    run_child,
    run_cli,
)

RSS_BOUND_MB = 900
"""The child's peak RSS bound: the CLI's own ~220 MB, a result of up to 256 MB (``--memory-limit``) and its copies."""
QUERY_RSS_BOUND_MB = 1500
"""The queries' processes' peak RSS bound: forked from the child (its pages counted again), plus the bound they are
killed at (``sql_process.memory_bound_mb(256)`` = 512 MB) and what they can add between two looks (20 ms)."""
CASE_S = 60.0
MEMORY_LIMIT = "256"
QUERY_TIMEOUT = "3"
BATCH = 20

FILE_FUNCTIONS = (
    "read_json('{p}')",
    "read_json_auto('{p}')",
    "read_json_objects('{p}')",
    "read_ndjson('{p}')",
    "read_csv('{p}')",
    "read_csv_auto('{p}', header = true)",
    "read_parquet('{p}')",
    "parquet_scan('{p}')",
    "parquet_metadata('{p}')",
    "parquet_schema('{p}')",
    "read_text('{p}')",
    "read_blob('{p}')",
    "glob('{p}')",
    "sniff_csv('{p}')",
    "'{p}'",
    "delta_scan('{p}')",
    "iceberg_scan('{p}')",
    "sqlite_scan('{p}', 't')",
    "read_xlsx('{p}')",
    "query_table('{p}')",
)
STATEMENTS = (
    "copy sessions to '{p}'",
    "copy (select * from events) to '{p}' (format parquet)",
    "copy sessions from '{p}'",
    "export database '{p}'",
    "import database '{p}'",
    "attach '{p}' as other",
    "attach '{p}' (read_only)",
    "detach other",
    "install httpfs",
    "force install spatial from community",
    "load httpfs",
    "load '{p}'",
    "update extensions",
    "pragma enable_profiling = 'json'",
    "pragma profile_output = '{p}'",
    "pragma database_list",
    "set enable_external_access = true",
    "set home_directory = '{p}'",
    "set temp_directory = '{p}'",
    "set log_query_path = '{p}'",
    "reset all",
    "set variable x = (select 1)",
    "call pragma_version()",
    "checkpoint",
    "create table t as select * from sessions",
    "create view v as select 1",
    "create macro m(a) as a",
    "create secret s (type s3, key_id 'k', secret 'v')",
    "create persistent secret s (type s3, key_id 'k', secret 'v')",
    "insert into sessions select * from sessions",
    "delete from sessions",
    "update sessions set verdict = 'ok'",
    "drop view sessions",
    "alter view sessions rename to x",
    "begin transaction",
    "prepare p as select 1",
    "vacuum",
    "use memory",
    "pivot sessions on verdict",
    "select 1; copy sessions to '{p}'",
    "select 1 /* ; */ ; attach '{p}' as o",
    "with x as (select 1) select * from x; install httpfs",
)
VALID_PARTS = {
    "sessions": ("session_id", "verdict", "project_dir", "turns", "origin", "created_at", "input_tokens"),
    "events": ("session_id", "seq", "type", "time_ms", "text", "data"),
    "problems": ("path", "code", "severity", "detail"),
    "descriptors": ("session_id", "mode", "label"),
    "catalog": ("parent", "id", "kind", "reason"),
    "usage_by_model": ("session_id", "model", "cost_usd"),
    "tool_calls": ("name", "status", "is_error"),
    "run_trees": ("session_id",),
}
BLOWUPS = (
    "select count(*) from events a, events b, events c, events d",
    "select count(*) from range(1000000000) a, range(1000000) b",
    "with recursive r(n) as (select 1 union all select n + 1 from r) select count(*) from r",
    "select list(range) from range(1000000000)",
    "select string_agg(range::varchar, ',') from range(200000000)",
    "select repeat('x', 2000000000)",
    "select * from range(100000000)",
    "select range a, range b, range c, range d from range(50000000)",
    "select * from range(3000000) order by random()",
    "select count(distinct (a.seq, b.seq)) from events a cross join events b",
    "select regexp_matches(repeat('a', 10000000), '(a+)+b')",
)
TRUTHS = (
    ("select count(*) as n from sessions", "sessions"),
    ("select count(*) as n from events", "events"),
    ("select count(*) as n from problems", "problems"),
    ("select count(*) as n from descriptors", "descriptors"),
    ("select count(*) as n from sessions where verdict = 'ok'", "ok"),
    ("SELECT COUNT(*) AS n FROM Sessions WHERE origin = 'subagent'", "subagents"),
    ("from sessions select count(distinct project_dir) as n", "projects"),
    ("with s as (select turns from sessions) select coalesce(sum(turns), 0)::bigint as n from s", "turns"),
)


FAMILIES = ("file", "statement", "truth", "valid", "blowup", "nested", "huge", "garbage")
WEIGHTS = (4, 4, 2, 3, 2, 1, 1, 2)


def _paths(box: Sandbox, rng: random.Random) -> str:
    log = sorted(box.corpus.rglob("session.jsonl*"))
    return rng.choice(
        [
            str(box.outside / "secret.json"),
            str(box.outside / "secret.csv"),
            str(box.outside / "secret.txt"),
            str(box.outside / "*"),
            str(rng.choice(log)),
            str(box.corpus / "new" / "session.jsonl"),
            str(box.corpus),
            str(box.home / ".duckdb" / "x"),
            str(box.cwd / "out.csv"),
            str(box.tmp / "t.db"),
            "/etc/passwd",
            "/proc/self/environ",
            "~/x.csv",
            "http://127.0.0.1:9/x.csv",
            "https://example.invalid/x.parquet",
            "s3://bucket/x.parquet",
            "hf://datasets/x/y.parquet",
            "file:///etc/passwd",
            f"{box.outside}/../outside/secret.json",
        ]
    )


def _valid(rng: random.Random) -> str:
    table = rng.choice(list(VALID_PARTS))
    columns = rng.sample(VALID_PARTS[table], k=rng.randint(1, len(VALID_PARTS[table])))
    shapes = [
        lambda: f"select {', '.join(columns)} from {table} limit {rng.randint(0, 50)}",
        lambda: f"select {columns[0]}, count(*) as n from {table} group by all order by n desc limit 5",
        lambda: f"select * from {table} where {columns[0]} is not null order by 1 limit 3",
        lambda: f"describe {table}",
        lambda: f"summarize select {columns[0]} from {table}",
        lambda: f"explain select * from {table}",
        lambda: f"select count(*) from {table} t1 join {table} t2 using ({columns[0]})",
        lambda: f"select {columns[0]}, row_number() over (order by {columns[0]}) from {table} limit 10",
        lambda: "select json_extract_string(data, '$.turn') as t, count(*) from events group by 1",
        lambda: f"select * from {table} where {columns[0]}::varchar like '%{rng.choice('aeiou')}%'",
        lambda: "select interval 1 day as i",
        lambda: "select 1 as a, 2 as a, 3 as A",
        lambda: "values (1, 'x'), (2, 'y')",
        lambda: f"table {table}",
        lambda: "show sessions",
    ]
    return rng.choice(shapes)()


def _garbage(rng: random.Random) -> str:
    kind = rng.randrange(6)
    if kind == 0:
        return "".join(chr(rng.randrange(0x20, 0x2FFF)) for _ in range(rng.randint(1, 200)))
    if kind == 1:  # what an argv that is not UTF-8 becomes (surrogateescape)
        return "select '" + os.fsdecode(rng.randbytes(rng.randint(1, 40))) + "'"
    if kind == 2:
        return "select 1" + rng.choice(["\x00", "\x1b[2J", "\r", "\u202e", "\ufeff", "\x7f"]) + " as x"
    if kind == 3:
        return rng.choice(["'", '"', "(", "select ((", "/*", "select $$", ";;;", " ", "--"])
    if kind == 4:
        return "select " + '"' + "x" * rng.randint(1, 100_000) + '"'
    return "select " + ", ".join(f"'{rng.random()}'" for _ in range(rng.randint(1, 3000)))


def _nested(rng: random.Random) -> str:
    depth = rng.choice([10, 500, 999, 1001, 3000, 20_000])
    kind = rng.randrange(3)
    if kind == 0:
        return "select " + "(" * depth + "1" + ")" * depth
    if kind == 1:
        return "select * from " + "(select * from " * min(depth, 3000) + "sessions" + ")" * min(depth, 3000)
    return "select " + "abs(" * depth + "1" + ")" * depth


def _mutate(rng: random.Random, query: str) -> str:
    edits = rng.randint(1, 3)
    for _ in range(edits):
        choice = rng.randrange(5)
        at = rng.randrange(len(query) + 1)
        if choice == 0:
            query = query[:at] + rng.choice([";", " -- ", "/*", "*/", "'", "\n", " union all select 1 "]) + query[at:]
        elif choice == 1 and query:
            query = query[:at] + query[at + 1 :]
        elif choice == 2:
            query = query.upper() if rng.random() < 0.5 else query.swapcase()
        elif choice == 3:
            query = query + rng.choice(["; copy sessions to 'x.csv'", ";", " limit 1", " order by 1"])
        else:
            query = query[:at]
    return query


@dataclass
class Case:
    """One query and what must hold of it."""

    seed: int
    family: str
    query: str
    truth: str | None = None  # the name of a known answer
    must_fail: bool = False
    args: list[str] = field(default_factory=list)


def make_case(seed: int, box: Sandbox, family: str | None = None) -> Case:
    """Draw case ``seed`` (a family, a query, maybe mutated)."""
    rng = random.Random(seed)
    chosen = family or rng.choices(FAMILIES, WEIGHTS)[0]
    truth, must_fail = None, False
    if chosen == "file":
        template = rng.choice(FILE_FUNCTIONS)
        query = f"select * from {template.format(p=_paths(box, rng))}"
        query = rng.choice([query, f"select count(*) from sessions where exists ({query})", f"{query} limit 1"])
        must_fail = True
    elif chosen == "statement":
        query = rng.choice(STATEMENTS).format(p=_paths(box, rng))
        must_fail = True
    elif chosen == "truth":
        query, truth = rng.choice(TRUTHS)
    elif chosen == "valid":
        query = _valid(rng)
    elif chosen == "blowup":
        query = rng.choice(BLOWUPS)
    elif chosen == "nested":
        query = _nested(rng)
    elif chosen == "huge":
        query = "select 1 as x -- " + "y" * rng.choice([99_000, 100_001, 1_000_000])
    else:
        query = _garbage(rng)
    if truth is None and not must_fail and rng.random() < 0.3:
        query = _mutate(rng, query)
    elif must_fail and rng.random() < 0.3:
        query = rng.choice([query.upper(), f"  {query}  ;", f"/* c */ {query}", query.replace(" ", "\n")])
    fmt = rng.choice(["table", "csv", "json"]) if truth is None else "csv"
    args = [
        "sql",
        str(box.corpus),
        query,
        "--format",
        fmt,
        "--no-cache",
        "-q",
        "--memory-limit",
        MEMORY_LIMIT,
        "--timeout",
        QUERY_TIMEOUT,
        "--threads",
        "2",
    ]
    return Case(seed, chosen, query, truth, must_fail, args)


def truths(corpus: Path) -> dict[str, int]:
    """The known answers, from the frames (Polars), not from DuckDB."""
    import polars as pl

    from subagent_catalog import read_corpus

    frames = read_corpus(corpus, cache=False)
    sessions = frames.sessions
    return {
        "sessions": sessions.height,
        "events": frames.events.height,
        "problems": frames.problems.height,
        "descriptors": frames.descriptors.height,
        "ok": sessions.filter(pl.col("verdict") == "ok").height,
        "subagents": sessions.filter(pl.col("origin") == "subagent").height,
        "projects": sessions["project_dir"].n_unique(),
        "turns": int(sessions["turns"].sum() or 0),
    }


def child_main() -> None:
    """Run the cases in argv[1] (JSON) in this interpreter; one JSON line per case, printed as it ends."""
    import sys

    spec = json.loads(Path(sys.argv[1]).read_text())
    box = Sandbox(**{name: Path(value) for name, value in spec["box"].items()}, states=spec["states"])
    for case in spec["cases"]:
        print(json.dumps({"seed": case["seed"], "started": True}), flush=True)
        run = run_cli(case["args"], str(box.scratch))
        changed = box.changed()
        box.states = box.snapshot()  # the next case is judged on what it changes itself
        result = {"seed": case["seed"], "run": run, "changed": changed, "hwm_kb": hwm_kb()}
        print(json.dumps({**result, "query_hwm_kb": children_hwm_kb()}), flush=True)


@dataclass
class Outcome:
    """One case: what ran and which invariants it broke."""

    seed: int
    family: str
    query: str
    violations: list[str]
    code: Any = None
    seconds: float | None = None
    hwm_mb: float | None = None
    query_hwm_mb: float | None = None
    stderr: str = ""


def check(case: Case, result: dict[str, Any] | None, answers: dict[str, int]) -> list[str]:
    """The invariants a case broke, from the child's report (``None``: it never finished)."""
    if result is None:
        return [f"no result (hang or crash of the child; bound {CASE_S:.0f} s a case)"]
    run = result["run"]
    violations = line_violations(run) + list(result["changed"])
    if SECRET in run["stdout"] or SECRET in run["stderr"]:
        violations.append("the secret outside the corpus was read")
    if run["seconds"] > CASE_S:
        violations.append(f"took {run['seconds']} s")
    if result["hwm_kb"] / 1024 > RSS_BOUND_MB:
        violations.append(f"peak RSS {result['hwm_kb'] / 1024:.0f} MB > {RSS_BOUND_MB} MB")
    if result["query_hwm_kb"] / 1024 > QUERY_RSS_BOUND_MB:
        peak = result["query_hwm_kb"] / 1024
        violations.append(f"a query's process peaked at {peak:.0f} MB > {QUERY_RSS_BOUND_MB} MB")
    if case.must_fail and run["code"] == 0:
        violations.append("a file, URL or statement query exited 0")
    if case.truth is not None:
        expected = f"n\n{answers[case.truth]}\n"
        if run["code"] != 0 or run["stdout"] != expected:
            violations.append(f"wrong answer: {run['stdout'][:80]!r} {run['stderr'][-200:]!r} != {expected!r}")
    return violations


def run_cases(
    seeds: list[int], box: Sandbox, *, family: str | None = None, batch: int = BATCH, families: list[str] | None = None
) -> list[Outcome]:
    """Run the cases a batch at a time, each batch in one child; an outcome per case.

    ``families`` gives each seed its family (else ``family``, else a draw).
    """
    answers = truths(box.corpus)
    outcomes: list[Outcome] = []
    chosen: list[str | None] = list(families) if families else [family] * len(seeds)
    for start in range(0, len(seeds), batch):
        drawn = zip(seeds[start : start + batch], chosen[start:], strict=False)
        cases = [make_case(seed, box, kind) for seed, kind in drawn]
        spec = {
            "box": {name: str(getattr(box, name)) for name in SANDBOX_DIRS},
            "states": box.snapshot(),
            "cases": [{"seed": case.seed, "args": case.args} for case in cases],
        }
        results, tail = run_child("tests.fuzz.sql", spec, box, timeout=CASE_S * len(cases) + 60)
        finished = {r["seed"]: r for r in results if "run" in r}
        for case in cases:
            result = finished.get(case.seed)
            violations = check(case, result, answers)
            if result is None:
                violations.append(tail[-300:])
            run = result["run"] if result is not None else {}
            outcomes.append(
                Outcome(
                    case.seed,
                    case.family,
                    case.query[:300],
                    violations,
                    run.get("code"),
                    run.get("seconds"),
                    None if result is None else round(result["hwm_kb"] / 1024),
                    None if result is None else round(result["query_hwm_kb"] / 1024),
                    str(run.get("stderr", ""))[-300:],
                )
            )
    return outcomes


def main(argv: list[str] | None = None) -> int:
    """Run ``--cases`` seeded cases; print a summary; exit 1 on any violation."""
    parser = tier_parser("tests.fuzz.sql", __doc__)
    args = parser.parse_args(argv)
    seeds = case_seeds(args)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-sql-") as work:
        outcomes = run_cases(seeds, Sandbox.make(Path(work) / "box"))
    bad = [o for o in outcomes if o.violations]
    summary = {
        "cases": len(outcomes),
        "seconds": round(time.perf_counter() - started, 1),
        "max_rss_mb": max((o.hwm_mb or 0 for o in outcomes), default=0),
        "rss_bound_mb": RSS_BOUND_MB,
        "max_query_rss_mb": max((o.query_hwm_mb or 0 for o in outcomes), default=0),
        "query_rss_bound_mb": QUERY_RSS_BOUND_MB,
        "max_case_s": max((o.seconds or 0 for o in outcomes), default=0),
        "by_family": Counter(o.family for o in outcomes),
        "by_exit": Counter(str(o.code) for o in outcomes),
        "violations": [vars(o) for o in bad],
    }
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "fuzz-sql.json").write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps({k: v for k, v in summary.items() if k != "violations"}, default=str))
    for outcome in bad:
        print(f"seed {outcome.seed} {outcome.family} {outcome.query[:120]!r}: {outcome.violations} {outcome.stderr!r}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
