"""Synthesize realistic session corpora in the real on-disk format.

Benchmarks and scale tests need large corpora that look like archived dsh
runs: several project directories, root sessions, subagents (one-shot and
continuable, spawned fresh or forked with a replayed seed), ordinary forks,
wide fan-out under a few parents, trees up to five levels deep, mostly small
logs with a long tail of multi-thousand-event ones, streamed chunk runs
stored as packed rows, tool results of 1–50 KB, and a few percent of logs
damaged in the ways archives get damaged.

Everything is a pure function of ``(sessions, seed)``: the corpus plan is
drawn serially from one generator, and each session's events from its own
generator, so a process pool writes byte-identical corpora for a seed.
The logs are written with ``subagent_catalog.synth.writer`` (header shapes,
canonical paths, refusing to overwrite); this module adds the richer event
shapes and packs reasoning and tool-call chunk runs as well as text runs.

Run ``python -m subagent_catalog.synth OUT --sessions N --seed S`` (``--profile small``:
the same plan, a header and one short turn per session, for listing at scale).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.forking import process_pool
from subagent_catalog.read.paths import Compression
from subagent_catalog.synth.events import WORKER, encode_session, session_events, worker_plans
from subagent_catalog.synth.plan import DamagedSession, SessionPlan, plan_corpus
from subagent_catalog.synth.small import small_session_events
from subagent_catalog.synth.writer import header, log_path, write_file

Profile = Literal["full", "small"]
"""``full``: realistic transcripts (sizes, chunk runs, tool output); ``small``: a handful of events per session."""


@dataclass
class SynthStats:
    """What ``generate`` wrote.

    ``damaged`` lists the deliberately damaged sessions (paths relative to
    the root); ``max_depth`` counts edges from a root session (children are
    1); ``max_fanout`` is the largest number of direct children of one session.
    """

    root: str
    compression: Compression
    seed: int
    sessions: int
    roots: int
    subagents: int
    forks: int
    seeded: int
    projects: int
    max_depth: int
    max_fanout: int
    events: int
    bytes: int
    largest_events: int
    seconds: float
    damaged: list[DamagedSession] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The stats as plain JSON values.

        Examples:
            >>> SynthStats("r", "none", 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0).to_json()["damaged"]
            []
        """
        return asdict(self)


# --- writing ----------------------------------------------------------------------------------


def _init_worker(
    plans: Sequence[SessionPlan], root: str, compression: Compression, seed: int, profile: Profile = "full"
) -> None:
    WORKER.clear()
    WORKER.update(plans=plans, root=root, compression=compression, seed=seed, profile=profile)
    session_events.cache_clear()
    small_session_events.cache_clear()


def _write_one(index: int) -> tuple[int, str, int, int]:
    plan = worker_plans()[index]
    root: str = WORKER["root"]
    compression: Compression = WORKER["compression"]
    slot = f"compressor-{threading.get_ident()}"  # a compressor's native context is not thread-safe
    compressor = WORKER.get(slot)
    if compressor is None and compression == "zstd":
        import zstandard

        compressor = WORKER[slot] = zstandard.ZstdCompressor(level=3, write_checksum=True)
    events, seed_length = (small_session_events if WORKER.get("profile") == "small" else session_events)(index)
    head = header(
        plan.id,
        created_at=plan.created_at,
        cwd=plan.cwd,
        parent=worker_plans()[plan.parent].id if plan.parent is not None else None,
        seed_length=seed_length,
        subagent=plan.kind == "subagent",
        delegation_depth=plan.delegation_depth,
    )
    rng = random.Random(f"subagent_catalog.synth:damage:{WORKER['seed']}:{index}")
    data = encode_session(head, events, seed_length, compression, damage=plan.damage, rng=rng, compressor=compressor)
    path = write_file(log_path(root, head, compression), data)
    count = 0 if plan.damage in ("header-only", "empty-file") else len(events)
    return index, os.path.relpath(path, root), len(data), count


def _write_range(indices: range) -> list[tuple[int, str, int, int]]:
    return [_write_one(i) for i in indices]


def generate(
    out: str | os.PathLike[str],
    *,
    sessions: int,
    seed: int,
    compression: Compression = "zstd",
    damaged_fraction: float = 0.03,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    profile: Profile = "full",
) -> SynthStats:
    """Write a synthetic corpus of ``sessions`` logs under a new directory ``out``.

    Args:
        out: a directory that does not exist yet, or is empty.
        sessions: how many session logs to write.
        seed: the corpus is a pure function of ``(sessions, seed, damaged_fraction)``.
        compression: ``zstd`` (``session.jsonl.zstd``) or ``none``.
        damaged_fraction: share of sessions damaged on purpose (see
            ``DAMAGE_KINDS``); ``SynthStats.damaged`` lists them.
        jobs: worker processes (default: all cores; small corpora are written serially).
        progress: called with (sessions written, sessions in all).
        profile: ``full`` (realistic transcripts) or ``small`` (the same plan,
            each session a header and one short turn: for listing at scale,
            500,000 sessions in minutes). ``full`` output is unchanged by it.

    Returns:
        What was written.

    Raises:
        SubagentCatalogError: ``out`` exists and is not an empty directory.

    Examples:
        >>> import tempfile, os
        >>> out = os.path.join(tempfile.mkdtemp(), "corpus")
        >>> stats = generate(out, sessions=12, seed=1, compression="none", jobs=1)
        >>> stats.sessions, stats.roots + stats.subagents + stats.forks
        (12, 12)
        >>> small = generate(out + "-small", sessions=12, seed=1, compression="none", jobs=1, profile="small")
        >>> small.roots == stats.roots, small.bytes < stats.bytes
        (True, True)
    """
    started = time.perf_counter()
    root = os.fspath(out)
    if os.path.lexists(root) and (not os.path.isdir(root) or os.listdir(root)):
        raise SubagentCatalogError(
            f"refusing to write a corpus into {root!r}: it exists and is not an empty directory",
            hint="pass a new directory (the synthesizer never overwrites)",
        )
    os.makedirs(root, exist_ok=True)
    plans = plan_corpus(sessions, seed, damaged_fraction=damaged_fraction)
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    results: list[tuple[int, str, int, int]] = []
    report = progress or (lambda done, total: None)
    if workers <= 1 or sessions < 200:
        _init_worker(plans, root, compression, seed, profile)
        try:
            for index in range(sessions):
                results.append(_write_one(index))
                report(len(results), sessions)
        finally:
            WORKER.clear()
            session_events.cache_clear()
            small_session_events.cache_clear()
    else:
        with process_pool(
            workers, initializer=_init_worker, initargs=(plans, root, compression, seed, profile)
        ) as pool:
            size = 32 if profile == "full" else 512
            chunks = (range(low, min(sessions, low + size)) for low in range(0, sessions, size))
            for batch in pool.map(_write_range, chunks):
                results.extend(batch)
                report(len(results), sessions)
    return _stats(root, compression, seed, plans, results, time.perf_counter() - started)


def _stats(
    root: str,
    compression: Compression,
    seed: int,
    plans: list[SessionPlan],
    results: list[tuple[int, str, int, int]],
    seconds: float,
) -> SynthStats:
    fanout = Counter(plan.parent for plan in plans if plan.parent is not None)
    paths = {index: path for index, path, _, _ in results}
    damaged = [
        DamagedSession(plan.id, paths[plan.index], plan.damage, _damage_detail(plan))
        for plan in plans
        if plan.damage is not None
    ]
    return SynthStats(
        root=root,
        compression=compression,
        seed=seed,
        sessions=len(plans),
        roots=sum(1 for p in plans if p.kind == "root"),
        subagents=sum(1 for p in plans if p.kind == "subagent"),
        forks=sum(1 for p in plans if p.kind == "fork"),
        seeded=sum(1 for p in plans if p.seeded),
        projects=len({p.cwd for p in plans}),
        max_depth=max(p.depth for p in plans),
        max_fanout=max(fanout.values(), default=0),
        events=sum(r[3] for r in results),
        bytes=sum(r[2] for r in results),
        largest_events=max((r[3] for r in results), default=0),
        seconds=round(seconds, 3),
        damaged=damaged,
    )


def _damage_detail(plan: SessionPlan) -> str:
    if plan.damage == "malformed-descriptor":
        return (
            "version as a string",
            "continuable without label",
            "unknown key",
            "empty toolFilter",
            "one-shot with a continuable-only key",
            "null payload",
        )[plan.damage_variant % 6]
    if plan.damage == "unknown-descriptor-version":
        return f"version {(3, 1, 3)[plan.damage_variant % 3]}"
    return {
        "torn-tail": "final record cut (plain) or final frame cut (zstd)",
        "garbage-line": "unparsable line just before the last turn/end",
        "seq-gap": "one record missing just before the last turn/end",
        "unknown-event-type": "x-vendor/trace event without ignorable",
        "no-descriptor": "subagent log without its own descriptor",
        "header-only": "header line only",
        "empty-file": "zero bytes",
    }.get(plan.damage or "", "")


def main(argv: Sequence[str] | None = None) -> int:
    """The ``python -m subagent_catalog.synth`` command; prints the stats as JSON.

    Examples:
        >>> import tempfile, os, contextlib, io
        >>> out = os.path.join(tempfile.mkdtemp(), "c")
        >>> with contextlib.redirect_stdout(io.StringIO()):
        ...     code = main([out, "--sessions", "3", "--seed", "2", "--compression", "none"])
        >>> code, main([out, "--sessions", "3", "--seed", "2"])  # never overwrites
        (0, 2)
    """
    parser = argparse.ArgumentParser(
        prog="python -m subagent_catalog.synth", description="Write a synthetic dsh session corpus."
    )
    parser.add_argument("out", help="a new (or empty) directory to write the corpus into")
    parser.add_argument("--sessions", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--compression", choices=["zstd", "none"], default="zstd")
    parser.add_argument("--damaged-fraction", type=float, default=0.03)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument(
        "--profile", choices=["full", "small"], default="full", help="small: a handful of events per session"
    )
    parser.add_argument("--manifest", help="also write the stats (damaged sessions included) to this JSON file")
    args = parser.parse_args(argv)
    if args.manifest and os.path.realpath(args.manifest).startswith(os.path.realpath(args.out) + os.sep):
        parser.error("--manifest must not be inside the corpus")
    try:
        stats = generate(**{name: value for name, value in vars(args).items() if name != "manifest"})
    except SubagentCatalogError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    summary = stats.to_json()
    if args.manifest:
        with open(args.manifest, "x", encoding="utf-8") as handle:
            json.dump(summary, handle, ensure_ascii=False, indent=1)
    summary["damaged"] = len(stats.damaged)
    print(json.dumps(summary, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
