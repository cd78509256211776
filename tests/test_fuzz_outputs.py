"""The output tiers of the fuzz suite, a seeded sample (the long runs: ``make fuzz-outputs``).

Output files: every setup is run once with a command that exercises it, then a seeded random
sample; each case runs the CLI in a child interpreter and must keep the corpus and foreign files
byte for byte, fail in one line, and stay under the memory bound (see ``tests/fuzz/outputs.py``).

Output directories (``show --tree -o DIR``): every setup once and a seeded sample in this
interpreter, the setups that could hang in a child; each must keep ``output_dirs.INVARIANTS``.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.fuzz import output_dirs
from tests.fuzz.outputs import EXPORT_ONLY, RSS_BOUND_MB, SETUPS, run_case

SAMPLE = 16  # `make fuzz-outputs` runs more


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_each_hostile_output_setup_keeps_the_invariants(setup: str) -> None:
    seed = sum(map(ord, setup))
    commands = ["export"] if setup in EXPORT_ONLY else ["report", "list-csv"]
    for command in commands:
        result = run_case(seed, setup=setup, command=command)
        assert result.violations == [], (result.setup, result.command, result.violations, result.stderr)
        assert result.code is not None and (result.rss_mb or 0) < RSS_BOUND_MB


@pytest.mark.parametrize("chunk", range(4))
def test_seeded_output_cases_keep_the_invariants(chunk: int) -> None:
    for index in range(chunk, SAMPLE, 4):
        result = run_case(7_000_000 + index)
        assert result.violations == [], (result.seed, result.setup, result.command, result.violations, result.stderr)


def test_the_output_tier_sees_a_write_through_a_link(monkeypatch: pytest.MonkeyPatch) -> None:
    """The invariant checks can fail: a command that writes through the planted link is caught."""
    import subprocess

    import tests.fuzz.outputs as tier

    def naive(argv: list[str], ctx: tier.Context) -> tuple[subprocess.CompletedProcess[str], int | None]:
        with open(argv[argv.index("-o") + 1], "w") as handle:  # what a careless writer does
            handle.write("overwritten")
        return subprocess.CompletedProcess(argv, 0, "", ""), 1024

    monkeypatch.setattr(tier, "_run", naive)
    assert "foreign files changed" in tier.run_case(1, setup="symlink-to-foreign", command="report").violations
    assert "corpus changed" in tier.run_case(1, setup="hard-link-of-log", command="report").violations


# --------------------------------------------------------------------------- output directories (issue 42)


@pytest.mark.parametrize("setup", sorted(output_dirs.SETUPS))
def test_each_hostile_output_directory_keeps_the_invariants(setup: str) -> None:
    """``show --tree -o DIR`` (in this interpreter; two runs at once as children) against each setup."""
    result = output_dirs.run_case(sum(map(ord, setup)), setup=setup, in_process=True)
    assert result.violations == [], (result.setup, result.violations, result.stderr)


@pytest.mark.parametrize("setup", ["dir-is-fifo", "manifest-fifo", "planted-fifo"])
def test_output_directories_in_a_child_never_hang_and_stay_under_the_memory_bound(setup: str) -> None:
    result = output_dirs.run_case(sum(map(ord, setup)), setup=setup)
    assert result.violations == [], (result.setup, result.violations, result.stderr)
    assert result.rss_mb is not None and result.rss_mb < RSS_BOUND_MB


def test_seeded_output_directory_cases_keep_the_invariants() -> None:
    for index in range(12):
        result = output_dirs.run_case(8_000_000 + index, in_process=True)
        assert result.violations == [], (result.seed, result.setup, result.violations, result.stderr)


def test_the_output_directory_tier_sees_a_replaced_file_and_a_page_of_another_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The invariant checks can fail: a writer that ignores the user's files, and one that gives a page
    another session's transcript, are both caught."""
    import subprocess
    from pathlib import Path

    def careless(argv: list[str], ctx: output_dirs.Context) -> tuple[subprocess.CompletedProcess[str], int | None]:
        out = Path(argv[argv.index("-o") + 1])
        out.mkdir(parents=True, exist_ok=True)
        for name in os.listdir(out):
            if (out / name).is_file():
                (out / name).write_text("overwritten")
        return subprocess.CompletedProcess(argv, 0, "", ""), 1024

    monkeypatch.setattr(output_dirs, "_run", careless)
    found = output_dirs.run_case(1, setup="user-files").violations
    assert any("was replaced or removed" in v for v in found) and "exit 0 without a readable manifest" in found
    monkeypatch.undo()

    real = output_dirs._run

    def swapped(argv: list[str], ctx: output_dirs.Context) -> tuple[subprocess.CompletedProcess[str], int | None]:
        done = real(argv, ctx)
        out = Path(argv[argv.index("-o") + 1])
        manifest = json.loads((out / "manifest.json").read_text())
        pages = sorted(name for name in manifest["files"] if name != "run.html")
        (out / "run.html").write_bytes((out / pages[0]).read_bytes())  # the run's page shows a child
        manifest["files"]["run.html"] = manifest["files"][pages[0]]
        (out / "manifest.json").write_text(json.dumps(manifest))
        return done

    monkeypatch.setattr(output_dirs, "_run", swapped)
    found = output_dirs.run_case(3, setup="empty", in_process=True).violations
    assert "the page of 'run' shows another session" in found
