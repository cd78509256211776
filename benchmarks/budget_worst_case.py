"""The memory of logs just under the parse budgets (by hand; the figures in read.limits and docs/reliability.md).

Each shape is read by ``analyse_log`` in a fresh process, which prints its peak RSS above its RSS
before the read (the log's bytes are built first). ``--events`` also builds the events frame rows.

    python benchmarks/budget_worst_case.py [--events] [SHAPE ...]   (default: every shape)
"""

from __future__ import annotations

import subprocess
import sys
import time

from subagent_catalog.read import limits
from subagent_catalog.read.logread import analyse_log
from subagent_catalog.read.zstdframes import compress_frame
from subagent_catalog.synth.writer import dumps, header


def _event(data: bytes, seq: int = 0) -> bytes:
    return b'{"type":"turn/start","seq":%d,"time":1,"data":' % seq + data + b"}\n"


def _row(members: int) -> bytes:
    return (
        b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":['
        + b"1," * (members - 2)
        + b'1],"texts":['
        + b'"a",' * (members - 1)
        + b'"a"]}}\n'
    )


def body(shape: str) -> bytes:
    """The event lines of one shape, as close under both budgets as the shape allows."""
    values, events = limits.MAX_LOG_VALUES - 20, limits.MAX_LOG_EVENTS - 1
    if shape == "empty-objects":  # [{},{},...]: two charged values a dict
        return _event(b"[" + b"{}," * (values // 2 - 1) + b"{}]")
    if shape == "one-key-objects":  # [{"a":0},...]: three a dict
        return _event(b"[" + b'{"a":0},' * (values // 3 - 1) + b'{"a":0}]')
    if shape == "strings":  # ["ab",...]: one a string
        return _event(b"[" + b'"ab",' * (values - 1) + b'"ab"]')
    if shape == "distinct-keys":
        return _event(b"{" + b",".join(b'"k%d":0' % i for i in range(values // 2)) + b"}")
    if shape == "tiny-events":
        return b"".join(b'{"seq":%d}\n' % i for i in range(events))
    if shape == "packed-row":
        return _row(events)
    if shape == "combined":  # a packed row at the events budget, then strings up to the values budget
        row = _row(events)
        rest = values - limits.count_values(row)
        return row + _event(b"[" + b'"ab",' * (rest - 1) + b'"ab"]', seq=events)
    raise SystemExit(f"unknown shape {shape}")


SHAPES = ("empty-objects", "one-key-objects", "strings", "distinct-keys", "tiny-events", "packed-row", "combined")


def _status(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field)) * 1024


def measure(shape: str, events: bool) -> None:
    """Read one shape here and print its verdict, time and peak RSS above the start."""
    lines = body(shape)
    data = compress_frame(dumps(header("w", created_at=1)) + b"\n") + compress_frame(lines)
    plain = len(lines)
    del lines
    start = _status("VmRSS")
    started = time.monotonic()
    facts = analyse_log(data, "zstd", want_events=events)
    print(
        f"{shape:16} {facts.verdict:7} {facts.read_cause or '-':20} events {facts.event_count:>7,} "
        f"plaintext {plain >> 20:>3} MB  {time.monotonic() - started:5.1f} s  "
        f"peak +{(_status('VmHWM') - start) >> 20} MB (bound {limits.read_memory_bound(len(data), plain) >> 20} MB)",
        flush=True,
    )


if __name__ == "__main__":
    args = [arg for arg in sys.argv[1:] if arg != "--events"]
    want = "--events" in sys.argv[1:]
    if len(args) == 1:
        measure(args[0], want)
    else:
        for name in args or SHAPES:
            subprocess.run([sys.executable, __file__, name, *(["--events"] if want else [])], check=True)
