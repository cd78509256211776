"""Five audit queries for ``sql``, shown in docs/sql.md and run over every conformance corpus by the tests.

Each names its tables and orders its rows completely, so a corpus and its
exported archive give equal frames.
"""

from __future__ import annotations

AUDIT_QUERIES: dict[str, str] = {
    "damaged-logs": """
select verdict, coalesce(read_cause, verdict) as cause, count(*) as logs
from sessions
where verdict <> 'ok'
group by all
order by logs desc, verdict, cause
""",
    "subagents-without-identity": """
select session_id, parent_session, identity_cause, identity_detail, path
from sessions
where origin = 'subagent' and identity_mode is null
order by session_id, path
""",
    "catalog-diagnostics": """
select parent, id, reason, cause, cause_detail
from catalog
where kind = 'diagnostic'
order by parent, id, reason, cause, cause_detail
""",
    "tokens-by-project": """
select project_dir,
       count(*) as logs,
       sum(turns)::bigint as turns,
       sum(turns_error)::bigint as error_turns,
       sum(input_tokens)::bigint as input_tokens,
       sum(output_tokens)::bigint as output_tokens,
       sum(cache_read_tokens)::bigint as cache_read_tokens,
       sum(tool_calls)::bigint as tool_calls,
       sum(tool_results_failed)::bigint as failed_tool_results
from sessions
group by project_dir
order by project_dir
""",
    "failing-tools": """
select name as tool,
       count(*) as calls,
       count(*) filter (where is_error) as failed
from tool_calls  -- each log's own calls: a fork's seed repeats its parent's
where status <> 'no-call'
group by name
order by failed desc, calls desc, tool
""",
}
"""Name -> query (DuckDB SQL over the tables of ``sql_tables.SQL_TABLES``)."""


def audit_query(name: str) -> str:
    """One of the audit queries, without its surrounding blank lines.

    Examples:
        >>> audit_query("damaged-logs").splitlines()[0]
        'select verdict, coalesce(read_cause, verdict) as cause, count(*) as logs'
    """
    return AUDIT_QUERIES[name].strip()
