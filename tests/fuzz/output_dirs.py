"""The fuzz suite's **output-directory** tier: ``show --tree -o DIR`` against hostile directories and ids.

Each case writes a small run (a top ``run`` and up to a dozen sessions below it, their ids drawn
from a hostile pool: ``index``, ``manifest``, Windows device names, ids differing only in case or in
Unicode normalisation, an id spelled like another's page name, dots, slashes, long ids, a second log
with an id already used), a directory of foreign files, and one hostile setup of ``DIR`` from
``SETUPS``: missing, empty, the user's files (under page names too), a previous run's pages with a
page replaced by a user's file, a symbolic link (elsewhere or into the corpus), a hard link of a
corpus log, a FIFO or a directory, the manifest damaged or forged, ``DIR`` a link, a file, a FIFO,
inside the corpus or holding it, read-only, or two runs at once. It then runs
``show ROOT run --tree -o DIR`` in a child interpreter (``tests.fuzz.outputs.CHILD``) and checks
``INVARIANTS``.

``python -m tests.fuzz.output_dirs --cases N [--seed S]`` runs the long tier (``make fuzz-outputs``
runs it after the file tier); ``tests/test_fuzz_outputs.py`` runs every setup once and a seeded
sample in ``make test``.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import os
import random
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz import case_seeds, tier_parser
from tests.fuzz.outputs import CHILD, REPO, RSS_BOUND_MB, TIMEOUT_S, _exit_violations, tree_state

INVARIANTS = (
    "exit 0, or 1 (2 for a usage error) with exactly one Error: line, no traceback, no raw control characters",
    "no hang: the command ends within TIMEOUT_S",
    "no corpus byte and no foreign byte changed (tree digests, links included)",
    "nothing written outside DIR: every other entry of the case's directory is unchanged",
    "never a user's file replaced: every entry of DIR that this command did not write keeps its kind, "
    "inode, bytes and link target",
    "no temporary file left in DIR",
    "peak RSS under RSS_BOUND_MB",
    "after exit 0: a complete manifest naming exactly the pages written, each with its bytes' SHA-256; one "
    "page per distinct id of the tree, each titled with its own id (no two ids share a page); every link "
    "on every page resolves inside DIR",
)

HOSTILE_IDS = [
    "index",
    "manifest",
    "con",
    "CON",
    "nul.tar",
    "P",
    "p",
    "build step",
    "build_step-af47ceea32",
    "e\u0301t\u00e9",
    "\u00e9t\u00e9",
    "..",
    ".hidden",
    "a/b",
    "../x",
    "javascript:alert(1)",
    "x" * 200,
    "X" * 200,
    "_-x_d6b96a97d147daaae49eb87a5ca7bfbc",
    "plain-child",
    "\u202eevil",
    "tab\there",
    "index.html",
    "run.children-2",
]


@dataclass
class Context:
    """One case's directories and choices."""

    rng: random.Random
    work: Path
    corpus: Path
    foreign: Path
    out: Path
    ids: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cleanups: list[Callable[[], None]] = field(default_factory=list)
    concurrent: bool = False
    in_process: bool = False
    """Run the CLI in this interpreter (``CliRunner``: the fast sample; no hang bound, no RSS)."""
    top: str = "run"
    """The session whose tree the case's run writes."""
    parents: dict[str, str | None] = field(default_factory=dict)
    duplicated: set[str] = field(default_factory=set)
    ours: dict[str, str] = field(default_factory=dict)
    """The files a clean run of the setup wrote into DIR, with their digests."""
    excluded: list[Path] = field(default_factory=list)
    """Paths of the case's directory the outside check skips (DIR's own parents, the harness's files)."""


def _write_corpus(ctx: Context) -> None:
    from subagent_catalog.synth.writer import EventLog, header, write_session

    ids = ctx.rng.sample(HOSTILE_IDS, ctx.rng.randrange(2, 10))
    parents = ["run"]
    for index, sid in enumerate(["run", *ids]):
        parent = None if sid == "run" else ctx.rng.choice(parents)
        log = EventLog(sid)
        log.turn_start()
        log.user(f"the task of {sid!r}")
        log.tool_round(f"call-{index}", "ok")
        log.turn_end(ctx.rng.choice(["completed", "error"]))
        cwd = "/w/second" if ctx.rng.random() < 0.1 and sid != "run" else "/w/app"  # sometimes a second log
        write_session(ctx.corpus, header(sid, created_at=1 + index, cwd=cwd, parent=parent, subagent=bool(parent)),
                      log.events, "none")  # fmt: skip
        ctx.parents[sid] = parent
        if parent is not None:
            parents.append(sid)
        if parent is not None and ctx.rng.random() < 0.1:  # a second log with the same id: one page
            ctx.duplicated.add(sid)
            write_session(ctx.corpus, header(sid, created_at=50 + index, cwd="/w/third", parent=parent,
                                             subagent=True), log.events, "none")  # fmt: skip
    ctx.ids = ["run", *ids]


def _previous_run(ctx: Context, top: str | None = None) -> None:
    """A clean run into DIR first (of ``top``'s tree, in this interpreter); what it wrote is the command's
    own (``ctx.ours``)."""
    in_process, ctx.in_process = ctx.in_process, True
    try:
        done, _ = _run(_argv(ctx, top), ctx)
    finally:
        ctx.in_process = in_process
    if done.returncode != 0:
        raise RuntimeError(f"setup run failed: {done.stderr}")
    ctx.ours = json.loads((ctx.out / "manifest.json").read_bytes())["files"]


def _pages(ctx: Context) -> list[Path]:
    return sorted(path for path in ctx.out.iterdir() if path.name.endswith(".html"))


Setup = Callable[[Context], None]


def _missing(ctx: Context) -> None:
    ctx.out = ctx.work / "a" / "b" / "site"
    ctx.excluded.append(ctx.work / "a")


def _empty(ctx: Context) -> None:
    ctx.out.mkdir()


def _user_files(ctx: Context) -> None:
    from subagent_catalog.views.page_names import page_file

    ctx.out.mkdir()
    names = ["index.html", "notes.txt", *(page_file(sid) for sid in ctx.rng.sample(ctx.ids, 2))]
    for name in names:
        (ctx.out / name).write_bytes(ctx.rng.randbytes(50))


def _rerun(ctx: Context) -> None:
    children = [sid for sid in ctx.ids if sid != "run" and sid not in ctx.duplicated]
    if not children:
        children = ["run"]
    choice = ctx.rng.randrange(3)
    if choice == 0:  # a smaller tree this time: the previous run's other pages are stale
        _previous_run(ctx)
        ctx.top = ctx.rng.choice(children)
    else:  # a larger tree (or the same) this time: pages are added
        _previous_run(ctx, ctx.rng.choice(children) if choice == 1 else None)
    (ctx.out / "notes.txt").write_text("the user's notes")
    if ctx.rng.random() < 0.5:
        page = ctx.rng.choice(_pages(ctx))
        page.write_text(page.read_text() + "<!-- edited by the user -->")


def _planted(kind: str) -> Setup:
    def setup(ctx: Context) -> None:
        _previous_run(ctx)
        page = ctx.rng.choice(_pages(ctx))
        page.unlink()
        log = next(ctx.corpus.rglob("session.jsonl"))
        if kind == "symlink-foreign":
            os.symlink(ctx.foreign / "keep.txt", page)
        elif kind == "symlink-corpus":
            os.symlink(log, page)
        elif kind == "hard-link-corpus":
            os.link(log, page)
        elif kind == "fifo":
            os.mkfifo(page)
        elif kind == "directory":
            page.mkdir()
            (page / "inside.txt").write_text("mine")
        else:  # the user's own file under the page's name
            page.write_bytes(ctx.rng.randbytes(80))

    return setup


def _damaged_manifest(ctx: Context) -> None:
    _previous_run(ctx)
    path = ctx.out / "manifest.json"
    data = bytearray(path.read_bytes())
    choice = ctx.rng.randrange(5)
    if choice == 0:
        data = data[: ctx.rng.randrange(len(data))]
    elif choice == 1:
        for _ in range(ctx.rng.randrange(1, 6)):
            data[ctx.rng.randrange(len(data))] ^= 1 << ctx.rng.randrange(8)
    elif choice == 2:
        data = bytearray(b"[" * 100_000)
    elif choice == 3:
        data = bytearray(json.dumps({"format": "subagent-catalog output site", "files": [1, 2]}).encode())
    else:
        data = bytearray(b"")
    path.write_bytes(bytes(data))


def _forged_manifest(ctx: Context) -> None:
    _previous_run(ctx)
    path = ctx.out / "manifest.json"
    manifest = json.loads(path.read_text())
    (ctx.out / "keep.html").write_text("the user's page")
    entries = {
        os.path.relpath(ctx.foreign / "keep.txt", ctx.out): "0" * 64,
        str(ctx.foreign / "keep.txt"): None,
        "keep.html": ctx.rng.choice([None, "0" * 64, hashlib.sha256(b"other").hexdigest()]),
        "index.html": None,
        "../corpus": None,
    }
    chosen = ctx.rng.sample(sorted(entries), ctx.rng.randrange(1, len(entries) + 1))
    manifest["files"].update({name: entries[name] for name in chosen})
    path.write_text(json.dumps(manifest))


def _manifest_kind(kind: str) -> Setup:
    def setup(ctx: Context) -> None:
        _previous_run(ctx)
        path = ctx.out / "manifest.json"
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "symlink":
            os.symlink(ctx.foreign / "keep.txt", path)
        else:
            path.mkdir()

    return setup


def _dir_symlink_foreign(ctx: Context) -> None:
    os.symlink(ctx.foreign, ctx.out)


def _dir_symlink_corpus(ctx: Context) -> None:
    os.symlink(ctx.corpus, ctx.out)


def _dir_inside_corpus(ctx: Context) -> None:
    ctx.out = ctx.corpus / "pages"


def _dir_holds_corpus(ctx: Context) -> None:
    ctx.out = ctx.work


def _dir_is_file(ctx: Context) -> None:
    ctx.out.write_bytes(b"the user's file")


def _dir_is_fifo(ctx: Context) -> None:
    os.mkfifo(ctx.out)


def _read_only(ctx: Context) -> None:
    _previous_run(ctx)
    done = subprocess.run(["mount", "--bind", str(ctx.out), str(ctx.out)], capture_output=True, check=False)
    if done.returncode == 0:
        ctx.cleanups.append(lambda: subprocess.run(["umount", str(ctx.out)], capture_output=True, check=False))
        subprocess.run(["mount", "-o", "remount,bind,ro", str(ctx.out)], capture_output=True, check=False)
    else:  # no mount rights: the mode bits stop a user who is not root
        ctx.out.chmod(0o555)
        ctx.cleanups.append(lambda: ctx.out.chmod(0o755))


def _concurrent(ctx: Context) -> None:
    ctx.concurrent = True
    if ctx.rng.random() < 0.5:
        _previous_run(ctx)


SETUPS: dict[str, Setup] = {
    "missing": _missing,
    "empty": _empty,
    "user-files": _user_files,
    "rerun": _rerun,
    "planted-user-file": _planted("file"),
    "planted-symlink-foreign": _planted("symlink-foreign"),
    "planted-symlink-corpus": _planted("symlink-corpus"),
    "planted-hard-link-corpus": _planted("hard-link-corpus"),
    "planted-fifo": _planted("fifo"),
    "planted-directory": _planted("directory"),
    "manifest-damaged": _damaged_manifest,
    "manifest-forged": _forged_manifest,
    "manifest-fifo": _manifest_kind("fifo"),
    "manifest-symlink": _manifest_kind("symlink"),
    "manifest-directory": _manifest_kind("directory"),
    "dir-symlink-foreign": _dir_symlink_foreign,
    "dir-symlink-corpus": _dir_symlink_corpus,
    "dir-inside-corpus": _dir_inside_corpus,
    "dir-holds-corpus": _dir_holds_corpus,
    "dir-is-file": _dir_is_file,
    "dir-is-fifo": _dir_is_fifo,
    "read-only": _read_only,
    "concurrent": _concurrent,
}


def _argv(ctx: Context, top: str | None = None) -> list[str]:
    return ["show", str(ctx.corpus), top or ctx.top, "--tree", "-o", str(ctx.out), "--no-cache"]


def _child(argv: list[str], ctx: Context) -> tuple[subprocess.Popen[str], Path]:
    rss_file = ctx.work / f"rss-{time.monotonic_ns()}"
    env = {**os.environ, **ctx.env, "FUZZ_RSS_FILE": str(rss_file), "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=env,
        cwd=str(ctx.work),
    )
    return process, rss_file


def _run(argv: list[str], ctx: Context) -> tuple[subprocess.CompletedProcess[str], int | None]:
    """Run the CLI in a child interpreter (killed past ``TIMEOUT_S``); its result and peak RSS in KiB."""
    if ctx.in_process:
        from click.testing import CliRunner

        from subagent_catalog.cli import main as cli

        done = CliRunner().invoke(cli, argv, env={"SUBAGENT_CATALOG_CACHE": "off"})
        if done.exception is not None and not isinstance(done.exception, SystemExit):
            return subprocess.CompletedProcess(
                argv, 99, done.stdout, f"{done.stderr}Traceback: {done.exception!r}"
            ), None
        return subprocess.CompletedProcess(argv, done.exit_code, done.stdout, done.stderr), None
    process, rss_file = _child(argv, ctx)
    try:
        out, err = process.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    rss: int | None = None
    with contextlib.suppress(OSError, ValueError):
        rss = int(rss_file.read_text())
    with contextlib.suppress(OSError):
        rss_file.unlink()
    return subprocess.CompletedProcess(argv, process.returncode, out, err), rss


def _entry(path: Path) -> tuple[object, ...]:
    """What a user's entry is: kind, inode, and its bytes' digest or link target."""
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return ("link", info.st_ino, os.readlink(path))
    if stat.S_ISREG(info.st_mode):
        return ("file", info.st_ino, hashlib.sha256(path.read_bytes()).hexdigest())
    if stat.S_ISDIR(info.st_mode):
        return ("dir", info.st_ino, tree_state(path))
    return ("other", info.st_ino, stat.S_IFMT(info.st_mode))


def _users_entries(ctx: Context) -> dict[str, tuple[object, ...]]:
    """DIR's entries that are not this command's: all but the manifest and the pages a previous run wrote
    (while they still hold the bytes it wrote)."""
    if not ctx.out.is_dir():
        return {}
    users = {}
    for name in os.listdir(ctx.out):
        entry = _entry(ctx.out / name)
        if name == "manifest.json" or (entry[0] == "file" and ctx.ours.get(name) == entry[2]):
            continue
        users[name] = entry
    return users


def _outside_state(ctx: Context) -> str:
    """A digest of the case's directory except DIR (and what it resolves to), the corpus, the foreign files
    and the harness's own files."""
    skip = {os.path.realpath(p) for p in (ctx.out, ctx.corpus, ctx.foreign, *ctx.excluded)}
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(ctx.work):
        dirs[:] = sorted(d for d in dirs if os.path.realpath(os.path.join(folder, d)) not in skip)
        for name in sorted(files + [d for d in dirs]):
            full = os.path.join(folder, name)
            if os.path.realpath(full) in skip or name.startswith("rss-"):
                continue
            digest.update(os.path.relpath(full, ctx.work).encode("utf-8", "surrogateescape"))
            if os.path.islink(full):
                digest.update(b"L" + os.readlink(full).encode("utf-8", "surrogateescape"))
            elif os.path.isfile(full):
                digest.update(b"F" + hashlib.sha256(Path(full).read_bytes()).digest())
    return digest.hexdigest()


def _below(ctx: Context, sid: str) -> bool:
    """Whether ``sid`` is in the tree of ``ctx.top``."""
    seen: set[str] = set()
    node: str | None = sid
    while node is not None and node not in seen:
        if node == ctx.top:
            return True
        seen.add(node)
        node = ctx.parents.get(node)
    return False


def _complete(ctx: Context, users: dict[str, tuple[object, ...]]) -> list[str]:
    """What is wrong with DIR after exit 0 (see ``INVARIANTS``); ``users`` are the user's entries before."""
    from subagent_catalog.views.page_names import page_file

    out = ctx.out
    wrong: list[str] = []
    try:
        if not stat.S_ISREG((out / "manifest.json").lstat().st_mode):
            return ["exit 0 and the manifest is not a regular file"]
        manifest = json.loads((out / "manifest.json").read_bytes())
    except (OSError, ValueError, RecursionError):
        return ["exit 0 without a readable manifest"]
    files = manifest.get("files", {})
    if manifest.get("complete") is not True:
        wrong.append("manifest not complete")
    for name, digest in files.items():
        path = out / name
        if not path.is_file() or path.is_symlink() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            wrong.append(f"{name}: not the bytes the manifest records")
    distinct = {sid for sid in ctx.ids if _below(ctx, sid)}
    for name in os.listdir(out):
        if name != "manifest.json" and name not in files and name not in users:
            wrong.append(f"{name!r} left in DIR: neither the user's nor named by the manifest")
    names = {page_file(sid) for sid in distinct}
    if len(names) != len(distinct):
        wrong.append("two ids share a page name")
    for sid in distinct:
        path = out / page_file(sid)
        if page_file(sid) not in files:
            wrong.append(f"no page for {sid!r}")
            continue
        page = path.read_text(encoding="utf-8", errors="replace")
        heading = re.search(r"<h1>(.*?)</h1>", page, re.S)  # the page's session: its whole id in the heading
        named = r'<code class="nm-id[^"]*" title="([^"]*)"|^Session <code>(.*?)</code>'
        shown = heading and re.search(named, heading[1])
        if not shown or html.unescape(shown.group(1) if shown.group(1) is not None else shown.group(2)) != sid:
            wrong.append(f"the page of {sid!r} shows another session")
    for name in files:
        text = (out / name).read_text(encoding="utf-8", errors="replace")
        for href in re.findall(r'href="([^"#]+)"', text):
            if "/" in href or not (out / html.unescape(href)).is_file():
                wrong.append(f"{name}: link {href!r} does not resolve in DIR")
    return wrong


@dataclass
class Result:
    """One case: what ran and which invariants failed."""

    seed: int
    setup: str
    code: int | None
    seconds: float
    rss_mb: float | None
    violations: list[str]
    stderr: str


def run_case(seed: int, *, setup: str | None = None, in_process: bool = False) -> Result:
    """Build and run one case in a fresh temporary directory; return what the invariants found.

    ``in_process`` runs the CLI with ``CliRunner`` (fast; two runs at once still run as children).
    """
    rng = random.Random(seed)
    chosen = setup or rng.choice(sorted(SETUPS))
    with tempfile.TemporaryDirectory(prefix="fuzz-dirs-") as work_dir:
        work = Path(work_dir)
        ctx = Context(rng, work, work / "corpus", work / "foreign", work / "site", [])
        ctx.env["SUBAGENT_CATALOG_CACHE"] = "off"
        ctx.in_process = in_process
        _write_corpus(ctx)
        ctx.foreign.mkdir()
        (ctx.foreign / "keep.txt").write_bytes(rng.randbytes(100))
        violations: list[str] = []
        code: int | None = None
        stderr = ""
        rss: int | None = None
        started = time.perf_counter()
        try:
            SETUPS[chosen](ctx)
            corpus_before, foreign_before = tree_state(ctx.corpus), tree_state(ctx.foreign)
            outside_before, users_before = _outside_state(ctx), _users_entries(ctx)
            started = time.perf_counter()
            try:
                if ctx.concurrent:
                    runs = [_child(_argv(ctx), ctx) for _ in range(2)]
                    results = [process.communicate(timeout=TIMEOUT_S) for process, _ in runs]
                    codes = [process.returncode for process, _ in runs]
                    for process_code, (_, err) in zip(codes, results, strict=True):
                        violations += _exit_violations(process_code, err)
                    code = 0 if 0 in codes else max(codes)
                    stderr = " | ".join(err for _, err in results)
                    if 0 not in codes:
                        violations.append(f"neither of two concurrent runs succeeded: {codes}")
                else:
                    done, rss = _run(_argv(ctx), ctx)
                    code, stderr = done.returncode, done.stderr
                    violations += _exit_violations(code, stderr)
            except subprocess.TimeoutExpired:
                violations.append(f"timeout after {TIMEOUT_S:.0f} s")
            seconds = time.perf_counter() - started
            if tree_state(ctx.corpus) != corpus_before:
                violations.append("corpus changed")
            if tree_state(ctx.foreign) != foreign_before:
                violations.append("foreign files changed")
            if _outside_state(ctx) != outside_before:
                violations.append("a byte written outside DIR")
            users_after = _users_entries(ctx)
            for name, entry in users_before.items():
                if users_after.get(name) != entry:
                    violations.append(f"the user's {name!r} was replaced or removed")
            if ctx.out.is_dir() and any(n.endswith(".tmp") and n.startswith(".") for n in os.listdir(ctx.out)):
                violations.append("a temporary file left in DIR")
            if rss is not None and rss / 1024 > RSS_BOUND_MB:
                violations.append(f"peak RSS {rss / 1024:.0f} MB > {RSS_BOUND_MB} MB")
            if code == 0:
                violations += _complete(ctx, users_before)
        finally:
            for cleanup in reversed(ctx.cleanups):
                cleanup()
            with contextlib.suppress(OSError):
                if ctx.out.is_dir() and not ctx.out.is_symlink():
                    ctx.out.chmod(0o755)
            shutil.rmtree(work / "a", ignore_errors=True)
    return Result(seed, chosen, code, seconds, None if rss is None else rss / 1024, violations, stderr[-600:])


def main(argv: list[str] | None = None) -> int:
    """Run ``--cases`` seeded cases; print a summary; exit 1 on any violation."""
    parser = tier_parser("tests.fuzz.output_dirs", __doc__)
    args = parser.parse_args(argv)
    seeds = case_seeds(args)
    started = time.perf_counter()
    results = []
    for seed in seeds:
        results.append(run_case(seed))
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
    (Path(args.out) / "fuzz-output-dirs.json").write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps({k: v for k, v in summary.items() if k != "violations"}, default=str))
    for result in bad:
        print(f"seed {result.seed} {result.setup}: {result.violations} {result.stderr!r}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
