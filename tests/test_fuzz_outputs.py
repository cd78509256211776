"""The output tier of the fuzz suite, a seeded sample (the long run: ``make fuzz-outputs``).

Every setup is run once with a command that exercises it, then a seeded
random sample; each case runs the CLI in a child interpreter and must keep
the corpus and foreign files byte for byte, fail in one line, and stay
under the memory bound (see ``tests/fuzz/outputs.py``).
"""

from __future__ import annotations

import pytest

from tests.fuzz.outputs import EXPORT_ONLY, RSS_BOUND_MB, SETUPS, run_case

SAMPLE = 24


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
