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
import os
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from subagent_catalog.synth.writer import EventLog, descriptor, encode_log, header, log_path, write_file
from tests.fuzz.invariants import check_case, optional_apis, peak_rss
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


def run_cases(args: argparse.Namespace, seeds: list[int]) -> dict[str, Any]:
    """Build, check and clean up each case; the tallies of what happened (JSON-ready).

    A shard (``--tallies FILE``) writes the seed it is about to run to ``FILE.at`` and
    its tallies so far to ``FILE`` after every case, so that when a case kills the
    interpreter outright (a native abort no ``except`` can catch) the parent knows
    the seed and keeps the cases already run.
    """
    config = FuzzConfig(huge_bytes=int(args.huge_mb * MIB) + 17, huge_share=args.huge_share, live_share=args.live_share)
    apis = optional_apis()
    started = time.monotonic()
    signatures: dict[str, dict[str, Any]] = {}
    mutations: Counter[str] = Counter()
    stats: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    harness: defaultdict[str, list[int]] = defaultdict(list)
    done = 0
    slowest: list[tuple[float, int]] = []
    tallies: dict[str, Any] = {}
    for seed in seeds:
        if args.time_budget and time.monotonic() - started > args.time_budget:
            break
        if args.tallies:
            _write_atomic(Path(args.tallies + ".at"), str(seed))
        if seed == args.abort_on_seed:  # lets a test check that the parent survives a dead child
            os.abort()
        try:
            case: Case = make_case(seed, config)
        except Exception as error:  # a bug of the harness, not of the library: count it, go on
            harness[f"{type(error).__name__}: {error}"[:200]].append(seed)
            continue
        try:
            outcome = check_case(
                case,
                report=seed % args.report_every == 0,
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
            entry["known"] = violation.known
            if len(entry["examples"]) < 3:
                entry["examples"].append(
                    {"seed": seed, "case": case.describe()[:600], "detail": violation.detail[:800]}
                )
        if args.verbose or (done % args.print_every == 0):
            elapsed = time.monotonic() - started
            print(
                f"{args.shard or ''} {done} cases, {elapsed:.0f} s, {len(signatures)} violation signatures", flush=True
            )
        tallies = {
            "cases_run": done,
            "case_seconds": round(time.monotonic() - started, 1),
            "mutations": dict(mutations),
            "outcomes": dict(stats),
            "notes": dict(notes),
            "slowest_cases": [{"seconds": round(s, 2), "seed": seed} for s, seed in slowest],
            "violations": signatures,
            "harness_errors": dict(harness),
        }
        if args.tallies:
            _write_atomic(Path(args.tallies), json.dumps(tallies, default=str))
    return tallies or merge_tallies([])


def _write_atomic(path: Path, text: str) -> None:
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(text)
    scratch.replace(path)


def merge_tallies(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Add up the tallies of several shards."""
    merged: dict[str, Any] = {"cases_run": 0, "case_seconds": 0.0, "violations": {}, "harness_errors": {}}
    counters: dict[str, Counter[str]] = {"mutations": Counter(), "outcomes": Counter(), "notes": Counter()}
    slowest: list[dict[str, Any]] = []
    for part in parts:
        merged["cases_run"] += part["cases_run"]
        merged["case_seconds"] = max(merged["case_seconds"], part["case_seconds"])
        for key, counter in counters.items():
            counter.update(part[key])
        slowest += part["slowest_cases"]
        for signature, entry in part["violations"].items():
            into = merged["violations"].setdefault(signature, {**entry, "count": 0, "examples": []})
            into["count"] += entry["count"]
            into["examples"] = (into["examples"] + entry["examples"])[:3]
        for error, seeds in part["harness_errors"].items():
            merged["harness_errors"].setdefault(error, []).extend(seeds)
    merged.update({key: dict(counter.most_common()) for key, counter in counters.items()})
    merged["outcomes"] = dict(sorted(merged["outcomes"].items()))
    merged["slowest_cases"] = sorted(slowest, key=lambda row: -row["seconds"])[:5]
    return merged


def _abort_entry(seed: int, code: int) -> dict[str, Any]:
    """A violation entry for a case that killed its interpreter (no exception: a native abort or a signal)."""
    how = f"signal {-code}" if code < 0 else f"exit status {code}"
    again = f"reproduce: python -m tests.fuzz.runner --case-seed {seed}"
    return {
        "count": 1,
        "invariant": "no-crash",
        "where": "process",
        "known": None,
        "examples": [{"seed": seed, "case": "", "detail": f"the interpreter died ({how}) during this case; {again}"}],
    }


def _run_shards(args: argparse.Namespace, argv: list[str]) -> list[dict[str, Any]]:
    """Run the cases in ``args.workers`` child interpreters (``--shard i/n``), each on every n-th case.

    The parent only supervises. A child that dies mid-case (the case aborted the
    interpreter) is recorded as a ``no-crash`` violation with the case's seed, and
    a new child takes the shard up again after that seed, keeping what was run.
    """
    import subprocess
    import tempfile

    started = time.monotonic()
    parts: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="scfz-shards") as scratch:
        spawned = 0

        def spawn(shard: int, after: int) -> tuple[int, subprocess.Popen[bytes], Path]:
            nonlocal spawned
            spawned += 1
            out = Path(scratch) / f"shard{shard}-{spawned}.json"
            command = [sys.executable, "-m", "tests.fuzz.runner", *argv, "--workers", "1"]
            command += ["--shard", f"{shard}/{args.workers}", "--tallies", str(out), "--no-memory-probe"]
            command += ["--resume-after", str(after)]
            if args.time_budget:
                command += ["--time-budget", str(max(1.0, args.time_budget - (time.monotonic() - started)))]
            return shard, subprocess.Popen(command, cwd=REPO), out

        running = [spawn(shard, -1) for shard in range(args.workers)]
        while running:
            time.sleep(0.2)
            for entry in [entry for entry in running if entry[1].poll() is not None]:
                running.remove(entry)
                shard, child, out = entry
                if out.exists():
                    parts.append(json.loads(out.read_text()))
                if child.returncode in (0, 1):
                    continue
                marker = Path(str(out) + ".at")
                if not marker.exists():
                    raise SystemExit(f"fuzz shard {shard} failed before its first case (exit {child.returncode})")
                seed = int(marker.read_text())
                print(f"fuzz shard {shard}: case seed {seed} killed its interpreter (exit {child.returncode})")
                signature = f"no-crash @ process: the interpreter died ({child.returncode})"
                parts.append({**merge_tallies([]), "violations": {signature: _abort_entry(seed, child.returncode)}})
                running.append(spawn(shard, seed))
    return parts


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Run the cases and print the summary; 1 when an unreported violation was found."""
    started = time.monotonic()
    summary: dict[str, Any] = {
        "seed": args.seed,
        "huge_mb": args.huge_mb,
        "cases_requested": args.cases,
        "workers": args.workers,
    }
    if args.memory_probe:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="scfz-mem", dir="/tmp") as scratch:
            summary["memory_probe"] = memory_probe(int(args.huge_mb * MIB), Path(scratch))
        for row in summary["memory_probe"]:
            print("memory:", json.dumps(row), flush=True)
    seeds = [args.case_seed] if args.case_seed is not None else [case_seed(args.seed, i) for i in range(args.cases)]
    if args.shard:
        index, count = (int(part) for part in args.shard.split("/"))
        seeds = [seed for seed in seeds[index::count] if seed > args.resume_after]
    if not args.shard and args.case_seed is None:  # children run the cases; this process supervises
        tallies = merge_tallies(_run_shards(args, argv))
    else:
        tallies = run_cases(args, seeds)
    if args.tallies:  # a shard reports to the parent run
        Path(args.tallies).write_text(json.dumps(tallies, default=str))
        return 0
    summary.update(tallies)
    summary["seconds"] = round(time.monotonic() - started, 1)
    signatures, harness = tallies["violations"], tallies["harness_errors"]
    unknown = {k: v for k, v in signatures.items() if not v.get("known")}
    summary["unreported_violations"] = len(unknown)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"fuzz-{time.strftime('%Y%m%d-%H%M%S')}-seed{args.seed}.json"
    target.write_text(json.dumps(summary, indent=2, default=str))
    done = tallies["cases_run"]
    print(f"\n{done} cases in {summary['seconds']:.0f} s (seed {args.seed}, {args.workers} workers)")
    print(f"mutations: {tallies['mutations']}")
    print(f"outcomes: {tallies['outcomes']}")
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
    parser.add_argument("--workers", type=int, default=1, help="child interpreters sharing the cases (default 1)")
    parser.add_argument("--shard", default="", help=argparse.SUPPRESS)  # i/n: every n-th case from the i-th
    parser.add_argument("--tallies", default="", help=argparse.SUPPRESS)  # a shard's JSON for the parent
    parser.add_argument("--resume-after", type=int, default=-1, help=argparse.SUPPRESS)  # after a child died
    parser.add_argument("--abort-on-seed", type=int, default=-1, help=argparse.SUPPRESS)  # tests the supervisor
    parser.add_argument("-v", "--verbose", action="store_true")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.fast:
        args.huge_mb, args.huge_share, args.live_share = 2.0, FAST.huge_share, FAST.live_share
    if args.case_seed is not None:
        args.memory_probe = False
    return run(args, argv)


if __name__ == "__main__":
    sys.exit(main())
