"""Differential test of the reader's fast path: the same facts as the full path, field for field.

Every log is read twice, by ``analyse_log`` with the fast path switched off
(the reference) and by ``analyse_log_fast`` (``None`` when the log needs the
full path); where the fast path answers, its ``LogFacts`` (run facts,
descriptors, identity, problems and, for a share of the logs, the events
rows) must equal the reference's. Logs: every conformance corpus, the
synthesizer's corpora in both encodings, the fuzz tier's mutated corpora,
and packed chunk rows and envelopes nudged one field at a time. A larger
run: ``python -m tests.test_fastpath [--sessions N] [--fuzz-cases N]``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from subagent_catalog.read import fastpath, typed_read
from subagent_catalog.read.logread import LogFacts, analyse_log, analyse_log_fast, read_log_file
from subagent_catalog.read.paths import Compression
from subagent_catalog.synth.generate import generate
from tests.fuzz.mutations import CONFORMANCE, FAST, LOG_NAMES, logs, make_case
from tests.helpers import header, raw_log

TRACE_CASES = CONFORMANCE.parent / "trace-cases"
EVENTS_EVERY = 8  # events rows are compared on every 8th log here (they cost a JSON text per event)


def _compression(path: Path | str) -> Compression:
    return "zstd" if str(path).endswith(".zstd") else "none"


def _same(fast: LogFacts | None, reference: LogFacts, path: str) -> None:
    if fast is not None and fast != reference:
        fields = [name for name in reference.__dataclass_fields__ if getattr(fast, name) != getattr(reference, name)]
        got = [(getattr(fast, n), getattr(reference, n)) for n in fields]
        raise AssertionError(f"the {path} fast path differs in {fields} (fast, full): {got!r:.2000}")


def compare(data: bytes, compression: Compression, *, events: bool = False) -> bool:
    """Assert the fast paths' facts equal the full path's; whether the typed path answered.

    The typed path (facts only) is compared on every log, the packed path with
    events rows when ``events``. Where the full path raises, a fast path must
    raise the same exception or leave the log to it.
    """
    saved = fastpath.ENABLED
    fastpath.ENABLED = False
    try:
        reference = analyse_log(data, compression)
        with_events = analyse_log(data, compression, want_events=True) if events else None
    except Exception as error:
        with pytest.raises(type(error)):
            analyse_log(data, compression, want_events=events)  # the fast path is back on here
        try:
            return analyse_log_fast(data, compression, path="typed") is not None
        except type(error):
            return True
    finally:
        fastpath.ENABLED = saved
    typed = analyse_log_fast(data, compression, path="typed")
    _same(typed, reference, "typed")
    if with_events is not None:
        _same(analyse_log_fast(data, compression, want_events=True, path="packed"), with_events, "packed")
    return typed is not None


def compare_files(paths: list[Path]) -> tuple[int, int]:
    """Compare every readable regular file; (files, fast)."""
    files = fast = 0
    for index, path in enumerate(paths):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        files += 1
        fast += compare(data, _compression(path), events=index % EVENTS_EVERY == 0)
    return files, fast


def _logs_under(root: Path) -> list[Path]:
    found = []
    for directory, _, names in os.walk(root):
        for name in sorted(names):
            path = Path(directory, name)
            if name in LOG_NAMES and path.is_file() and not path.is_symlink():
                found.append(path)
    return sorted(found)


@pytest.mark.skipif(not CONFORMANCE.is_dir(), reason="no shared conformance corpora")
@pytest.mark.parametrize("part", range(2))
def test_conformance_logs_have_the_same_facts_on_both_paths(part: int) -> None:
    files, fast = compare_files((_logs_under(CONFORMANCE) + _logs_under(TRACE_CASES))[part::2])
    assert files > 1000
    assert fast > 0.8 * files  # the fast path covers the healthy logs (about 90 % of these)


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_synthetic_corpora_have_the_same_facts_on_both_paths(tmp_path: Path, compression: Compression) -> None:
    generate(tmp_path / "c", sessions=80, seed=17, compression=compression, damaged_fraction=0.25, jobs=1)
    files, fast = compare_files(_logs_under(tmp_path / "c"))
    assert files == 80
    assert 0.5 * files < fast < files  # damaged logs take the full path


@pytest.mark.parametrize("chunk", range(4))
def test_fuzz_mutations_have_the_same_facts_on_both_paths(chunk: int) -> None:
    for seed in range(chunk * 15, (chunk + 1) * 15):
        case = make_case(seed, FAST)
        try:
            compare_files(logs(case))
        finally:
            case.cleanup()


HEAD = header("S", created_at=5)
ROW = {
    "type": "text-chunks",
    "seq0": 1,
    "time0": 20,
    "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 2], "texts": ["a", "b", "c"]},
}
TOOL_ROW = {
    "type": "tool-call-chunks",
    "seq0": 4,
    "time0": 30,
    "data": {"turn": 1, "step": 1, "index": 1, "id": "t1", "name": "read", "dt": [0], "args": ['{"a"', ":1}"]},
}


def _events() -> list[dict[str, Any]]:
    return [
        {"type": "turn/start", "seq": 0, "time": 10, "data": {"turn": 1}},
        ROW,
        TOOL_ROW,
        {
            "type": "subagent/descriptor",
            "seq": 6,
            "time": 40,
            "data": {"version": 2, "mode": "one-shot", "provider": "p"},
        },
        {"type": "turn/end", "seq": 7, "time": 50, "data": {"turn": 1, "reason": {"kind": "completed"}}},
    ]


def _nudges() -> Iterator[tuple[str, Any]]:
    """(path, value) pairs: one field of one record set to an odd value (``...`` deletes it)."""
    odd = [1.0, -1, 2**53, "1", None, True, [], {}, ...]
    for key in ("seq0", "time0", "data", "type", "extra"):
        for value in odd:
            yield f"1.{key}", value
    for key in ("turn", "step", "index", "dt", "texts", "extra"):
        for value in [*odd, [1], [1.0, 2], [2**53, 1], ["a"], ["a", 1, "c"], [-(2**53), 0]]:
            yield f"1.data.{key}", value
    for key in ("id", "name", "args", "dt"):
        for value in [*odd, ["x"], []]:
            yield f"2.data.{key}", value
    for key in ("seq", "time", "data", "ignorable", "surfaceOp", "extra"):
        for value in odd:
            yield f"3.{key}", value
            yield f"0.{key}", value
    yield "4.data.reason", {"kind": "error", "step": 1, "message": "m"}


def _nudged(path: str, value: Any) -> list[dict[str, Any]]:
    events = orjson.loads(orjson.dumps(_events()))
    *keys, last = path.split(".")
    target: Any = events
    for key in keys:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is ...:
        target.pop(last, None)
    else:
        target[last] = value
    return events


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_rows_and_envelopes_nudged_one_field_have_the_same_facts(compression: Compression) -> None:
    assert compare(raw_log(HEAD, [orjson.dumps(e) + b"\n" for e in _events()], compression), compression)
    answered = 0
    for path, value in _nudges():
        for seed in (0, 1):
            events = _nudged(path, value)
            lines = [orjson.dumps(e) + b"\n" for e in events]
            if seed:  # a seed: the first events are the parent's; the open turn gets closers
                lines = lines[:-1]
            head = {**HEAD, "seedLength": 3} if seed else HEAD
            frames = [[i] for i in range(len(lines))] if seed else None
            answered += compare(raw_log(head, lines, compression, frames=frames), compression, events=True)
    assert answered > 0


def test_the_switch_forces_the_full_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(raw_log(HEAD, [orjson.dumps(e) + b"\n" for e in _events()], "none"))
    calls: list[str] = []
    typed, packed = typed_read.typed_facts, fastpath.packed_facts
    monkeypatch.setattr(typed_read, "typed_facts", lambda *a: calls.append("typed") or typed(*a))
    monkeypatch.setattr(fastpath, "packed_facts", lambda *a: calls.append("packed") or packed(*a))
    first = read_log_file(str(path), "none")
    assert calls == ["typed"]
    assert read_log_file(str(path), "none", want_events=True).events and calls == ["typed", "packed"]
    monkeypatch.setenv(fastpath.EXACT_ENV, "1")
    assert not fastpath.enabled()
    assert read_log_file(str(path), "none") == first and len(calls) == 2
    monkeypatch.delenv(fastpath.EXACT_ENV)
    monkeypatch.setattr(fastpath, "ENABLED", False)
    assert read_log_file(str(path), "none") == first and len(calls) == 2


def main(argv: list[str] | None = None) -> int:
    """The larger run: a bigger synthetic corpus per encoding and more fuzz cases."""
    import tempfile

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--fuzz-cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        for compression in ("zstd", "none"):
            root = Path(scratch, compression)
            generate(root, sessions=args.sessions, seed=args.seed, compression=compression, jobs=1)  # type: ignore[arg-type]
            files, fast = compare_files(_logs_under(root))
            print(f"synthetic {compression}: {files} logs, {fast} on the fast path, all facts identical")
    total = fast_total = 0
    for seed in range(args.fuzz_cases):
        case = make_case(seed + random.Random(args.seed).randrange(10**6), FAST)
        try:
            files, fast = compare_files(logs(case))
        finally:
            case.cleanup()
        total, fast_total = total + files, fast_total + fast
    print(f"fuzz: {args.fuzz_cases} cases, {total} logs, {fast_total} on the fast path, all facts identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
