"""Prototype: fast paths for the per-line reader, checked for identical facts.

Each fast path handles only the common, healthy case and hands everything
else to the library's exact code, so verdicts cannot change. The script
derives every file's facts with the library as is, then with the fast paths
patched in, asserts the two are equal for every file (synthetic corpus plus
every conformance corpus), and prints the CPU time of each variant.

    .venv/bin/python benchmarks/proto_fastpath.py ROOT [ROOT ...] [--conformance DIR]

Fast paths (each can be toggled with --only NAME):
  numbers   type(x) is int shortcuts in is_number / is_safe_integer / js_strict_equal
  bytes     parse_json on bytes: orjson.loads(raw) first, decode-with-replacement only on failure
  consume   LineScanner._consume: a plain event record with the expected seq is appended directly
  validate  validate_cold_read: migrations and shape checks only for the event types they apply to;
            one combined envelope + seq + surface check for plain non-surface events
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

import subagent_catalog.chunk_rows as chunk_rows
import subagent_catalog.inspect_rules as ir
import subagent_catalog.jsvalue as jsvalue
import subagent_catalog.logread as logread
import subagent_catalog.projection as projection
import subagent_catalog.scanner as scanner
from subagent_catalog.paths import MISSING

MAX = jsvalue.MAX_SAFE_INTEGER
ORIGINAL: dict[str, Any] = {}


def _save(module: Any, name: str) -> Any:
    key = f"{module.__name__}.{name}"
    ORIGINAL.setdefault(key, getattr(module, name))
    return ORIGINAL[key]


def _patch(module: Any, name: str, value: Any) -> None:
    _save(module, name)
    setattr(module, name, value)


def restore() -> None:
    for key, value in ORIGINAL.items():
        if key == "consume":
            scanner.LineScanner._consume = value  # type: ignore[method-assign]
            continue
        module_name, name = key.rsplit(".", 1)
        setattr(sys.modules[module_name], name, value)


# --- numbers ------------------------------------------------------------------------------------


def patch_numbers() -> None:
    slow_is_number = _save(jsvalue, "is_number")
    slow_safe = _save(jsvalue, "is_safe_integer")
    slow_equal = _save(jsvalue, "js_strict_equal")

    def is_number(value: object) -> bool:
        kind = type(value)
        if kind is int or kind is float:
            return True
        return bool(slow_is_number(value))

    def is_safe_integer(value: object) -> bool:
        if type(value) is int:
            return -MAX <= value <= MAX  # type: ignore[operator]
        return bool(slow_safe(value))

    def js_strict_equal(a: object, b: object) -> bool:
        if type(a) is int and type(b) is int and -MAX <= b <= MAX:  # type: ignore[operator]
            return a == b
        return bool(slow_equal(a, b))

    for module in (jsvalue, scanner, ir, chunk_rows, logread, projection):
        for name, fast in (
            ("is_number", is_number),
            ("is_safe_integer", is_safe_integer),
            ("js_strict_equal", js_strict_equal),
        ):
            if hasattr(module, name):
                _patch(module, name, fast)


# --- bytes --------------------------------------------------------------------------------------


def patch_bytes() -> None:
    slow = _save(jsvalue, "parse_json")

    def parse_json(raw: bytes | str, *, keep_negative_zero: bool = False) -> Any:
        if not keep_negative_zero and type(raw) is bytes:
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError:
                pass
        return slow(raw, keep_negative_zero=keep_negative_zero)

    for module in (jsvalue, scanner):
        _patch(module, "parse_json", parse_json)


# --- consume ------------------------------------------------------------------------------------


def patch_consume() -> None:
    slow = ORIGINAL.setdefault("consume", scanner.LineScanner._consume)
    rows = chunk_rows.CHUNK_ROW_TYPES
    loads = orjson.loads
    error = orjson.JSONDecodeError

    def _consume(self: scanner.LineScanner, line: bytes, end_byte: int) -> None:
        if self.issue is None:
            try:
                value = loads(line)
            except error:
                value = None
            if type(value) is dict:
                kind = value.get("type")
                seq = value.get("seq")
                if type(seq) is int and seq == len(self.events) and not (type(kind) is str and kind in rows):
                    self.line += 1
                    self.events.append(value)
                    self.event_lines.append(self.line)
                    self.committed_bytes = end_byte
                    return
        slow(self, line, end_byte)

    scanner.LineScanner._consume = _consume  # type: ignore[method-assign]


# --- validate -----------------------------------------------------------------------------------

_MIGRATING = frozenset(
    {"turn/start", "turn/end", "steering/message", "user/message", "assistant/message", "tool/result"}
)
_ENVELOPE_SPECIAL = frozenset({"request/header", "request/header-delta"}) | ir.SURFACE_TYPES


def fast_validate_cold_read(
    meta: dict[str, Any], events: list[dict[str, Any]], session_id: str
) -> list[dict[str, Any]]:
    """``validate_cold_read`` with per-type dispatch (same phases, same failure order)."""
    ir._assert_supported(events)
    message_ids: dict[int, Any] = {}
    migrated: list[dict[str, Any]] = []
    append = migrated.append
    for event in events:
        kind = event.get("type")
        if type(kind) is str and kind not in _MIGRATING:
            data = event.get("data", MISSING)
            if type(data) is dict and "message" in data:
                message_id = ir._message_id(event)
                if message_id is not None:
                    message_ids[int(event["seq"])] = message_id
            append(event)
            continue
        out = ir._migrate_turn_start(event)
        out = ir._migrate_turn_end(out)
        out = ir._migrate_steering(out, session_id)
        out = ir._migrate_message(out, session_id, message_ids)
        ir.assert_message_shape(out)
        message_id = ir._message_id(out)
        if message_id is not None:
            message_ids[int(out["seq"])] = message_id
        append(out)
    known = ir.KNOWN_EVENT_TYPES
    for event in migrated:
        kind = event.get("type")
        if not (isinstance(kind, str) and kind in known) and event.get("ignorable") is not True:
            raise ir.InspectFailure(
                "unknown-event-type",
                f"event type {kind!r} at seq {event['seq']} is unknown to upstream and not ignorable",
                event["seq"],
            )
    closers = ir.interrupted_turn_closers(migrated)
    for closer in closers:
        ir.assert_message_shape(closer)
    balanced = migrated + closers
    ir._assert_header(meta)
    surface = ir._Surface(balanced)
    envelope_keys = ir.ENVELOPE_KEYS
    for index, event in enumerate(balanced):
        seq = event.get("seq")
        stamp = event.get("time")
        kind = event.get("type")
        if (
            type(seq) is int
            and seq == index
            and type(stamp) is int
            and -MAX <= stamp <= MAX
            and type(kind) is str
            and kind not in _ENVELOPE_SPECIAL
            and "data" in event
            and event.get("ignorable", True) is True
            and "surfaceOp" not in event
            and "sourceEventSeqs" not in event
            and envelope_keys.issuperset(event)
        ):
            continue
        ir._assert_envelope(event, index)
        if not jsvalue.js_strict_equal(event["seq"], index):
            raise ir.InspectFailure("envelope", f"seed must be contiguous from 0 (index {index})", index)
        surface.validate(event)
    return balanced


def patch_validate() -> None:
    _patch(logread, "validate_cold_read", fast_validate_cold_read)


PATCHES: dict[str, Callable[[], None]] = {
    "numbers": patch_numbers,
    "bytes": patch_bytes,
    "consume": patch_consume,
    "validate": patch_validate,
}


# --- driver -------------------------------------------------------------------------------------


def _files(root: str) -> list[tuple[str, str]]:
    out = []
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            if name == "session.jsonl":
                out.append((os.path.join(dirpath, name), "none"))
            elif name == "session.jsonl.zstd":
                out.append((os.path.join(dirpath, name), "zstd"))
    return sorted(out)


def _facts(blobs: list[tuple[bytes, str]]) -> tuple[list[Any], float]:
    started = time.process_time()
    facts = [logread.analyse_log(data, compression) for data, compression in blobs]  # type: ignore[arg-type]
    return facts, time.process_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roots", nargs="+")
    parser.add_argument(
        "--conformance", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "conformance")
    )
    parser.add_argument("--only", default=",".join(PATCHES))
    args = parser.parse_args()
    chosen = [name for name in args.only.split(",") if name]
    for root in args.roots:
        blobs = []
        for path, compression in _files(root):
            with open(path, "rb") as handle:
                blobs.append((handle.read(), compression))
        restore()
        baseline, slow_s = _facts(blobs)
        rows = [("library as is", slow_s)]
        for i in range(len(chosen)):
            restore()
            for name in chosen[: i + 1]:
                PATCHES[name]()
            fast, fast_s = _facts(blobs)
            mismatches = sum(1 for a, b in zip(baseline, fast, strict=True) if a != b)
            if mismatches:
                print(f"{root}: {mismatches} files differ with {chosen[: i + 1]}", file=sys.stderr)
                return 1
            rows.append(("+ " + chosen[i], fast_s))
        restore()
        events = sum(f.event_count for f in baseline)
        print(f"# {root}: {len(blobs)} files, {events:,} events, CPU seconds (jobs=1, bytes preloaded)")
        for name, seconds in rows:
            print(f"  {name:16} {seconds:7.2f} s  {slow_s / seconds:4.2f}x")
    conformance = os.path.abspath(args.conformance)
    checked = 0
    if os.path.isdir(conformance):
        blobs = []
        for dirpath, _dirs, _names in os.walk(conformance):
            if os.path.basename(dirpath) == "corpus":
                for path, compression in _files(dirpath):
                    with open(path, "rb") as handle:
                        blobs.append((handle.read(), compression))
        restore()
        baseline, _ = _facts(blobs)
        for name in chosen:
            PATCHES[name]()
        fast, _ = _facts(blobs)
        restore()
        bad = [i for i, (a, b) in enumerate(zip(baseline, fast, strict=True)) if a != b]
        if bad:
            print(f"conformance: {len(bad)} files differ", file=sys.stderr)
            return 1
        checked = len(blobs)
    print(f"identical facts with all fast paths on every file, and on {checked} conformance logs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
