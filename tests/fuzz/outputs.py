"""The fuzz suite's **output** tier: hostile output paths, links, planted files, tampered stored state.

Each case builds a small corpus, a directory of foreign files, and one hostile
setup drawn from ``SETUPS`` (an output that is a hard link of a corpus log, a
symbolic link, a path into the corpus through an alias or a bind mount, a
corpus root inside the archive target, planted ``manifest.json.tmp`` /
``.lock`` links, a manifest that is truncated, ill-typed or names files
outside its generation, tampered facts records in an archive or in the facts
cache, ``/dev/full``, a missing directory...). It then runs one CLI command
that writes (``report -o``, ``list -o`` as CSV/JSON/Parquet, ``export``) in a
child interpreter and checks:

* no corpus byte and no foreign byte changed (tree hashes, links included);
* the command exited 0, or 1 (2 for a usage error) with exactly one
  ``Error:`` line and no traceback, within the time limit;
* its peak RSS stayed under ``RSS_BOUND_MB`` (read in the child);
* a successful command left a regular, complete output.

``python -m tests.fuzz.outputs --cases N [--seed S]`` runs the long tier;
``tests/test_fuzz_outputs.py`` runs a seeded sample in ``make test``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz import case_seeds, tier_parser

REPO = Path(__file__).resolve().parents[2]
RSS_BOUND_MB = 600
TIMEOUT_S = 120.0

CHILD = r"""
import os, runpy, sys, atexit
def _rss():
    # VmHWM is this process's own peak (ru_maxrss would inherit the spawning parent's)
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(os.environ["FUZZ_RSS_FILE"], "w") as handle:
        handle.write(peak)
atexit.register(_rss)
sys.argv = ["subagent-catalog", *sys.argv[1:]]
runpy.run_module("subagent_catalog", run_name="__main__")
"""


def tree_state(path: Path) -> str:
    """A digest of every entry below ``path``: names, kinds, link targets and file bytes (links not followed)."""
    digest = hashlib.sha256()
    if not os.path.lexists(path):
        return "absent"
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(dirs + files):
            full = os.path.join(folder, name)
            digest.update(os.path.relpath(full, path).encode("utf-8", "surrogateescape") + b"\0")
            if os.path.islink(full):
                digest.update(b"L" + os.readlink(full).encode("utf-8", "surrogateescape"))
            elif os.path.isfile(full):
                with open(full, "rb") as handle:
                    digest.update(b"F" + hashlib.sha256(handle.read()).digest())
            else:
                digest.update(b"D")
    return digest.hexdigest()


@dataclass
class Context:
    """One case's directories and choices."""

    rng: random.Random
    work: Path
    corpus: Path
    foreign: Path
    command: str
    cleanups: list[Callable[[], None]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def corpus_log(self) -> Path:
        logs = sorted(self.corpus.rglob("session.jsonl*"))
        return self.rng.choice(logs)

    def export(self, out: Path) -> None:
        """A real archive at ``out`` (made before the hostile edit)."""
        done, _ = _run(["export", str(self.corpus), str(out), "--jobs", "1", "-q"], self)
        if done.returncode != 0:
            raise RuntimeError(f"setup export failed: {done.stderr}")


Setup = Callable[[Context], str]


def _fresh(ctx: Context) -> str:
    (ctx.work / "out").mkdir(exist_ok=True)
    return str(ctx.work / "out" / ("archive" if ctx.command.startswith("export") else "result.out"))


def _hard_link_of_log(ctx: Context) -> str:
    target = ctx.work / "result.out"
    os.link(ctx.corpus_log(), target)
    return str(target)


def _symlink_to_log(ctx: Context) -> str:
    target = ctx.work / "result.out"
    os.symlink(ctx.corpus_log(), target)
    return str(target)


def _symlink_to_foreign(ctx: Context) -> str:
    target = ctx.work / "result.out"
    os.symlink(ctx.foreign / "keep.txt", target)
    return str(target)


def _inside_corpus_by_alias(ctx: Context) -> str:
    os.symlink(ctx.corpus, ctx.work / "alias")
    return str(ctx.work / "alias" / "result.out")


def _inside_corpus_by_dotdot(ctx: Context) -> str:
    project = next(p for p in sorted(ctx.corpus.iterdir()) if p.is_dir())
    return str(project / ".." / "result.out")


def _inside_corpus_by_bind_mount(ctx: Context) -> str:
    mount = ctx.work / "mnt"
    mount.mkdir()
    if subprocess.run(["mount", "--bind", str(ctx.corpus), str(mount)], capture_output=True).returncode != 0:
        return _inside_corpus_by_alias(ctx)  # no mount rights: the same identity rule through a link
    ctx.cleanups.append(lambda: subprocess.run(["umount", str(mount)], check=False))
    return str(mount / "result.out")


def _corpus_is_the_target(ctx: Context) -> str:
    return str(ctx.corpus)


def _corpus_inside_the_target(ctx: Context) -> str:
    # the corpus root becomes OUT/gen-000001 (moved there, so the hashes follow it)
    out = ctx.work / "out"
    out.mkdir()
    moved = out / "gen-000001"
    shutil.move(str(ctx.corpus), moved)
    ctx.corpus = moved
    return str(out)


def _existing_directory(ctx: Context) -> str:
    return str(ctx.foreign)


def _missing_directory(ctx: Context) -> str:
    return str(ctx.work / "no" / "such" / "dir" / "result.out")


def _dev_full(ctx: Context) -> str:
    return "/dev/full" if ctx.command != "export" else "/dev/full/archive"


def _proc(ctx: Context) -> str:
    return "/proc/subagent-catalog-fuzz/result.out"


def _foreign_generations(ctx: Context) -> str:
    out = ctx.work / "out"
    (out / "gen-000001").mkdir(parents=True)
    (out / "gen-000001" / "data.bin").write_bytes(ctx.rng.randbytes(64))
    return str(out)


def _archive_with_planted(name: str, kind: str) -> Setup:
    def setup(ctx: Context) -> str:
        out = ctx.work / "archive"
        ctx.export(out)
        planted = out / name
        with contextlib.suppress(FileNotFoundError):
            planted.unlink()
        victim = ctx.corpus_log() if ctx.rng.random() < 0.5 else ctx.foreign / "keep.txt"
        if kind == "symlink":
            os.symlink(victim, planted)
        else:
            os.link(victim, planted)
        return str(out)

    return setup


def _tampered_manifest(ctx: Context) -> str:
    out = ctx.work / "archive"
    ctx.export(out)
    path = out / "manifest.json"
    text = path.read_text()
    manifest = json.loads(text)
    choice = ctx.rng.randrange(7)
    if choice == 0:
        path.write_text(text[: ctx.rng.randrange(len(text))])
    elif choice == 1:
        manifest["tables"]["sessions"]["files"].append("../../" + os.path.relpath(ctx.foreign / "keep.txt", out))
    elif choice == 2:
        manifest["fingerprints"]["files"] = ["gen-000001/**"]
    elif choice == 3:
        manifest["data_dir"] = os.path.relpath(ctx.foreign, out)
    elif choice == 4:
        manifest["generation"] = ctx.rng.choice(["2", None, -1, 10**12, [1]])
    elif choice == 5:
        manifest["tables"] = {"sessions": 1}
    else:
        manifest["tables"]["events"]["files"] = [str(ctx.foreign / "keep.txt")]
    if choice:
        path.write_text(json.dumps(manifest))
    return str(out)


def _blob_bombs(rng: random.Random) -> list[bytes]:
    import pickle

    cyclic: list[Any] = []
    cyclic.append(cyclic)
    shared: list[Any] = [[]]
    for _ in range(24):
        shared = [shared, shared]
    return [
        pickle.dumps(cyclic, protocol=5),
        pickle.dumps(shared, protocol=5),  # 2**24 leaves once expanded
        b"\x80\x05" + rng.randbytes(rng.randrange(1, 200)),
        rng.randbytes(rng.randrange(0, 400)),
        b"",
    ]


def _tampered_facts(ctx: Context) -> str:
    import polars as pl

    out = ctx.work / "archive"
    ctx.export(out)
    manifest = json.loads((out / "manifest.json").read_text())
    for name in manifest["fingerprints"]["files"]:
        path = out / name
        frame = pl.read_parquet(path)
        blobs = frame["facts"].to_list()
        bombs = _blob_bombs(ctx.rng)
        mutated = [
            ctx.rng.choice(bombs) if blob is not None and ctx.rng.random() < 0.7 else _flip(ctx.rng, blob)
            for blob in blobs
        ]
        frame.with_columns(pl.Series("facts", mutated, dtype=pl.Binary)).write_parquet(path)
    return str(out)


def _flip(rng: random.Random, blob: bytes | None) -> bytes | None:
    if not blob:
        return blob
    data = bytearray(blob)
    for _ in range(rng.randrange(1, 4)):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def _tampered_cache(ctx: Context) -> str:
    """The facts cache of the corpus with its records replaced by bombs (re-MAC'd with the real key) or bit flips."""
    from subagent_catalog.store import cache as cache_module

    cache = ctx.work / "cache"
    ctx.env["SUBAGENT_CATALOG_CACHE"] = str(cache)
    done, _ = _run(["summary", str(ctx.corpus), "-q"], ctx)
    if done.returncode != 0:
        raise RuntimeError(f"setup summary failed: {done.stderr}")
    key = cache_module.read_key(str(cache))
    for compression in ("none", "zstd"):
        path = cache_module.cache_file(ctx.corpus, compression, directory=str(cache))  # type: ignore[arg-type]
        if not os.path.exists(path):
            continue
        if key is None or ctx.rng.random() < 0.3:  # damaged without the key: the whole file is ignored
            data = bytearray(Path(path).read_bytes())
            data[ctx.rng.randrange(len(data))] ^= 1 << ctx.rng.randrange(8)
            Path(path).write_bytes(bytes(data))
            continue
        entries, _status = cache_module._read_cache_file(path, str(ctx.corpus), compression, key)  # type: ignore[arg-type]
        bombs = _blob_bombs(ctx.rng)
        tampered = {
            name: (*entry[:-1], ctx.rng.choice(bombs) if ctx.rng.random() < 0.7 else _flip(ctx.rng, entry[-1]) or b"")
            for name, entry in entries.items()
        }
        cache_module._write_cache_file(path, tampered, str(ctx.corpus), compression, key)  # type: ignore[arg-type]
    return _fresh(ctx)


def _bomb(kind: str) -> Setup:
    """A child whose log exhausts a parse budget (a few KB on disk with zstd), then a fresh target."""

    def setup(ctx: Context) -> str:
        from subagent_catalog.read.limits import MAX_LOG_EVENTS, MAX_LOG_VALUES
        from subagent_catalog.read.zstdframes import compress_frame
        from subagent_catalog.synth.writer import encode_log, header, log_path, write_file

        bad = header("bomb", created_at=8, parent="P", subagent=True)
        if kind == "values":
            members = MAX_LOG_VALUES + ctx.rng.randrange(1, 100_000)
            body = b'{"type":"message/user","seq":1,"time":1,"data":[' + b",".join([b"{}"] * members) + b"]}\n"
        else:
            count = MAX_LOG_EVENTS + ctx.rng.randrange(1, 50_000)
            body = b"".join(b'{"seq":%d}\n' % i for i in range(1, count + 1))
        zstd = any(ctx.corpus.rglob("session.jsonl.zstd"))
        head = encode_log(bad, [], "none")
        data = compress_frame(head) + compress_frame(body) if zstd else head + body
        write_file(log_path(ctx.corpus, bad, "zstd" if zstd else "none"), data)
        return _fresh(ctx)

    return setup


SETUPS: dict[str, Setup] = {
    "fresh": _fresh,
    "bomb-values": _bomb("values"),
    "bomb-events": _bomb("events"),
    "hard-link-of-log": _hard_link_of_log,
    "symlink-to-log": _symlink_to_log,
    "symlink-to-foreign": _symlink_to_foreign,
    "inside-corpus-alias": _inside_corpus_by_alias,
    "inside-corpus-dotdot": _inside_corpus_by_dotdot,
    "inside-corpus-bind-mount": _inside_corpus_by_bind_mount,
    "corpus-is-target": _corpus_is_the_target,
    "corpus-inside-target": _corpus_inside_the_target,
    "existing-directory": _existing_directory,
    "missing-directory": _missing_directory,
    "dev-full": _dev_full,
    "proc": _proc,
    "foreign-generations": _foreign_generations,
    "planted-manifest-tmp-symlink": _archive_with_planted("manifest.json.tmp", "symlink"),
    "planted-manifest-symlink": _archive_with_planted("manifest.json", "symlink"),
    "planted-manifest-hard-link": _archive_with_planted("manifest.json", "link"),
    "planted-lock-symlink": _archive_with_planted(".lock", "symlink"),
    "tampered-manifest": _tampered_manifest,
    "tampered-facts": _tampered_facts,
    "tampered-cache": _tampered_cache,
}
EXPORT_ONLY = {
    "corpus-inside-target",
    "foreign-generations",
    "planted-manifest-tmp-symlink",
    "planted-manifest-symlink",
    "planted-manifest-hard-link",
    "planted-lock-symlink",
    "tampered-manifest",
    "tampered-facts",
}
COMMANDS = ("report", "list-csv", "list-json", "list-parquet", "export", "export-events")


def _run(argv: list[str], ctx: Context) -> tuple[subprocess.CompletedProcess[str], int | None]:
    """Run the CLI in a child interpreter; its result and peak RSS in KiB."""
    rss_file = ctx.work / f"rss-{time.monotonic_ns()}"
    env = {**os.environ, **ctx.env, "FUZZ_RSS_FILE": str(rss_file), "PYTHONPATH": str(REPO)}
    env.setdefault("SUBAGENT_CATALOG_CACHE", str(ctx.work / "cache"))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *argv],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=TIMEOUT_S,
        env=env,
        cwd=str(ctx.work),
        check=False,
    )
    rss: int | None = None
    with contextlib.suppress(OSError, ValueError):
        rss = int(rss_file.read_text())
    return done, rss


def _argv(command: str, corpus: Path, target: str) -> list[str]:
    if command == "report":
        return ["report", str(corpus), "-o", target, "-q"]
    if command.startswith("list-"):
        return ["list", str(corpus), "P", "--format", command[5:], "-o", target, "-q"]
    return ["export", str(corpus), target, "-q", "--jobs", "1", *(["--events"] if command == "export-events" else [])]


@dataclass
class Result:
    """One case: what ran and which invariants failed."""

    seed: int
    setup: str
    command: str
    code: int | None
    seconds: float
    rss_mb: float | None
    violations: list[str]
    stderr: str


def _corpus(root: Path, rng: random.Random) -> None:
    from tests.helpers import base_tree, header, write_raw

    compression = rng.choice(["none", "zstd"])
    base_tree(root, compression)  # type: ignore[arg-type]
    if rng.random() < 0.5:  # a damaged child too: outputs must carry diagnostics, not fail
        write_raw(root, header("c-bad", created_at=9, parent="P", subagent=True), b"{torn", compression)  # type: ignore[arg-type]


def run_case(seed: int, *, setup: str | None = None, command: str | None = None) -> Result:
    """Build and run one case in a fresh temporary directory; return what the invariants found."""
    rng = random.Random(seed)
    chosen_command = command or rng.choice(COMMANDS)
    names = [name for name in SETUPS if chosen_command.startswith("export") or name not in EXPORT_ONLY]
    chosen_setup = setup or rng.choice(names)
    with tempfile.TemporaryDirectory(prefix="fuzz-out-") as work_dir:
        work = Path(work_dir)
        ctx = Context(rng, work, work / "corpus", work / "foreign", chosen_command)
        _corpus(ctx.corpus, rng)
        ctx.foreign.mkdir()
        (ctx.foreign / "keep.txt").write_bytes(rng.randbytes(100))
        try:
            target = SETUPS[chosen_setup](ctx)
            corpus_before, foreign_before = tree_state(ctx.corpus), tree_state(ctx.foreign)
            started = time.perf_counter()
            violations: list[str] = []
            rss: int | None = None
            code: int | None = None
            stderr = ""
            try:
                done, rss = _run(_argv(chosen_command, ctx.corpus, target), ctx)
                code, stderr = done.returncode, done.stderr
            except subprocess.TimeoutExpired:
                violations.append(f"timeout after {TIMEOUT_S:.0f} s")
            seconds = time.perf_counter() - started
            if tree_state(ctx.corpus) != corpus_before:
                violations.append("corpus changed")
            if tree_state(ctx.foreign) != foreign_before:
                violations.append("foreign files changed")
            if code is not None:
                violations += _exit_violations(code, stderr)
            if rss is not None and rss / 1024 > RSS_BOUND_MB:
                violations.append(f"peak RSS {rss / 1024:.0f} MB > {RSS_BOUND_MB} MB")
            if code == 0 and not target.startswith("/dev/") and not _complete(chosen_command, target):
                violations.append("exit 0 without a complete output")
        finally:
            for cleanup in reversed(ctx.cleanups):
                cleanup()
    return Result(
        seed,
        chosen_setup,
        chosen_command,
        code,
        seconds,
        None if rss is None else rss / 1024,
        violations,
        stderr[-600:],
    )


def _exit_violations(code: int, stderr: str) -> list[str]:
    out: list[str] = []
    if "Traceback" in stderr:
        out.append("traceback")
    if code not in (0, 1, 2):  # 2: a usage error (click), also one line
        out.append(f"exit status {code}")
    if code in (1, 2):
        errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
        if len(errors) != 1:
            out.append(f"{len(errors)} Error: lines")
        if any(ch in stderr for ch in "\x1b\x9b\u202e"):
            out.append("raw control characters on stderr")
    return out


def _complete(command: str, target: str) -> bool:
    path = Path(target)
    if command.startswith("export"):
        try:
            manifest = json.loads((path / "manifest.json").read_text())
        except (OSError, ValueError):
            return False
        files = [name for entry in (*manifest["tables"].values(), manifest["fingerprints"]) for name in entry["files"]]
        return all((path / name).is_file() for name in files)
    return path.is_file() and not path.is_symlink() and path.stat().st_size > 0


def main(argv: list[str] | None = None) -> int:
    """Run ``--cases`` seeded cases; print a summary; exit 1 on any violation."""
    parser = tier_parser("tests.fuzz.outputs", __doc__)
    args = parser.parse_args(argv)
    seeds = case_seeds(args)
    started = time.perf_counter()
    results = [run_case(seed) for seed in seeds]
    bad = [r for r in results if r.violations]
    summary = {
        "cases": len(results),
        "seconds": round(time.perf_counter() - started, 1),
        "max_rss_mb": max((r.rss_mb or 0 for r in results), default=0),
        "rss_bound_mb": RSS_BOUND_MB,
        "by_setup": Counter(r.setup for r in results),
        "by_exit": Counter(str(r.code) for r in results),
        "violations": [vars(r) for r in bad],
    }
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "fuzz-outputs.json").write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps({k: v for k, v in summary.items() if k != "violations"}, default=str))
    for result in bad:
        print(f"seed {result.seed} {result.setup} {result.command}: {result.violations} {result.stderr!r}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
