"""What the SQL sandbox costs a call: ``sql(source, query)`` timed on ``data/sample`` and an archive, per mode.

Modes: ``isolated`` (the default on Linux: the query in a forked child that can be killed) and
``in-process`` (``sql.ISOLATE = False``: the same sandboxed connection in this process). Run from
an older checkout (``PYTHONPATH=<checkout>``), where neither mode exists, the script times that
checkout's ``sql`` as ``before``. Each query is called ``--repeat`` times after one warm-up call;
the median and the fastest are printed (milliseconds), the tables made by the query included.

Usage:
    PYTHONPATH=. .venv/bin/python benchmarks/sql_overhead.py [--archive DIR] [--repeat 15]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))
QUERIES = (
    "select count(*) as n from sessions",
    "select verdict, count(*) as n from sessions group by all order by n desc",
    "select count(*) as n from problems",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", default=None, help="an exported archive (e.g. of 20,000 sessions)")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.store.archive import open_archive

    module = importlib.import_module("subagent_catalog.interop.sql")
    modes = ["isolated", "in-process"] if hasattr(module, "ISOLATE") else ["before"]
    sources = {"sample": read_corpus(os.path.join(os.path.dirname(HERE), "data", "sample"), cache=False)}
    if args.archive:
        sources["archive"] = open_archive(args.archive)
    for name, source in sources.items():
        for mode in modes:
            if mode != "before":
                module.ISOLATE = mode == "isolated"
            for query in QUERIES:
                module.sql(source, query)  # warm-up: imports, the first connection
                times = []
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    module.sql(source, query)
                    times.append((time.perf_counter() - started) * 1000)
                row = {"source": name, "mode": mode, "query": query, "median_ms": round(statistics.median(times), 1)}
                print(json.dumps({**row, "fastest_ms": round(min(times), 1)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
