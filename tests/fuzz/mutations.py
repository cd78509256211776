"""Seeded mutations of real-format corpora.

A case is a fresh corpus in a scratch directory: a base (a tree written with
``subagent_catalog.synth.writer``, a copy of a shared conformance corpus, or a deep
lineage chain) plus one to a few mutations drawn from :data:`MUTATIONS`:

* bytes: truncation at every byte class (inside the header, inside an event,
  at a newline, inside a zstd frame's magic/header/block header/block
  body/checksum, at a frame boundary), bit flips, spliced garbage;
* text (decoded first for zstd logs, then re-framed): invalid UTF-8, BOMs,
  CRLF and lone CR, NUL bytes and NUL tails, blank lines, huge single lines,
  deep JSON nesting, NaN/Infinity and other odd number literals, duplicate
  keys, reordered/duplicated/deleted/null records, hostile header and event
  fields, lineage cycles;
* zstd frames cut, duplicated, reordered, dropped, unchecksummed, skippable,
  or the other encoding's bytes under a log's name;
* the filesystem: symlink loops, symlinks leading outside the root, to a
  session directory or to another log, dangling links, FIFOs, sockets and
  device nodes named like a log, a directory named ``session.jsonl``,
  ``chmod 000`` entries, empty files and directories, non-UTF-8, newline and
  255-byte names, hard links, legacy flat files;
* a live writer thread appending to a log while it is read (whole or partial
  records).

Everything comes from the case seed: ``make_case(seed, config)`` rebuilds the
same corpus byte for byte, so a seed is a reproducer.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson
import zstandard

from subagent_catalog.read.paths import Compression
from subagent_catalog.read.zstdframes import compress_frame
from subagent_catalog.synth.writer import EventLog, descriptor, encode_log, header, log_path, write_file

REPO = Path(__file__).resolve().parents[2]
CONFORMANCE = Path(
    os.environ.get("SUBAGENT_CATALOG_CONFORMANCE", str(REPO.parent / "shared" / "conformance" / "cases"))
)
LOG_NAMES = ("session.jsonl", "session.jsonl.zstd")
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

# Text that must stay inert wherever it ends up: HTML, CSV, terminals, templates.
HOSTILE_TEXT = [
    "</script><script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "\"'><svg/onload=alert(1)>",
    "<!--",
    "]]>",
    "</style><script>alert(2)</script>",
    "<SCRIPT>alert(3)</SCRIPT>",
    "javascript:alert(4)",
    '=HYPERLINK("http://example.invalid","x")',
    "=1+2",
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A2)",
    "\t=1",
    "\r=1",
    "{{ 7*7 }}",
    "${7*7}",
    "\u2028\u2029\u0085",
    "nul\x00byte",
    "\x1b[31mred\x1b[0m",
    "lone\ud800surrogate",
    "\udc00",
    "\U0001f642 emoji",
    "zoë",
    "",
    " ",
    "x" * 3000,
    "a\nb\r\nc",
    "&amp;&lt;&#x3c;",
]
HOSTILE_IDS = [
    "c",
    "a b",
    "..",
    ".",
    "~0041",
    "<script>alert(1)</script>",
    "=cmd|' /C calc'!A0",
    "+1",
    "-1",
    "@x",
    "zoë",
    "\U0001f642",
    "lone\ud83d",
    "i" * 120,
    "A",
    "a",
    "B",
    "c-x",
    "E",
]
HOSTILE_CWDS = [None, None, "/home/dev/proj", "/tmp/<b>x</b>", "C:\\Users\\zoë", "/" + "d" * 300, "/a//b/", "///"]


@dataclass(frozen=True)
class FuzzConfig:
    """What a run draws from.

    Attributes:
        huge_bytes: size of a huge single line (fast tier 2 MiB, long tier 100 MiB).
        huge_share: share of cases that get a huge line.
        live_share: share of cases with a writer thread appending during the read.
        max_mutations: most mutations per case.
        tmp_dir: where scratch directories go (short, for socket paths).
    """

    huge_bytes: int = 2 * 1024 * 1024
    huge_share: float = 0.02
    live_share: float = 0.03
    max_mutations: int = 3
    tmp_dir: str | None = "/tmp" if os.path.isdir("/tmp") else None


FAST = FuzzConfig(huge_bytes=2 * 1024 * 1024 + 17, huge_share=0.04, live_share=0.03)
"""The fast tier's draws (``tests/test_fuzz.py``): huge lines just over 2 MiB."""

LONG = FuzzConfig(huge_bytes=100 * 1024 * 1024 + 17, huge_share=0.004, live_share=0.03)
"""The long tier's draws (``python -m tests.fuzz.runner``): huge lines just over 100 MiB."""


@dataclass
class LiveWriterSpec:
    """A log a writer thread appends to while the case is read."""

    path: str
    kind: Literal["whole", "partial"]
    compression: Compression
    session_id: str
    next_seq: int
    next_time: int


@dataclass
class Case:
    """One hostile corpus, rebuilt from its seed."""

    seed: int
    workdir: Path
    root: Path
    outside: Path
    compression: Compression
    base: str = ""
    steps: list[str] = field(default_factory=list)
    live: list[LiveWriterSpec] = field(default_factory=list)
    chmodded: list[str] = field(default_factory=list)
    huge: bool = False

    def describe(self) -> str:
        """One line naming the seed, the base and the mutations."""
        return f"seed={self.seed} base={self.base} compression={self.compression} steps={self.steps}"

    def cleanup(self) -> None:
        """Restore permissions and remove the scratch directory."""
        for path in self.chmodded:
            try:
                os.chmod(path, 0o755, follow_symlinks=False)
            except (OSError, NotImplementedError):
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o755)
        shutil.rmtree(self.workdir, ignore_errors=True)


# --------------------------------------------------------------------------- small helpers


def _walk(top: Path) -> list[Path]:
    """Every entry under ``top`` (symlinks not followed), sorted by bytes."""
    out: list[Path] = []
    stack = [str(top)]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as iterator:
                entries = sorted(iterator, key=lambda e: os.fsencode(e.name))
        except OSError:
            continue
        for entry in entries:
            out.append(Path(entry.path))
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
            except OSError:
                pass
    return sorted(out, key=lambda p: os.fsencode(str(p)))


def logs(case: Case) -> list[Path]:
    """Regular files named like a log under the root (no symlinks)."""
    out = []
    for path in _walk(case.root):
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if path.name in LOG_NAMES and stat.S_ISREG(info.st_mode):
            out.append(path)
    return out


def session_dirs(case: Case) -> list[Path]:
    """Real directories two levels below the root."""
    out = []
    for project in _real_dirs(case.root):
        out.extend(_real_dirs(project))
    return out


def _real_dirs(path: Path) -> list[Path]:
    try:
        with os.scandir(path) as iterator:
            found = [Path(e.path) for e in iterator if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    return sorted(found, key=lambda p: os.fsencode(p.name))


def project_dirs(case: Case) -> list[Path]:
    """Real directories directly under the root."""
    return _real_dirs(case.root)


def _read(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _write(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def _pick(rng: random.Random, items: list[Any]) -> Any:
    return items[rng.randrange(len(items))] if items else None


def own_log_name(case: Case) -> str:
    """The log file name of the case's encoding."""
    return "session.jsonl.zstd" if case.compression == "zstd" else "session.jsonl"


def _compression_of(path: Path) -> Compression:
    return "zstd" if path.name.endswith(".zstd") else "none"


def _unique(parent: Path, stem: str) -> Path:
    candidate = parent / stem
    n = 0
    while os.path.lexists(candidate):
        n += 1
        candidate = parent / f"{stem}-{n}"
    return candidate


# --------------------------------------------------------------------------- zstd anatomy


@dataclass
class Anatomy:
    """Byte classes of a zstd log: complete frames and labelled byte ranges."""

    frames: list[tuple[int, int]] = field(default_factory=list)
    segments: list[tuple[str, int, int]] = field(default_factory=list)
    torn_start: int | None = None
    damaged_at: int | None = None


def zstd_anatomy(data: bytes) -> Anatomy:
    """Frames and byte classes (magic, frame header, block header/body, checksum), tolerant of damage."""
    out = Anatomy()
    size = len(data)
    offset = 0
    while offset < size:
        start = offset
        if size - offset < 4:
            out.torn_start = start
            return out
        if int.from_bytes(data[offset : offset + 4], "little") != 0xFD2FB528:
            out.damaged_at = offset
            return out
        out.segments.append(("magic", start, start + 4))
        offset += 4
        if offset >= size:
            out.torn_start = start
            return out
        descriptor_byte = data[offset]
        fcs_flag = descriptor_byte >> 6
        single = bool(descriptor_byte & 0x20)
        checksum = bool(descriptor_byte & 0x04)
        dict_flag = descriptor_byte & 0x03
        header_len = 1 + (0 if single else 1) + (4 if dict_flag == 3 else dict_flag)
        header_len += (1 if single else 0) if fcs_flag == 0 else 1 << fcs_flag
        out.segments.append(("frame-header", offset, min(size, offset + header_len)))
        offset += header_len
        if offset > size:
            out.torn_start = start
            return out
        while True:
            if size - offset < 3:
                out.torn_start = start
                return out
            block = int.from_bytes(data[offset : offset + 3], "little")
            out.segments.append(("block-header", offset, offset + 3))
            offset += 3
            block_type = (block >> 1) & 3
            if block_type == 3:
                out.damaged_at = offset - 3
                return out
            body = 1 if block_type == 1 else block >> 3
            out.segments.append(("block-body", offset, min(size, offset + body)))
            offset += body
            if offset > size:
                out.torn_start = start
                return out
            if block & 1:
                break
        if checksum:
            out.segments.append(("checksum", offset, min(size, offset + 4)))
            offset += 4
            if offset > size:
                out.torn_start = start
                return out
        out.frames.append((start, offset))
    return out


def plaintext(data: bytes, compression: Compression) -> bytes | None:
    """A log's plaintext (zstd: every decodable frame, the torn tail's prefix), or None when damaged."""
    if compression == "none":
        return data
    anatomy = zstd_anatomy(data)
    if anatomy.damaged_at is not None:
        return None
    parts = []
    try:
        for start, end in anatomy.frames:
            parts.append(zstandard.ZstdDecompressor().decompressobj().decompress(data[start:end]))
        if anatomy.torn_start is not None:
            parts.append(zstandard.ZstdDecompressor().decompressobj().decompress(data[anatomy.torn_start :]))
    except zstandard.ZstdError:
        return None
    return b"".join(parts)


def frame_plaintext(rng: random.Random, text: bytes) -> bytes:
    """Re-frame plaintext as upstream writes it: header alone, then batches (sometimes a line split across frames)."""
    newline = text.find(b"\n")
    if newline == -1:
        return compress_frame(text)
    out = [compress_frame(text[: newline + 1])]
    body = text[newline + 1 :]
    lines = split_lines(body)
    i = 0
    while i < len(lines):
        take = rng.randint(1, 8)
        chunk = b"".join(lines[i : i + take])
        i += take
        if len(chunk) > 2 and rng.random() < 0.08:
            cut = rng.randrange(1, len(chunk))
            out.append(compress_frame(chunk[:cut]))
            out.append(compress_frame(chunk[cut:]))
        else:
            out.append(compress_frame(chunk))
    return b"".join(out)


def split_lines(text: bytes) -> list[bytes]:
    """Lines with their ``\\n`` (a final unterminated piece kept as is)."""
    parts = text.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _object(line: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


class Raw:
    """A JSON literal written verbatim (``NaN``, ``1e400``, ``-0``...)."""

    def __init__(self, text: str) -> None:
        self.text = text


def dump_line(value: Any, rng: random.Random | None = None) -> bytes:
    """JSON text of a value with :class:`Raw` literals spliced in (non-ASCII raw or escaped)."""
    raws: list[str] = []

    def default(obj: Any) -> Any:
        raise TypeError(type(obj))

    def swap(obj: Any) -> Any:
        if isinstance(obj, Raw):
            raws.append(obj.text)
            return f"\x00raw{len(raws) - 1}\x00"
        if isinstance(obj, dict):
            return {k: swap(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [swap(v) for v in obj]
        return obj

    ascii_only = rng.random() < 0.3 if rng is not None else False
    text = json.dumps(swap(value), ensure_ascii=ascii_only, separators=(",", ":"), default=default)
    for index, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\x00raw{index}\x00", ensure_ascii=ascii_only), raw)
    return text.encode("utf-8", "surrogatepass") + b"\n"


# --------------------------------------------------------------------------- bases


def _descriptor_payload(rng: random.Random) -> Any:
    label = _pick(rng, HOSTILE_TEXT) if rng.random() < 0.6 else f"task {rng.randrange(100)}"
    roll = rng.random()
    if roll < 0.55:
        return descriptor("continuable", label=label)
    if roll < 0.7:
        return descriptor("one-shot", label=label) if rng.random() < 0.5 else descriptor("one-shot")
    return _pick(
        rng,
        [
            descriptor("continuable"),
            {"version": "2", "mode": "continuable", "provider": "spawn", "label": label},
            {"version": 1, "mode": "continuable", "provider": "spawn", "label": label},
            {"version": 3, "mode": "continuable", "provider": "spawn", "label": label},
            descriptor("continuable", label=label, toolFilter={}),
            descriptor("continuable", label=label, persona="p"),
            descriptor("continuable", label=label, agent={"provider": "deepseek", "model": label}),
            None,
            [],
            label,
            {"version": 2},
        ],
    )


def _events_for(rng: random.Random, session_id: str, *, with_descriptor: bool) -> list[dict[str, Any]]:
    log = EventLog(session_id, time=1_700_000_000_000 + rng.randrange(10**6))
    for turn in range(rng.randint(1, 3)):
        log.turn_start()
        log.user(_pick(rng, HOSTILE_TEXT) if rng.random() < 0.5 else "work")
        if with_descriptor and turn == 0:
            log.descriptor(_descriptor_payload(rng))
        roll = rng.random()
        if roll < 0.4:
            log.assistant(_pick(rng, HOSTILE_TEXT) or "ok", chunks=rng.randint(0, 6))
        elif roll < 0.6:
            log.tool_round(f"call-{turn}", _pick(rng, HOSTILE_TEXT) or "r")
        if with_descriptor and rng.random() < 0.15:
            log.descriptor(_descriptor_payload(rng))
        if rng.random() < 0.9:
            log.turn_end()
    return log.events


def base_writer(rng: random.Random, case: Case) -> str:
    """A tree written with our writer: roots, subagents, grandchildren, forks, hostile ids and labels."""
    used: set[str] = set()

    def new_id(prefix: str) -> str:
        base = _pick(rng, HOSTILE_IDS) if rng.random() < 0.5 else prefix
        candidate = base
        n = 0
        while candidate in used:
            n += 1
            candidate = f"{base}-{n}"
        used.add(candidate)
        return candidate

    compression = case.compression
    count = 0
    for _ in range(rng.randint(1, 2)):
        parent_id = new_id("P")
        cwd = _pick(rng, HOSTILE_CWDS)
        head = header(parent_id, created_at=rng.choice([1, 2, 10**12]), cwd=cwd)
        _write_log(rng, case, head, _events_for(rng, parent_id, with_descriptor=False), compression)
        count += 1
        frontier = [(parent_id, cwd, 1)]
        while frontier and count < 14:
            pid, pcwd, depth = frontier.pop(0)
            for _ in range(rng.randint(0, 4 if depth == 1 else 2)):
                cid = new_id("c")
                seed = rng.choice([None, None, None, 0, 2, 4])
                head = header(
                    cid,
                    created_at=rng.choice([1, 2, 2, 3, 3, 10**12]),
                    cwd=pcwd if rng.random() < 0.8 else _pick(rng, HOSTILE_CWDS),
                    parent=pid,
                    seed_length=seed,
                    subagent=rng.random() < 0.9,
                    delegation_depth=depth,
                    agent_preset=_pick(rng, [None, None, "reviewer", "<b>p</b>"]),
                )
                events = _events_for(rng, cid, with_descriptor=rng.random() < 0.92)
                _write_log(rng, case, head, events, compression)
                count += 1
                if depth < 4:
                    frontier.append((cid, head.get("cwd"), depth + 1))
    return f"writer({count} logs)"


def _write_log(rng: random.Random, case: Case, head: dict[str, Any], events: Any, compression: Compression) -> None:
    data = encode_log(head, events, compression, batch=rng.randint(1, 16), pack=rng.random() < 0.7)
    with contextlib.suppress(OSError, ValueError):  # an id collision or an unnameable cwd: skip that log
        write_file(log_path(case.root, head, compression), data)


def base_chain(rng: random.Random, case: Case) -> str:
    """A deep lineage chain (each session the child of the previous one)."""
    length = rng.choice([30, 120, 400])
    previous = None
    for i in range(length):
        sid = f"n{i:04d}"
        head = header(sid, created_at=i, parent=previous, subagent=previous is not None, delegation_depth=i)
        events = _events_for(rng, sid, with_descriptor=previous is not None) if i % 50 == 0 else []
        if previous is not None and not events:
            log = EventLog(sid)
            log.turn_start()
            log.descriptor(descriptor("continuable", label=f"level {i}"))
            log.turn_end()
            events = log.events
        write_file(log_path(case.root, head, case.compression), encode_log(head, events, case.compression))
        previous = sid
    if rng.random() < 0.5:  # close the loop: the first session names the last as parent
        first = Path(log_path(case.root, header("n0000", created_at=0), case.compression))
        rewritten = header("n0000", created_at=0, parent=previous, subagent=True)
        os.unlink(first)
        write_file(first, encode_log(rewritten, [], case.compression))
        return f"chain({length}, cycle)"
    return f"chain({length})"


def conformance_cases() -> list[Path]:
    """The shared conformance case directories (sorted; empty when absent)."""
    if not CONFORMANCE.is_dir():
        return []
    return sorted(p for p in CONFORMANCE.iterdir() if (p / "corpus").is_dir() and (p / "meta.json").is_file())


def base_conformance(rng: random.Random, case: Case, source: Path) -> str:
    """A copy of a conformance corpus (a sample of the large edge corpora)."""
    src = source / "corpus"
    entries = _walk(src)
    os.makedirs(case.root, exist_ok=True)
    if len(entries) <= 150:
        shutil.copytree(src, case.root, symlinks=True, dirs_exist_ok=True)
        return f"conformance:{source.name}"
    for entry in sorted(src.iterdir(), key=lambda p: os.fsencode(p.name)):
        if not entry.is_dir() or entry.is_symlink():
            if entry.is_symlink():
                os.symlink(os.readlink(entry), case.root / entry.name)
            else:
                shutil.copy2(entry, case.root / entry.name)
            continue
        if entry.name == "lost+found" or rng.random() < 0.6:
            continue
        sessions = sorted(entry.iterdir(), key=lambda p: os.fsencode(p.name))
        keep = rng.sample(sessions, min(len(sessions), rng.randint(3, 12)))
        (case.root / entry.name).mkdir()
        for session in sorted(keep, key=lambda p: os.fsencode(p.name)):
            target = case.root / entry.name / session.name
            if session.is_symlink():
                os.symlink(os.readlink(session), target)
            elif session.is_dir():
                shutil.copytree(session, target, symlinks=True)
            else:
                shutil.copy2(session, target)
    return f"conformance:{source.name}(sample)"


# --------------------------------------------------------------------------- byte mutations

Mutation = Callable[[random.Random, Case], "str | None"]


def _plain_classes(data: bytes) -> dict[str, list[tuple[int, int]]]:
    """Cut-position ranges (half-open) per byte class of a plain log."""
    classes: dict[str, list[tuple[int, int]]] = {}
    end = data.find(b"\n")
    if end == -1:
        classes["header"] = [(1, len(data))] if len(data) > 1 else []
        return classes
    classes["header"] = [(1, end)] if end > 1 else []
    classes["at-newline"] = [(end, end + 2)]
    start = end + 1
    while start < len(data):
        nl = data.find(b"\n", start)
        stop = len(data) if nl == -1 else nl
        if stop - start > 1:
            classes.setdefault("event", []).append((start + 1, stop))
        if nl == -1:
            break
        classes["at-newline"].append((nl, nl + 2))
        start = nl + 1
    return {k: [r for r in v if r[1] > r[0]] for k, v in classes.items() if v}


def _zstd_classes(data: bytes) -> dict[str, list[tuple[int, int]]]:
    anatomy = zstd_anatomy(data)
    classes: dict[str, list[tuple[int, int]]] = {}
    for kind, start, end in anatomy.segments:
        if end - start > 1:
            classes.setdefault(kind, []).append((start + 1, end))
    for _, end in anatomy.frames:
        classes.setdefault("frame-boundary", []).append((end, end + 1))
    classes.setdefault("first-frame", [])
    if anatomy.frames:
        first_start, first_end = anatomy.frames[0]
        if first_end - first_start > 1:
            classes["first-frame"].append((first_start + 1, first_end))
    return {k: [r for r in v if r[1] > r[0]] for k, v in classes.items() if v}


def byte_classes(data: bytes, compression: Compression) -> dict[str, list[tuple[int, int]]]:
    """Position ranges per byte class of a log in its encoding."""
    return _zstd_classes(data) if compression == "zstd" else _plain_classes(data)


def _position(rng: random.Random, data: bytes, compression: Compression) -> tuple[str, int]:
    classes = byte_classes(data, compression)
    if not classes:
        return "anywhere", rng.randrange(max(1, len(data)))
    kind = rng.choice(sorted(classes))
    start, end = rng.choice(classes[kind])
    return kind, rng.randrange(start, end)


def mut_truncate(rng: random.Random, case: Case) -> str | None:
    """Cut a log at a position of a chosen byte class."""
    path = _pick(rng, logs(case))
    if path is None:
        return None
    data = _read(path)
    if not data:
        return None
    kind, position = _position(rng, data, _compression_of(path))
    position = min(position, len(data))
    _write(path, data[:position])
    return f"truncate({path.relative_to(case.root)}, {kind}@{position}/{len(data)})"


def mut_bitflip(rng: random.Random, case: Case) -> str | None:
    """Flip one to eight bits, in a chosen byte class or anywhere."""
    path = _pick(rng, logs(case))
    if path is None:
        return None
    data = bytearray(_read(path))
    if not data:
        return None
    flips = []
    for _ in range(rng.choice([1, 1, 1, 2, 8])):
        kind, position = _position(rng, bytes(data), _compression_of(path))
        position = min(position, len(data) - 1)
        bit = rng.randrange(8)
        data[position] ^= 1 << bit
        flips.append(f"{kind}@{position}.{bit}")
    _write(path, bytes(data))
    return f"bitflip({path.relative_to(case.root)}, {','.join(flips)})"


def mut_splice(rng: random.Random, case: Case) -> str | None:
    """Insert, overwrite, duplicate or delete a byte range."""
    path = _pick(rng, logs(case))
    if path is None:
        return None
    data = _read(path)
    if not data:
        return None
    a = rng.randrange(len(data))
    b = min(len(data), a + rng.randint(1, 64))
    junk = rng.randbytes(rng.randint(1, 64))
    op = rng.choice(["insert", "overwrite", "duplicate", "delete"])
    if op == "insert":
        data = data[:a] + junk + data[a:]
    elif op == "overwrite":
        data = data[:a] + junk[: b - a] + data[b:]
    elif op == "duplicate":
        data = data[:b] + data[a:b] + data[b:]
    else:
        data = data[:a] + data[b:]
    _write(path, data)
    return f"splice({path.relative_to(case.root)}, {op}@{a}:{b})"


def mut_zstd_frames(rng: random.Random, case: Case) -> str | None:
    """Cut, duplicate, reorder, drop or replace zstd frames (or swap a log's encoding)."""
    path = _pick(rng, logs(case))
    if path is None:
        return None
    data = _read(path)
    if _compression_of(path) == "none":
        if rng.random() < 0.5:
            _write(path, compress_frame(data))
            return f"zstd-bytes-in-plain-log({path.relative_to(case.root)})"
        return None
    anatomy = zstd_anatomy(data)
    frames = [data[s:e] for s, e in anatomy.frames]
    tail = data[anatomy.torn_start :] if anatomy.torn_start is not None else b""
    if not frames:
        return None
    op = rng.choice(
        [
            "drop",
            "duplicate",
            "swap",
            "reverse-body",
            "cut",
            "header-last",
            "skippable",
            "empty-frame",
            "no-checksum",
            "unknown-size",
            "garbage-after",
            "plain-bytes",
            "merge-header",
        ]
    )
    i = rng.randrange(len(frames))
    if op == "drop":
        del frames[i]
    elif op == "duplicate":
        frames.insert(rng.randrange(len(frames) + 1), frames[i])
    elif op == "swap" and len(frames) > 1:
        j = rng.randrange(len(frames))
        frames[i], frames[j] = frames[j], frames[i]
    elif op == "reverse-body":
        frames[1:] = frames[1:][::-1]
    elif op == "cut":
        frame = frames[i]
        frames[i] = frame[: rng.randrange(1, len(frame))]
    elif op == "header-last":
        frames.append(frames.pop(0))
    elif op == "skippable":
        payload = rng.randbytes(rng.randint(0, 16))
        magic = (0x184D2A50 + rng.randrange(16)).to_bytes(4, "little")
        frames.insert(rng.randrange(len(frames) + 1), magic + len(payload).to_bytes(4, "little") + payload)
    elif op == "empty-frame":
        frames.insert(rng.randrange(len(frames) + 1), compress_frame(b""))
    elif op == "no-checksum":
        try:
            plain = zstandard.ZstdDecompressor().decompressobj().decompress(frames[i])
        except zstandard.ZstdError:  # an earlier mutation damaged this frame
            return None
        frames[i] = zstandard.ZstdCompressor(write_checksum=False).compress(plain)
    elif op == "unknown-size":
        try:
            plain = zstandard.ZstdDecompressor().decompressobj().decompress(frames[i])
        except zstandard.ZstdError:
            return None
        streamed = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False).compressobj()
        frames[i] = streamed.compress(plain) + streamed.flush()
    elif op == "garbage-after":
        tail += rng.randbytes(rng.randint(1, 32))
    elif op == "plain-bytes":
        try:
            frames[i] = zstandard.ZstdDecompressor().decompressobj().decompress(frames[i])
        except zstandard.ZstdError:
            return None
    elif op == "merge-header" and len(frames) > 1:
        d = zstandard.ZstdDecompressor()
        try:
            merged = d.decompressobj().decompress(frames[0]) + d.decompressobj().decompress(frames[1])
        except zstandard.ZstdError:
            return None
        frames[0:2] = [compress_frame(merged)]
    _write(path, b"".join(frames) + tail)
    return f"zstd-frames({path.relative_to(case.root)}, {op}, frame {i}/{len(anatomy.frames)})"


# --------------------------------------------------------------------------- text mutations

TextMutation = Callable[[random.Random, list[bytes], Case], "str | None"]
INVALID_UTF8 = [
    b"\xff",
    b"\xfe\xff",
    b"\xc3\x28",
    b"\xa0\xa1",
    b"\xe2\x28\xa1",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"\xc0\xaf",
    b"\xe0\x80\xaf",
    b"\xf0\x28\x8c\x28",
    b"\x80",
    b"\xf8\x88\x80\x80\x80",
]
ODD_NUMBERS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1e400",
    "-0",
    "-0.0",
    "0.0",
    "1e-400",
    "1.5",
    "9007199254740993",
    "9007199254740992",
    "100000000000000000000000000000",
    "-100000000000000000000000000000",
    "-1",
    "1E2",
    "2e0",
    "0e0",
    "01",
    "1.",
    ".5",
    "+1",
    "0x10",
    "1e9999999999",
]
NUMBER = re.compile(rb'"([A-Za-z0-9_]+)":(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)')


def _text_mutation(name: str, func: TextMutation) -> Mutation:
    def apply(rng: random.Random, case: Case) -> str | None:
        path = _pick(rng, logs(case))
        if path is None:
            return None
        compression = _compression_of(path)
        text = plaintext(_read(path), compression)
        if text is None:
            return None
        lines = split_lines(text)
        if not lines:
            return None
        try:
            done = func(rng, lines, case)
        except RecursionError:  # a record an earlier mutation nested too deep for json.dumps: skip
            return None
        if done is None:
            return None
        joined = b"".join(lines)
        _write(path, frame_plaintext(rng, joined) if compression == "zstd" else joined)
        return f"{name}({path.relative_to(case.root)}, {done})"

    apply.__name__ = name
    return apply


def _line_index(rng: random.Random, lines: list[bytes], *, events_only: bool = False) -> int | None:
    low = 1 if events_only else 0
    if len(lines) <= low:
        return None
    return rng.randrange(low, len(lines))


def txt_invalid_utf8(rng: random.Random, lines: list[bytes], case: Case) -> str | None:
    i = _line_index(rng, lines)
    if i is None:
        return None
    line = lines[i]
    junk = rng.choice(INVALID_UTF8)
    quotes = [m.end() for m in re.finditer(rb'":"', line)]
    position = rng.choice(quotes) if quotes and rng.random() < 0.7 else rng.randrange(len(line))
    lines[i] = line[:position] + junk + line[position:]
    return f"line {i + 1} @{position} {junk!r}"


def txt_bom(rng: random.Random, lines: list[bytes], case: Case) -> str | None:
    bom = rng.choice([b"\xef\xbb\xbf", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"])
    where = rng.choice(["header", "line", "own-line"])
    if where == "header" or len(lines) < 2:
        lines[0] = bom + lines[0]
        return f"{bom!r} before the header"
    i = rng.randrange(1, len(lines))
    if where == "line":
        lines[i] = bom + lines[i]
    else:
        lines.insert(i, bom + b"\n")
    return f"{bom!r} {where} {i + 1}"


def txt_crlf(rng: random.Random, lines: list[bytes], case: Case) -> str | None:
    mode = rng.choice(["all", "some", "lone-cr", "cr-before-header-newline"])
    for i, line in enumerate(lines):
        if not line.endswith(b"\n"):
            continue
        if mode == "all" or (mode == "some" and rng.random() < 0.4):
            lines[i] = line[:-1] + b"\r\n"
        elif mode == "lone-cr" and rng.random() < 0.3:
            lines[i] = line[:-1] + b"\r"
        elif mode == "cr-before-header-newline" and i == 0:
            lines[i] = line[:-1] + b"\r\n"
    return mode


def txt_nul(rng: random.Random, lines: list[bytes], case: Case) -> str | None:
    mode = rng.choice(["inside", "inside-string", "nul-line", "nul-tail", "escaped"])
    if mode == "nul-tail":
        lines.append(b"\x00" * rng.choice([1, 7, 4096, 65536]))
        return mode
    i = _line_index(rng, lines)
    if i is None:
        return None
    line = lines[i]
    if mode == "nul-line":
        lines.insert(i, b"\x00" * rng.randint(1, 64) + b"\n")
    elif mode == "inside-string":
        quotes = [m.end() for m in re.finditer(rb'":"', line)] or [len(line) // 2]
        position = rng.choice(quotes)
        lines[i] = line[:position] + b"\x00" + line[position:]
    elif mode == "escaped":
        quotes = [m.end() for m in re.finditer(rb'":"', line)]
        if not quotes:
            return None
        position = rng.choice(quotes)
        lines[i] = line[:position] + b"\\u0000" + line[position:]
    else:
        position = rng.randrange(len(line) + 1)
        lines[i] = line[:position] + b"\x00" + line[position:]
    return f"{mode} line {i + 1}"


def txt_blank(rng: random.Random, lines: list[bytes], case: Case) -> str | None:
    blank = rng.choice([b"\n", b"\n", b" \n", b"\t\n", b"\r\n", b"\n\n\n"])
    i = rng.randint(0 if rng.random() < 0.1 else 1, len(lines))
    lines.insert(i, blank)
    return f"{blank!r} at line {i + 1}"


def _nest(depth: int, kind: str) -> bytes:
    if kind == "array":
        return b"[" * depth + b"]" * depth
    if kind == "object":
        return b'{"a":' * depth + b"1" + b"}" * depth
    return b'[{"a":' * (depth // 2) + b"0" + b"}]" * (depth // 2)


def txt_deep_nesting(rng: random.Random, lines: list[bytes], case: Case) -> str | None:
    depth = rng.choice([10, 500, 999, 1000, 1023, 1024, 1025, 2000, 10_000, 10_000, 100_000])
    kind = rng.choice(["array", "object", "mixed"])
    nested = _nest(depth, kind)
    where = rng.choice(["event-data", "descriptor", "header", "raw-line", "label"])
    if where == "header":
        head = lines[0].rstrip(b"\n")
        if not head.endswith(b"}"):
            return None
        lines[0] = head[:-1] + b',"deep":' + nested + b"}\n"
        return f"depth {depth} {kind} in the header"
    if where == "raw-line":
        lines.insert(rng.randint(1, len(lines)), nested + b"\n")
        return f"depth {depth} {kind} raw line"
    candidates = [i for i in range(1, len(lines)) if _object(lines[i]) is not None]
    if where in ("descriptor", "label"):
        candidates = [i for i in candidates if b'"subagent/descriptor"' in lines[i]] or candidates
    if not candidates:
        return None
    i = rng.choice(candidates)
    event = _object(lines[i])
    assert event is not None
    if where == "label":
        payload = {"version": 2, "mode": "continuable", "provider": "spawn", "label": "\x00NEST\x00"}
        text = dump_line({**event, "data": payload}).replace(json.dumps("\x00NEST\x00").encode(), nested)
    else:
        text = dump_line({**event, "data": "\x00NEST\x00"}).replace(json.dumps("\x00NEST\x00").encode(), nested)
    lines[i] = text
    return f"depth {depth} {kind} as {where} of line {i + 1}"


def txt_numbers(rng: random.Random, lines: list[bytes], case: Case) -> str | None:
    i = 0 if rng.random() < 0.4 else _line_index(rng, lines)
    if i is None:
        return None
    matches = list(NUMBER.finditer(lines[i]))
    if not matches:
        return None
    match = rng.choice(matches)
    literal = rng.choice(ODD_NUMBERS).encode()
    line = lines[i]
    lines[i] = line[: match.start(2)] + literal + line[match.end(2) :]
    return f"line {i + 1} {match.group(1).decode()}={literal.decode()}"


def txt_duplicate_keys(rng: random.Random, lines: list[bytes], case: Case) -> str | None:
    i = 0 if rng.random() < 0.4 else _line_index(rng, lines)
    if i is None:
        return None
    value = _object(lines[i])
    if not value:
        return None
    key = rng.choice(sorted(value))
    other = rng.choice([value[key], None, "x", 0, -1, [], {}, "dup", 1.5, "subagent", "session"])
    pair = json.dumps(key).encode() + b":" + json.dumps(other).encode()
    line = lines[i].rstrip(b"\n")
    if rng.random() < 0.5 and line.endswith(b"}"):
        lines[i] = line[:-1] + b"," + pair + b"}\n"
        where = "last"
    elif line.startswith(b"{"):
        lines[i] = b"{" + pair + b"," + line[1:] + b"\n"
        where = "first"
    else:
        return None
    return f"line {i + 1} duplicate {key!r}={other!r} ({where})"


def txt_records(rng: random.Random, lines: list[bytes], case: Case) -> str | None:
    op = rng.choice(["swap", "delete", "duplicate", "null", "scalar", "empty-object", "turn-end", "reverse", "cut"])
    i = _line_index(rng, lines, events_only=True)
    if op == "null":
        lines.insert(rng.randint(1, len(lines)), b"null\n")
    elif op == "scalar":
        lines.insert(rng.randint(1, len(lines)), rng.choice([b"[]\n", b'"s"\n', b"123\n", b"true\n", b"[null]\n"]))
    elif op == "empty-object":
        lines.insert(rng.randint(1, len(lines)), b"{}\n")
    elif op == "turn-end":
        seq = rng.randrange(0, len(lines) + 2)
        lines.append(dump_line({"type": "turn/end", "seq": seq, "time": 1, "data": {"turn": 1, "reason": {}}}))
    elif i is None:
        return None
    elif op == "swap":
        j = rng.randrange(1, len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif op == "delete":
        del lines[i]
    elif op == "duplicate":
        lines.insert(i, lines[i])
    elif op == "reverse":
        lines[1:] = lines[1:][::-1]
    elif op == "cut":
        line = lines[i]
        lines[i] = line[: rng.randrange(len(line))]
        del lines[i + 1 :]
    return f"{op} line {i + 1 if i is not None else '-'}"


HEADER_CHANGES: list[tuple[str, Any]] = [
    ("id", 5),
    ("id", ""),
    ("id", "someone-else"),
    ("id", None),
    ("cwd", 7),
    ("cwd", ""),
    ("cwd", "relative/dir"),
    ("cwd", "/elsewhere"),
    ("sandboxMode", "workspace-write"),
    ("approvalPolicy", "never"),
    ("version", "0"),
    ("version", 1),
    ("version", Raw("-0")),
    ("version", Raw("1e400")),
    ("version", None),
    ("createdAt", -1),
    ("createdAt", 1.5),
    ("createdAt", "1"),
    ("createdAt", 2**53),
    ("createdAt", Raw("-0")),
    ("createdAt", Raw("1e400")),
    ("delegationDepth", -1),
    ("delegationDepth", 1.5),
    ("delegationDepth", None),
    ("origin", "root"),
    ("origin", None),
    ("agentPreset", 1),
    ("parentSession", 12),
    ("parentSession", None),
    ("parentSession", {"id": "P"}),
    ("parentSession", ["P"]),
    ("parentSession", "no-such-parent"),
    ("parentSession", "<script>alert(1)</script>"),
    ("parentSession", Raw("1e400")),
    ("parentSession", Raw("100000000000000000000000")),
    ("seedLength", "3"),
    ("seedLength", -1),
    ("seedLength", 10**9),
    ("seedLength", 1.5),
    ("seedLength", Raw("100000000000000000000000")),
    ("seedLength", Raw("1e400")),
    ("type", "Session"),
    ("extra", {"nested": [1, 2, 3]}),
    ("extra", Raw("100000000000000000000000")),
]


def txt_header(rng: random.Random, lines: list[bytes], case: Case) -> str | None:
    head = _object(lines[0])
    if head is None:
        return None
    changes = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        key, value = rng.choice(HEADER_CHANGES)
        if key == "parentSession" and value is None and rng.random() < 0.5:
            value = head.get("id")  # names itself
        if value is None and rng.random() < 0.5:
            head.pop(key, None)
            changes.append(f"-{key}")
            continue
        head[key] = value
        changes.append(f"{key}={value.text if isinstance(value, Raw) else value!r}")
    lines[0] = dump_line(head, rng)
    return ", ".join(changes)


EVENT_CHANGES: list[tuple[str, Any]] = [
    ("type", "x-unknown/event"),
    ("type", ""),
    ("type", 5),
    ("time", -1),
    ("time", 1.5),
    ("time", "1"),
    ("time", Raw("1e400")),
    ("seq", "0"),
    ("seq", Raw("1.0")),
    ("seq", -1),
    ("seq", Raw("-0")),
    ("data", None),
    ("extraKey", 1),
    ("ignorable", True),
    ("ignorable", "yes"),
]
DESCRIPTOR_CHANGES: list[tuple[str, Any]] = [
    ("version", "2"),
    ("version", 1),
    ("version", 3),
    ("version", Raw("2.0")),
    ("mode", "x"),
    ("label", 5),
    ("label", None),
    ("persona", "p"),
    ("toolFilter", {}),
    ("toolFilter", {"allow": ["<b>"], "deny": [1]}),
    ("provider", 7),
    ("unknown", 1),
]


def txt_event(rng: random.Random, lines: list[bytes], case: Case) -> str | None:
    candidates = [i for i in range(1, len(lines)) if _object(lines[i]) is not None]
    if not candidates:
        return None
    i = rng.choice(candidates)
    event = _object(lines[i])
    assert event is not None
    if isinstance(event.get("data"), dict) and event.get("type") == "subagent/descriptor" and rng.random() < 0.6:
        key, value = rng.choice(DESCRIPTOR_CHANGES)
        if value is None:
            event["data"].pop(key, None)
        else:
            event["data"][key] = value
        where = f"data.{key}"
    elif event.get("type") in ("text-chunks", "reasoning-chunks", "tool-call-chunks") and rng.random() < 0.7:
        data = event.get("data") if isinstance(event.get("data"), dict) else {}
        key = rng.choice(["dt", "texts", "seq0", "time0", "index"])
        value = rng.choice([[], [1.5], ["x"], None, -1, {}, [None]])
        if key in ("seq0", "time0"):
            event[key] = value
        else:
            data[key] = value
        event["data"] = data
        where = f"chunk-row {key}"
    else:
        key, value = rng.choice(EVENT_CHANGES)
        if key == "data" and rng.random() < 0.5:
            event.pop("data", None)
        else:
            event[key] = value
        where = key
    lines[i] = dump_line(event, rng)
    return f"line {i + 1} {where}"


SAFE_MAX = 2**53 - 1
YEAR_10000_MS = 253_402_300_800_000  # 10000-01-01T00:00:00.000Z
YEAR_1_MS = -62_135_596_800_000  # 0001-01-01T00:00:00.000Z
HOSTILE_TIMES = [
    SAFE_MAX,  # year 287,396: Polars panics printing it as a datetime
    SAFE_MAX - 1,
    -SAFE_MAX,
    -SAFE_MAX + 1,
    YEAR_10000_MS,  # Python's datetime ends one millisecond before
    YEAR_10000_MS - 1,
    YEAR_10000_MS + 1,
    YEAR_1_MS,  # the first millisecond a datetime holds
    YEAR_1_MS - 1,  # year 0
    YEAR_1_MS - 366 * 86_400_000,  # year -1
    8_640_000_000_000_000,  # the last time JavaScript's Date holds
    8_640_000_000_000_001,
    -1,
    0,
]
"""Times a log may hold as safe integers that lie past the calendar a date names (or just inside it)."""


TimeMode = Literal["created", "one", "all", "packed"]


def txt_times(
    rng: random.Random, lines: list[bytes], case: Case, *, mode: TimeMode | None = None, base: int | None = None
) -> str | None:
    """Hostile times: a ``createdAt`` (a non-negative safe integer: upstream lists it) or event times near
    ±2^53 and the year 0 / year 10000 boundaries, on one event, on every event (shifted, increasing) or on a
    packed chunk row's ``time0``. ``mode`` and ``base`` are drawn unless given (the named fuzz cases)."""
    if mode is None:
        mode = rng.choice(["created", "one", "all", "all", "packed"])
    if base is None:
        base = rng.choice(HOSTILE_TIMES)
    if mode == "created":
        head = _object(lines[0])
        if head is None:
            return None
        head["createdAt"] = abs(base)
        lines[0] = dump_line(head, rng)
        return f"createdAt={abs(base)}"
    events = [i for i in range(1, len(lines)) if _object(lines[i]) is not None]
    if mode == "packed":
        events = [i for i in events if str((_object(lines[i]) or {}).get("type", "")).endswith("-chunks")]
    if not events:
        return None
    if mode == "one" or mode == "packed":
        i = rng.choice(events)
        event = _object(lines[i])
        assert event is not None
        event["time0" if mode == "packed" else "time"] = base
        lines[i] = dump_line(event, rng)
        return f"line {i + 1} {'time0' if mode == 'packed' else 'time'}={base}"
    start = min(base, SAFE_MAX - 10 * len(lines))  # increasing times that stay safe integers
    for k, i in enumerate(events):
        event = _object(lines[i])
        assert event is not None
        key = "time0" if "time0" in event else "time"
        event[key] = start + k
        lines[i] = dump_line(event, rng)
    return f"{len(events)} event times from {start}"


def txt_huge(size: int) -> TextMutation:
    def huge(rng: random.Random, lines: list[bytes], case: Case) -> str | None:
        case.huge = True
        mode = rng.choice(["torn-garbage", "garbage-line", "huge-label", "whitespace-line", "huge-header-key"])
        if mode == "torn-garbage":
            lines.append(b"A" * size)
        elif mode == "garbage-line":
            lines.insert(rng.randint(1, len(lines)), b"{" + b"B" * size + b"\n")
        elif mode == "whitespace-line":
            lines.insert(rng.randint(1, len(lines)), b" " * size + b"\n")
        elif mode == "huge-header-key":
            head = lines[0].rstrip(b"\n")
            if not head.endswith(b"}"):
                return None
            lines[0] = head[:-1] + b',"pad":"' + b"p" * size + b'"}\n'
        else:
            targets = [i for i in range(1, len(lines)) if b'"subagent/descriptor"' in lines[i]]
            if not targets:
                lines.append(b'{"label":"' + b"L" * size + b'"}\n')
                return f"{mode} (no descriptor: appended) {size} bytes"
            i = rng.choice(targets)
            event = _object(lines[i])
            if event is None:
                return None
            event["data"] = {"version": 2, "mode": "continuable", "provider": "spawn", "label": "\x00HUGE\x00"}
            lines[i] = dump_line(event).replace(json.dumps("\x00HUGE\x00").encode(), b'"' + b"L" * size + b'"')
        return f"{mode} {size} bytes"

    return huge


def txt_cycle(rng: random.Random, lines: list[bytes], case: Case) -> str | None:
    """Point this log's parent at a session that descends from it (or itself)."""
    head = _object(lines[0])
    if head is None or not isinstance(head.get("id"), str):
        return None
    ids = []
    for path in logs(case):
        text = plaintext(_read(path), _compression_of(path))
        first = _object(split_lines(text)[0]) if text else None
        if first and isinstance(first.get("id"), str) and first.get("parentSession") is not None:
            ids.append(first["id"])
    target = rng.choice(ids) if ids and rng.random() < 0.7 else head["id"]
    head["parentSession"] = target
    head["origin"] = "subagent"
    lines[0] = dump_line(head, rng)
    return f"{head['id']!r} names {target!r} as parent"


# --------------------------------------------------------------------------- filesystem mutations


def _replace_log(rng: random.Random, case: Case) -> Path | None:
    """Pick a log to replace, or a fresh session directory's log path."""
    existing = logs(case)
    if existing and rng.random() < 0.7:
        path = rng.choice(existing)
        os.unlink(path)
        return path
    projects = project_dirs(case)
    project = rng.choice(projects) if projects else case.root / "_no-cwd"
    directory = _unique(project, "fz")
    directory.mkdir(parents=True)
    return directory / own_log_name(case)


def _outside_log(rng: random.Random, case: Case) -> Path:
    """A copy of some log outside the root (the sentinel directory)."""
    existing = logs(case)
    target = _unique(case.outside, "out") / (existing[0].name if existing else own_log_name(case))
    target.parent.mkdir(parents=True, exist_ok=True)
    source = rng.choice(existing) if existing else None
    with open(target, "wb") as handle:
        handle.write(_read(source) if source is not None else b'{"type":"session"}\n')
    return target


def fs_symlink_loop(rng: random.Random, case: Case) -> str | None:
    mode = rng.choice(["self-log", "two-logs", "dir-up", "root-dot", "project-self"])
    if mode == "self-log":
        path = _replace_log(rng, case)
        if path is None:
            return None
        os.symlink(path.name, path)
    elif mode == "two-logs":
        a = _replace_log(rng, case)
        b = _replace_log(rng, case)
        if a is None or b is None or a == b:
            return None
        os.symlink(b, a)
        os.symlink(a, b)
        return f"{mode}({a.relative_to(case.root)} <-> {b.relative_to(case.root)})"
    elif mode == "dir-up":
        dirs = session_dirs(case)
        if not dirs:
            return None
        path = rng.choice(dirs) / "up"
        os.symlink("..", path)
    elif mode == "root-dot":
        path = _unique(case.root, "loop")
        os.symlink(".", path)
    else:
        projects = project_dirs(case)
        if not projects:
            return None
        path = _unique(rng.choice(projects), "self")
        os.symlink(path.name, path)
    return f"symlink-loop({mode}, {path.relative_to(case.root)})"


def fs_symlink_outside(rng: random.Random, case: Case) -> str | None:
    outside_log = _outside_log(rng, case)
    mode = rng.choice(["log-absolute", "log-relative", "session-dir", "project-dir"])
    if mode in ("log-absolute", "log-relative"):
        path = _replace_log(rng, case)
        if path is None:
            return None
        target = str(outside_log) if mode == "log-absolute" else os.path.relpath(outside_log, path.parent)
        os.symlink(target, path)
    elif mode == "session-dir":
        projects = project_dirs(case)
        if not projects:
            return None
        path = _unique(rng.choice(projects), "outside-session")
        os.symlink(outside_log.parent, path)
    else:
        path = _unique(case.root, "--outside--")
        os.symlink(case.outside, path)
    return f"symlink-outside({mode}, {path.relative_to(case.root)})"


def fs_symlink_inside(rng: random.Random, case: Case) -> str | None:
    mode = rng.choice(["to-session-dir", "to-log", "to-log-relative", "dangling", "to-root", "to-project"])
    existing = logs(case)
    if mode == "to-session-dir":
        dirs, projects = session_dirs(case), project_dirs(case)
        if not dirs or not projects:
            return None
        path = _unique(rng.choice(projects), "alias")
        os.symlink(rng.choice(dirs), path)
    elif mode in ("to-log", "to-log-relative"):
        if not existing:
            return None
        source = rng.choice(existing)
        path = _replace_log(rng, case)
        if path is None or path == source:
            return None
        os.symlink(source if mode == "to-log" else os.path.relpath(source, path.parent), path)
    elif mode == "dangling":
        path = _replace_log(rng, case)
        if path is None:
            return None
        os.symlink("does-not-exist", path)
    elif mode == "to-root":
        path = _replace_log(rng, case)
        if path is None:
            return None
        os.symlink(case.root, path)
    else:
        projects = project_dirs(case)
        if not projects:
            return None
        path = _unique(case.root, "project-alias")
        os.symlink(rng.choice(projects).name, path)
    return f"symlink({mode}, {path.relative_to(case.root)})"


def _make_socket(case: Case, target: Path) -> None:
    temporary = _unique(case.workdir, "s")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(temporary))
    os.rename(temporary, target)


def fs_special(rng: random.Random, case: Case) -> str | None:
    kind = rng.choice(["fifo", "fifo", "socket", "socket", "device", "directory", "directory-with-log"])
    where = rng.choice(["log", "log", "other-encoding", "extra", "root"])
    if where == "log":
        path = _replace_log(rng, case)
    elif where == "other-encoding":
        dirs = session_dirs(case)
        other = "session.jsonl" if case.compression == "zstd" else "session.jsonl.zstd"
        path = rng.choice(dirs) / other if dirs else None
        if path is not None and os.path.lexists(path):
            return None
    elif where == "extra":
        dirs = session_dirs(case)
        path = _unique(rng.choice(dirs), "extra") if dirs else None
    else:
        path = _unique(case.root, "special")
    if path is None:
        return None
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        _make_socket(case, path)
    elif kind == "device":
        if not IS_ROOT:
            return None
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, rng.choice([3, 5])))  # /dev/null or /dev/zero
    else:
        path.mkdir()
        if kind == "directory-with-log":
            existing = logs(case)
            if existing:
                shutil.copy2(existing[0], path / own_log_name(case))
    return f"special({kind} at {where}, {path.relative_to(case.root)})"


def fs_chmod(rng: random.Random, case: Case) -> str | None:
    choice = rng.choice(["log", "session-dir", "project-dir"])
    candidates = {"log": logs(case), "session-dir": session_dirs(case), "project-dir": project_dirs(case)}[choice]
    if not candidates:
        return None
    path = rng.choice(candidates)
    os.chmod(path, 0)
    case.chmodded.append(str(path))
    return f"chmod000({choice}, {path.relative_to(case.root)}{'' if not IS_ROOT else ', root: bits do not bite'})"


LAYOUT_OPS = [
    "empty-log",
    "empty-session-dir",
    "empty-project",
    "extra-file",
    "root-file",
    "nested-dir",
    "flat-legacy",
    "other-encoding",
    "hardlink",
    "copy-elsewhere",
    "remove-log",
]


def fs_layout(rng: random.Random, case: Case) -> str | None:
    op = rng.choice(LAYOUT_OPS)
    existing = logs(case)
    projects = project_dirs(case)
    dirs = session_dirs(case)
    if op == "empty-log" and existing:
        path = rng.choice(existing)
        _write(path, b"")
    elif op == "empty-session-dir" and projects:
        path = _unique(rng.choice(projects), "empty")
        path.mkdir()
    elif op == "empty-project":
        path = _unique(case.root, "--empty--")
        path.mkdir()
    elif op == "extra-file" and dirs:
        path = _unique(rng.choice(dirs), rng.choice(["notes.txt", "session.jsonl.bak", "SESSION.JSONL", ".swp"]))
        _write(path, b"extra")
    elif op == "root-file":
        path = _unique(case.root, rng.choice(["README.md", "stray.jsonl", "x.jsonl.zstd"]))
        _write(path, b'{"type":"session"}\n')
    elif op == "nested-dir" and dirs:
        path = _unique(rng.choice(dirs), "nested")
        (path / "deeper").mkdir(parents=True)
        _write(path / "deeper" / own_log_name(case), b"{}\n")
    elif op == "flat-legacy" and projects:
        path = _unique(rng.choice(projects), "legacy.jsonl")
        _write(path, b'{"type":"session","version":0,"id":"legacy","createdAt":1,"delegationDepth":0}\n')
    elif op == "other-encoding" and dirs:
        other = "session.jsonl" if case.compression == "zstd" else "session.jsonl.zstd"
        path = rng.choice(dirs) / other
        if os.path.lexists(path):
            return None
        _write(path, b"x")
    elif op == "hardlink" and existing:
        source = rng.choice(existing)
        path = _replace_log(rng, case)
        if path is None or path == source:
            return None
        os.link(source, path)
    elif op == "copy-elsewhere" and existing and projects:
        source = rng.choice(existing)
        directory = _unique(rng.choice(projects), source.parent.name)
        directory.mkdir()
        path = directory / source.name
        shutil.copy2(source, path)
    elif op == "remove-log" and existing:
        path = rng.choice(existing)
        os.unlink(path)
    else:
        return None
    return f"layout({op}, {path.relative_to(case.root)})"


ODD_NAMES = [
    os.fsdecode(b"\xff\xfe-not-utf8"),
    os.fsdecode(b"bad\x80name"),
    "new\nline",
    "tab\there",
    "n" * 255,
    " leading",
    "trailing ",
    "-dash",
    "~0041",
    "~002E",
    "<script>",
    "\u202eevil",
]


def fs_names(rng: random.Random, case: Case) -> str | None:
    name = rng.choice(ODD_NAMES)
    where = rng.choice(["root-file", "project-dir", "session-dir", "session-file"])
    existing = logs(case)
    projects = project_dirs(case)
    if where == "root-file":
        path = _unique(case.root, name)
        _write(path, b"odd")
    elif where == "project-dir":
        path = _unique(case.root, name)
        (path / "s").mkdir(parents=True)
        if existing:
            shutil.copy2(rng.choice(existing), path / "s" / own_log_name(case))
    elif where == "session-dir" and projects:
        path = _unique(rng.choice(projects), name)
        path.mkdir()
        if existing:
            shutil.copy2(rng.choice(existing), path / own_log_name(case))
    elif where == "session-file" and existing:
        path = _unique(rng.choice(existing).parent, name)
        _write(path, b"odd")
    else:
        return None
    return f"name({where}, {os.fsencode(path.name)[:40]!r})"


def fs_live_writer(rng: random.Random, case: Case) -> str | None:
    """A writer thread will append to a healthy log while the case is read."""
    n = 0
    while os.path.lexists(log_path(case.root, header(f"live{n}", created_at=5), case.compression)):
        n += 1
    head = header(f"live{n}", created_at=5)
    log = EventLog(head["id"], time=1_700_000_000_000)
    log.turn_start()
    log.user("live")
    log.turn_end()
    for _ in range(rng.randint(0, 2000)):
        log.turn_start()
        log.turn_end()
    path = Path(log_path(case.root, head, case.compression))
    write_file(path, encode_log(head, log.events, case.compression, batch=64))
    kind: Literal["whole", "partial"] = rng.choice(["whole", "partial"])
    case.live.append(LiveWriterSpec(str(path), kind, case.compression, head["id"], len(log.events), log.time + 1))
    return f"live-writer({kind}, {path.relative_to(case.root)})"


# --------------------------------------------------------------------------- the registry

MUTATIONS: list[tuple[str, float, Mutation]] = [
    ("truncate", 3.0, mut_truncate),
    ("bitflip", 2.0, mut_bitflip),
    ("splice", 1.0, mut_splice),
    ("zstd-frames", 2.0, mut_zstd_frames),
    ("invalid-utf8", 1.5, _text_mutation("invalid-utf8", txt_invalid_utf8)),
    ("bom", 1.0, _text_mutation("bom", txt_bom)),
    ("crlf", 1.0, _text_mutation("crlf", txt_crlf)),
    ("nul", 1.0, _text_mutation("nul", txt_nul)),
    ("blank-lines", 1.0, _text_mutation("blank-lines", txt_blank)),
    ("deep-nesting", 1.0, _text_mutation("deep-nesting", txt_deep_nesting)),
    ("numbers", 2.0, _text_mutation("numbers", txt_numbers)),
    ("duplicate-keys", 1.0, _text_mutation("duplicate-keys", txt_duplicate_keys)),
    ("records", 1.5, _text_mutation("records", txt_records)),
    ("header", 2.5, _text_mutation("header", txt_header)),
    ("event", 2.0, _text_mutation("event", txt_event)),
    ("times", 1.5, _text_mutation("times", txt_times)),
    ("lineage-cycle", 0.7, _text_mutation("lineage-cycle", txt_cycle)),
    ("symlink-loop", 0.8, fs_symlink_loop),
    ("symlink-outside", 1.0, fs_symlink_outside),
    ("symlink-inside", 1.0, fs_symlink_inside),
    ("special-file", 1.0, fs_special),
    ("chmod", 0.5, fs_chmod),
    ("layout", 1.5, fs_layout),
    ("names", 1.0, fs_names),
]


def mutation_names() -> list[str]:
    """Every mutation name, plus the huge-line and live-writer ones drawn by share."""
    return [name for name, _, _ in MUTATIONS] + ["huge-line", "live-writer"]


def make_case(seed: int, config: FuzzConfig | None = None) -> Case:
    """Build the corpus of one case (deterministic in ``seed``)."""
    config = config or FuzzConfig()
    rng = random.Random(seed)
    workdir = Path(tempfile.mkdtemp(prefix="scfz", dir=config.tmp_dir))
    case = Case(seed=seed, workdir=workdir, root=workdir / "r", outside=workdir / "o", compression="none")
    case.outside.mkdir()
    try:
        sources = conformance_cases()
        roll = rng.random()
        if sources and roll < 0.5:
            source = rng.choice(sources)
            meta = json.loads((source / "meta.json").read_text())
            case.compression = "zstd" if meta.get("compression") == "zstd" else "none"
            case.base = base_conformance(rng, case, source)
        else:
            case.compression = rng.choice(["none", "zstd"])
            case.root.mkdir()
            case.base = base_chain(rng, case) if roll > 0.96 else base_writer(rng, case)
        if rng.random() < config.huge_share:
            step = _text_mutation("huge-line", txt_huge(config.huge_bytes))(rng, case)
            if step:
                case.steps.append(step)
        live = rng.random() < config.live_share
        names = [name for name, _, _ in MUTATIONS]
        weights = [weight for _, weight, _ in MUTATIONS]
        for _ in range(rng.randint(0 if case.steps else 1, config.max_mutations)):
            name = rng.choices(names, weights)[0]
            func = dict((n, f) for n, _, f in MUTATIONS)[name]
            step = func(rng, case)
            if step:
                case.steps.append(step)
        if live:  # last, so no other mutation touches the log being appended to
            step = fs_live_writer(rng, case)
            if step:
                case.steps.append(step)
    except BaseException:
        case.cleanup()
        raise
    return case
