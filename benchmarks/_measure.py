"""One benchmark measurement, run in a fresh process by benchmarks/run.py.

Prints one JSON object: wall times of the phases, this process's peak RSS
and the largest peak RSS among its (reaped) worker processes.

    _measure.py read ROOT --compression zstd [--events] [--catalog] [--cache none|library] [--fast-path packed]
    _measure.py floor-parse ROOT --compression zstd [--jobs 2]   (read + decompress + orjson per line)
    _measure.py floor-read ROOT --compression zstd [--jobs 2]    (read + decompress only)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def _vmhwm_kb() -> int | None:
    """This process's own peak RSS (``VmHWM``; ``ru_maxrss`` can carry the parent's peak over ``exec``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _peaks() -> dict[str, int | None]:
    return {
        "vmhwm_main_kb": _vmhwm_kb(),
        "rss_main_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "rss_workers_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    }


def _read(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    from subagent_catalog.catalog.tables import catalog
    from subagent_catalog.corpus import read_corpus

    imported = time.perf_counter()
    result: dict[str, Any] = {"import_s": imported - started}
    if args.fast_path == "packed":  # facts by the orjson fast path, as before the typed one (workers fork)
        from subagent_catalog.read import typed_read

        typed_read.suits = lambda body: False  # type: ignore[assignment]
    kwargs: dict[str, Any] = {"compression": args.compression, "events": args.events, "jobs": args.jobs}
    corpus = read_corpus(args.root, cache=args.cache == "library", **kwargs)
    read_done = time.perf_counter()
    result["read_s"] = read_done - imported
    result["sessions"] = corpus.sessions.height
    result["vmhwm_read_kb"] = _vmhwm_kb()
    result["frames_mb"] = round(
        sum(getattr(corpus, name).estimated_size() for name in ("sessions", "descriptors", "problems")) / 2**20, 1
    )
    if args.events:
        result["events"] = corpus.events.height
        result["events_frame_mb"] = round(corpus.events.estimated_size() / 2**20, 1)
    if args.catalog:
        rows = catalog(corpus)
        result["catalog_s"] = time.perf_counter() - read_done
        result["catalog_rows"] = rows.height
        result["catalog_mb"] = round(rows.estimated_size() / 2**20, 2)
    result["total_s"] = time.perf_counter() - started
    result.update(_peaks())
    return result


_DCTX: Any = None


def _plain(data: bytes, compression: str) -> bytes:
    """The plaintext of a log: every complete frame decoded (a torn last frame dropped)."""
    global _DCTX
    if compression != "zstd":
        return data
    import zstandard

    if _DCTX is None:
        _DCTX = zstandard.ZstdDecompressor()
    plain = []
    rest = data
    while rest:
        decoder = _DCTX.decompressobj()
        try:
            plain.append(decoder.decompress(rest))
        except zstandard.ZstdError:
            break
        rest = decoder.unused_data
    return b"".join(plain)


def _parse_file(job: tuple[str, str, bool]) -> tuple[int, int]:
    """Read (and decompress) a log; with ``parse``, orjson-parse every complete line (no rules)."""
    import orjson

    path, compression, parse = job
    with open(path, "rb") as handle:
        data = _plain(handle.read(), compression)
    if not parse:
        return data.count(b"\n"), len(data)
    lines = 0
    for line in data.split(b"\n")[:-1]:
        with contextlib.suppress(orjson.JSONDecodeError):
            orjson.loads(line)
        lines += 1
    return lines, len(data)


def _files(root: str, compression: str) -> list[str]:
    name = "session.jsonl.zstd" if compression == "zstd" else "session.jsonl"
    out = []
    for dirpath, _dirs, files in os.walk(root):
        if name in files:
            out.append(os.path.join(dirpath, name))
    return sorted(out)


def _floor_parse(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    parse = args.mode == "floor-parse"
    jobs = [(path, args.compression, parse) for path in _files(args.root, args.compression)]
    lines = plain = 0
    with ProcessPoolExecutor(max_workers=args.jobs or os.cpu_count() or 1) as pool:
        for count, size in pool.map(_parse_file, jobs, chunksize=64):
            lines += count
            plain += size
    result: dict[str, Any] = {"total_s": time.perf_counter() - started, "lines": lines, "plain_bytes": plain}
    result.update(_peaks())
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["read", "floor-parse", "floor-read"])
    parser.add_argument("root")
    parser.add_argument("--compression", choices=["zstd", "none"], required=True)
    parser.add_argument("--events", action="store_true")
    parser.add_argument("--catalog", action="store_true")
    parser.add_argument("--cache", choices=["none", "library"], default="none")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--fast-path", choices=["auto", "packed"], default="auto")
    args = parser.parse_args()
    result = _read(args) if args.mode == "read" else _floor_parse(args)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
