"""Trace export speed: ``otel -o spans.jsonl`` over a generated corpus (issue 31), in spans per second.

For a generated corpus (default 20,000 sessions, seed 1, zstd; reused from ``--out`` when there),
measured in this process, side by side:

- read:       ``read_corpus(cache=False)`` (not part of the export; the CLI does it first);
- transcript: every readable log's events read again and folded into its transcript
  (``log_events`` + ``session_transcript``), what the export builds on: its floor;
- export:     ``write_otlp_json(otlp_traces(corpus), file)`` (the same reads and folds, plus the spans,
  their OTLP protobuf encoding and the JSON lines), with the file's size.

Prints spans, traces, seconds and spans per second, and the export's time over the floor.

Usage:
    PYTHONPATH=. .venv/bin/python benchmarks/otel_export.py [--sessions 20000] [--jobs 2] [--out benchmarks/out]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from run import _corpus  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2, help="processes generating and reading the corpus")
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    parser.add_argument("--skip-floor", action="store_true", help="do not measure the transcript floor")
    args = parser.parse_args(argv)
    import polars as pl

    from subagent_catalog.analysis.transcript import session_transcript
    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.interop.otel import otlp_traces, write_otlp_json

    root, _ = _corpus(args.out, args.sessions, args.seed, "zstd", args.jobs)
    started = time.perf_counter()
    corpus = read_corpus(root, compression="zstd", jobs=args.jobs, cache=False)
    read_s = time.perf_counter() - started
    result: dict[str, object] = {"sessions": corpus.sessions.height, "read_s": round(read_s, 2)}
    if not args.skip_floor:
        started = time.perf_counter()
        rows = 0
        for session in corpus.sessions.filter(pl.col("verdict") != "skipped").iter_rows(named=True):
            rows += session_transcript(corpus, session, corpus.log_events(session["list_order"])).height
        result["transcript_s"] = round(time.perf_counter() - started, 2)
        result["transcript_rows"] = rows
    with tempfile.TemporaryDirectory(prefix="otel-bench-") as work:
        target = os.path.join(work, "spans.jsonl")
        started = time.perf_counter()
        stats = write_otlp_json(otlp_traces(corpus), target)
        export_s = time.perf_counter() - started
        result |= {
            "export_s": round(export_s, 2),
            "spans": stats.spans,
            "traces": stats.traces,
            "kinds": stats.kinds,
            "spans_per_s": round(stats.spans / export_s),
            "file_mb": round(os.path.getsize(target) / 1e6, 1),
        }
    if "transcript_s" in result:
        result["export_over_floor"] = round(export_s / float(result["transcript_s"]), 2)  # type: ignore[arg-type]
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
