"""Time the HTML report of a large corpus: writing it, and opening it in headless Chromium.

Usage:
    .venv/bin/python benchmarks/report_scale.py [--sessions 20000] [--corpus DIR] [--rounds 3]
    .venv/bin/python benchmarks/report_scale.py --cli [--sessions 5000] [--rounds 3]   (make bench-report)

``--cli`` times what a user waits for: ``subagent-catalog report ROOT -o FILE`` in a fresh process
(imports included), wall and CPU seconds, on ``data/sample`` and on the generated corpus, each run
``--rounds`` times with the facts cache (``~/.cache``) warm after the first; it also checks that no
chart library (altair, vl-convert) is imported on the way.

Generates ``--sessions`` sessions (seed 1, zstd, 3 % damaged; or reads ``--corpus``), reads the
corpus once (not timed here: ``cold_read.py`` times reads), then prints, per round:

* ``import``: the report's modules imported in this process (first round only; a CLI run pays
  it once);
* the Runs section alone (``run_summary`` + ``runs_section``: run facts, trees, timelines);
* ``write_report``: ``write_report`` wall and CPU time (the listing model, the Runs section, the
  charts, the page), the file's size;
* ``open``: in headless system Chromium, the page's ``loadEventEnd`` from the navigation timing
  (parse, style, the inline script's first tree render) and the time until ``#runs`` is visible,
  both from ``page.goto``;
* the 1,000-child timeline: ``timeline_html`` of a generated hub, its time and SVG node count.

The machine's load average is printed with each figure: on a loaded machine the wall times are
the machine's, not the code's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _load() -> str:
    return "load " + " ".join(f"{value:.1f}" for value in os.getloadavg())


def _open(path: Path) -> tuple[float, float]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--headless"])
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            started = time.perf_counter()
            page.goto(path.resolve().as_uri(), wait_until="load")
            page.locator("#runs").wait_for(state="visible")
            visible = time.perf_counter() - started
            load = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000
            return load, visible
        finally:
            browser.close()


_CLI = """
import sys
from subagent_catalog.cli import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    if done.code:
        raise
found = sorted({name.split(".")[0] for name in sys.modules} & {"altair", "vl_convert"})
if found:
    raise SystemExit(f"chart libraries imported: {found}")
"""


def _cli(root: Path, out: Path, rounds: int, what: str) -> None:
    """Time ``subagent-catalog report ROOT -o OUT`` in fresh processes, ``rounds`` times."""
    import resource
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for round_ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", _CLI, "report", str(root), "-o", str(out)],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        print(
            f"{what}: `subagent-catalog report` round {round_ + 1} ({'cold cache' if round_ == 0 else 'warm'}): "
            f"wall {wall:5.2f} s, CPU {cpu:5.2f} s, {out.stat().st_size / 2**20:.2f} MiB ({_load()})",
            flush=True,
        )


def _cli_main(args: argparse.Namespace) -> int:
    from subagent_catalog.synth.generate import generate

    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "report.html"
        _cli(REPO / "data" / "sample", out, args.rounds, "data/sample")
        root = args.corpus
        if root is None:
            root = Path(scratch) / "corpus"
            generate(root, sessions=args.sessions, seed=1, compression="zstd", damaged_fraction=0.03, jobs=2)
        _cli(root, out, args.rounds, f"{args.sessions:,} sessions" if args.corpus is None else str(root))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark.

    Examples:
        >>> main.__name__
        'main'
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cli", action="store_true", help="time the CLI in fresh processes (sample and corpus)")
    args = parser.parse_args(argv)
    if args.cli:
        if "--sessions" not in (argv if argv is not None else sys.argv):
            args.sessions = 5_000
        return _cli_main(args)
    import polars as pl

    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.synth.generate import generate
    from subagent_catalog.views.report import write_report
    from subagent_catalog.views.timeline_view import timeline_html

    with tempfile.TemporaryDirectory() as scratch:
        root = args.corpus
        if root is None:
            root = Path(scratch) / "corpus"
            started = time.perf_counter()
            generate(root, sessions=args.sessions, seed=1, compression="zstd", damaged_fraction=0.03, jobs=2)
            print(f"generated {args.sessions:,} sessions in {time.perf_counter() - started:.1f} s", flush=True)
        corpus = read_corpus(root, jobs=2)
        print(f"read {corpus.sessions.height:,} sessions ({_load()})", flush=True)
        started = time.perf_counter()
        import subagent_catalog.views.report  # noqa: F401

        print(f"import the report's modules  {time.perf_counter() - started:6.2f} s ({_load()})", flush=True)
        out = Path(scratch) / "report.html"
        from subagent_catalog.analysis.run_summary import run_summary
        from subagent_catalog.views.report_runs import runs_section

        for round_ in range(args.rounds):
            started, cpu = time.perf_counter(), time.process_time()
            runs_section(corpus, run_summary(corpus), None)
            print(
                f"round {round_ + 1}: the Runs section alone {time.perf_counter() - started:6.2f} s "
                f"(CPU {time.process_time() - cpu:.2f} s)",
                flush=True,
            )
            started, cpu = time.perf_counter(), time.process_time()
            write_report(corpus, out)
            took = time.perf_counter() - started
            took_cpu = time.process_time() - cpu
            size = out.stat().st_size / 2**20
            load, visible = _open(out)
            print(
                f"round {round_ + 1}: write_report {took:6.2f} s (CPU {took_cpu:.2f} s; {size:.1f} MiB); "
                f"open: load event {load:5.2f} s, "
                f"#runs visible {visible:5.2f} s ({_load()})",
                flush=True,
            )
        hub = [{"session_id": "hub", "label": None, "depth": 0, "outcome": "completed", "start_ms": 0, "end_ms": 10**7}]
        hub += [
            {
                "session_id": f"c{i}",
                "label": f"child {i}",
                "depth": 1,
                "outcome": "error" if i % 9 == 0 else "completed",
                "start_ms": (i * 7919) % 9_000_000,
                "end_ms": (i * 7919) % 9_000_000 + 200_000 + (i % 40) * 10_000,
            }
            for i in range(1000)
        ]
        started = time.perf_counter()
        html = timeline_html(pl.DataFrame(hub))
        print(
            f"timeline of a 1,000-child hub: {1000 * (time.perf_counter() - started):.0f} ms, "
            f"{html.count('<path')} SVG paths, {html.count('<rect')} rects, {len(html) / 1024:.0f} KiB",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
