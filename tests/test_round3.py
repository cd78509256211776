"""Reliability round 3 (issue 29): one named reproducer per reported failure that is not about archives.

Archive reading (items 3, 4 and 10's archive paths) is in ``tests/test_archive_reading.py``, the
views' bounds (item 2) in ``tests/test_view_bounds.py``, thread safety (item 1) in
``tests/test_thread_safety.py``. Each test here failed on main as it was reported, and passes now.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from click.testing import CliRunner

from subagent_catalog.cli import main
from subagent_catalog.synth.writer import descriptor, header, simple_child_events, write_session

FORMULA_START = ("=", "+", "-", "@")


# --- item 9: CSV formula injection through a separator -------------------------------------------


def test_a_label_with_a_semicolon_before_a_formula_is_neutralised_for_semicolon_spreadsheets(tmp_path: Path) -> None:
    write_session(tmp_path, header("P", created_at=1), [], "none")
    label = "x;=cmd|' /C calc'!A0"
    events = simple_child_events("c", descriptor("continuable", label=label))
    write_session(tmp_path, header("c", created_at=2, parent="P", subagent=True), events, "none")
    result = CliRunner().invoke(main, ["list", str(tmp_path), "P", "--format", "csv", "--quiet", "--no-cache"])
    assert result.exit_code == 0, result.output
    for separator in (",", ";", "\t"):  # as a spreadsheet of each list separator splits the lines
        for row in csv.reader(io.StringIO(result.stdout), delimiter=separator):
            for cell in row:
                assert not cell.lstrip(" ").startswith(FORMULA_START), (separator, cell)
    assert "x;'=cmd|' /C calc'!A0" in result.stdout
