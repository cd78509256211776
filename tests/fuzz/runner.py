"""The long fuzz tier: ``python -m tests.fuzz.runner --cases N [--seed S]`` (``make fuzz N=...``).

Each case ``i`` is rebuilt from seed ``S * 1_000_000 + i`` (``--case-seed`` runs one
case again), read, and checked against every invariant of
:mod:`tests.fuzz.invariants`. Huge single lines are ``--huge-mb`` MiB (100 by
default). Before the random cases, a memory probe reads corpora holding one
huge line in a fresh interpreter and reports its peak RSS. The run prints a
summary (cases, violations by signature with reproducing seeds, outcomes) and
writes it as JSON under ``tests/artifacts/``; it exits 1 when a violation that
no regression test covers yet was found.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from subagent_catalog.writer import EventLog, descriptor, encode_log, header, log_path, write_file
from tests.fuzz.invariants import check_case, known_issue, optional_apis, peak_rss
from tests.fuzz.mutations import FAST, LONG, REPO, Case, FuzzConfig, frame_plaintext, make_case

MIB = 1024 * 1024


def case_seed(base: int, index: int) -> int:
    """The seed of case ``index`` of a run with seed ``base``."""
    return base * 1_000_000 + index


def _probe_corpus(workdir: Path, compression: Any, mode: str, size: int) -> Path:
    """A parent and one child whose log holds a ``size``-byte line (torn garbage or a valid label)."""
    root = workdir / f"{mode}-{compression}"
    parent = header("P", created_at=1)
    write_file(log_path(root, parent, compression), encode_log(parent, [], compression))
    head = header("huge", created_at=2, parent="P", subagent=True)
    log = EventLog("huge")
    log.turn_start()
    if mode == "huge-label":
        log.descriptor(descriptor("continuable", label="\x00HUGE\x00"))
    log.turn_end()
    plain = encode_log(head, log.events, "none")
    if mode == "huge-label":
        plain = plain.replace(b'"\\u0000HUGE\\u0000"', b'"' + b"L" * size + b'"')
    else:
        plain += b"A" * size  # a torn final record of `size` bytes
    data = frame_plaintext(random.Random(0), plain) if compression == "zstd" else plain
    write_file(log_path(root, head, compression), data)
    return root


def memory_probe(size: int, workdir: Path) -> list[dict[str, Any]]:
    """Peak RSS of reading a corpus with one ``size``-byte line, per encoding and shape."""
    results = []
    empty = workdir / "empty"
    empty.mkdir()
    baseline = peak_rss(empty)
    results.append({"case": "empty corpus (interpreter + imports)", **baseline})
    for compression in ("none", "zstd"):
        for mode in ("torn-garbage", "huge-label"):
            root = _probe_corpus(workdir, compression, mode, size)
            started = time.monotonic()
            measured = peak_rss(root)
            measured["seconds"] = round(time.monotonic() - started, 1)
            measured["case"] = f"{mode} {compression} {size // MIB} MiB line"
            if "peak_kib" in measured and "peak_kib" in baseline:
                measured["over_baseline_mib"] = round((measured["peak_kib"] - baseline["peak_kib"]) / 1024, 1)
                measured["per_line_byte"] = round((measured["peak_kib"] - baseline["peak_kib"]) * 1024 / size, 2)
            results.append(measured)
    return results


def run(args: argparse.Namespace) -> int:
    """Run the cases and print the summary; 1 when an unreported violation was found."""
    config = FuzzConfig(huge_bytes=int(args.huge_mb * MIB) + 17, huge_share=args.huge_share, live_share=args.live_share)
    apis = optional_apis()
    started = time.monotonic()
    summary: dict[str, Any] = {
        "seed": args.seed,
        "huge_mb": args.huge_mb,
        "cases_requested": args.cases,
        "optional_apis": {k: v is not None for k, v in apis.items()},
    }
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.memory_probe:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="scfz-mem", dir="/tmp") as scratch:
            summary["memory_probe"] = memory_probe(int(args.huge_mb * MIB), Path(scratch))
        for row in summary["memory_probe"]:
            print("memory:", json.dumps(row), flush=True)
    cases_started = time.monotonic()  # the time budget counts the cases, not the memory probe
    seeds = [args.case_seed] if args.case_seed is not None else [case_seed(args.seed, i) for i in range(args.cases)]
    signatures: dict[str, dict[str, Any]] = {}
    mutations: Counter[str] = Counter()
    stats: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    harness: defaultdict[str, list[int]] = defaultdict(list)
    done = 0
    slowest: list[tuple[float, int]] = []
    for index, seed in enumerate(seeds):
        if args.time_budget and time.monotonic() - cases_started > args.time_budget:
            break
        try:
            case: Case = make_case(seed, config)
        except Exception as error:  # a bug of the harness, not of the library: count it, go on
            harness[f"{type(error).__name__}: {error}"[:200]].append(seed)
            continue
        try:
            outcome = check_case(
                case,
                report=index % args.report_every == 0,
                parity=not args.no_parity,
                timeout=900.0 if case.huge else 120.0,
                apis=apis,
            )
        finally:
            case.cleanup()
        done += 1
        for step in case.steps:
            mutations[step.split("(")[0]] += 1
        stats.update(outcome.stats)
        notes.update(outcome.notes)
        slowest = sorted([*slowest, (outcome.seconds, seed)], reverse=True)[:5]
        for violation in outcome.violations:
            entry = signatures.setdefault(
                violation.signature(),
                {"count": 0, "invariant": violation.invariant, "where": violation.where, "examples": []},
            )
            entry["count"] += 1
            entry["known"] = known_issue(violation)
            if len(entry["examples"]) < 3:
                entry["examples"].append(
                    {"seed": seed, "case": case.describe()[:600], "detail": violation.detail[:800]}
                )
        if args.verbose or (done % args.print_every == 0):
            elapsed = time.monotonic() - started
            print(f"{done} cases, {elapsed:.0f} s, {len(signatures)} violation signatures", flush=True)
    elapsed = time.monotonic() - started
    unknown = {k: v for k, v in signatures.items() if not v.get("known")}
    summary.update(
        {
            "cases_run": done,
            "seconds": round(elapsed, 1),
            "case_seconds": round(time.monotonic() - cases_started, 1),
            "mutations": dict(mutations.most_common()),
            "outcomes": dict(sorted(stats.items())),
            "notes": dict(notes),
            "slowest_cases": [{"seconds": round(s, 2), "seed": seed} for s, seed in slowest],
            "violations": signatures,
            "unreported_violations": len(unknown),
            "harness_errors": dict(harness),
        }
    )
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = out_dir / f"fuzz-{stamp}-seed{args.seed}.json"
    target.write_text(json.dumps(summary, indent=2, default=str))
    print(f"\n{done} cases in {elapsed:.0f} s (seed {args.seed}); mutations: {dict(mutations.most_common())}")
    print(f"outcomes: {dict(sorted(stats.items()))}")
    if not signatures:
        print("every invariant held on every case")
    for signature, entry in signatures.items():
        label = f"known: {entry['known']}" if entry.get("known") else "NEW"
        print(f"[{label}] {signature} x{entry['count']}")
        for example in entry["examples"][:2]:
            print(f"    seed {example['seed']}: {example['detail'][:300]}")
            print(f"      {example['case'][:300]}")
    for error, failed in harness.items():
        print(f"[harness] {error} (seeds {failed[:5]})")
    print(f"summary written to {target}")
    return 1 if unknown or harness else 0


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run."""
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.runner", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000, help="number of cases (default 1000)")
    parser.add_argument("--seed", type=int, default=1, help="run seed: case i uses seed*1_000_000+i (default 1)")
    parser.add_argument("--case-seed", type=int, default=None, help="run exactly this one case seed (a reproducer)")
    parser.add_argument("--huge-mb", type=float, default=100.0, help="size of huge single lines in MiB (default 100)")
    parser.add_argument("--huge-share", type=float, default=LONG.huge_share, help="share of cases with a huge line")
    parser.add_argument("--live-share", type=float, default=LONG.live_share, help="share of cases with a live writer")
    parser.add_argument("--fast", action="store_true", help="the fast tier's draws (2 MiB lines; its seeds)")
    parser.add_argument("--time-budget", type=float, default=0.0, help="stop starting cases after this many seconds")
    parser.add_argument("--report-every", type=int, default=1, help="render the HTML report every k-th case")
    parser.add_argument("--no-parity", action="store_true", help="skip the jobs=1 vs jobs=2 comparison")
    parser.add_argument("--no-memory-probe", dest="memory_probe", action="store_false", help="skip the RSS probe")
    parser.add_argument("--print-every", type=int, default=100)
    parser.add_argument("--out", default=str(REPO / "tests" / "artifacts"), help="where the JSON summary goes")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.fast:
        args.huge_mb, args.huge_share, args.live_share = 2.0, FAST.huge_share, FAST.live_share
    if args.case_seed is not None:
        args.memory_probe = False
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
