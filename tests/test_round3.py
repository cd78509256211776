"""Reliability round 3 (issue 29): one named reproducer per reported failure that is not about archives.

Archive reading (items 3, 4 and 10's archive paths) is in ``tests/test_archive_reading.py``, the
views' bounds (item 2) in ``tests/test_view_bounds.py``, thread safety (item 1) in
``tests/test_thread_safety.py``. Each test here failed on main as it was reported, and passes now.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from subagent_catalog.cli import main
from subagent_catalog.outputs import inside
from subagent_catalog.store.cache import FactsCache
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


# --- item 6: the cache through a bind mount of a folder inside the corpus -----------------------


@contextlib.contextmanager
def bind_mount(source: Path, target: Path) -> Iterator[None]:
    target.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True).returncode != 0:
        pytest.skip("bind mounts need CAP_SYS_ADMIN (the tests run as root in CI)")
    try:
        yield
    finally:
        subprocess.run(["umount", str(target)], check=True)


def test_the_cache_never_writes_through_a_bind_mount_of_a_folder_inside_the_corpus(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    write_session(root, header("P", created_at=1), [], "none")
    inner = root / "inner"
    inner.mkdir()
    mounted = tmp_path / "cache"
    with bind_mount(inner, mounted):
        before = sorted(os.listdir(inner))
        env = {**os.environ, "SUBAGENT_CATALOG_CACHE": str(mounted)}
        done = subprocess.run(
            [sys.executable, "-m", "subagent_catalog", "summary", str(root)], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert sorted(os.listdir(inner)) == before == []  # no facts.key, facts-*.arrow or frames-*.arrow
        cache = FactsCache.load(root, "none", directory=str(mounted))
        assert cache.status == "ignored: cache directory is inside the corpus" and not cache.writable
        assert inside(mounted / "report.html", root)  # outputs are refused there too


def test_a_bind_mount_of_a_folder_outside_the_corpus_is_not_inside_it(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "corpus", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    with bind_mount(elsewhere, root / "mnt"):
        assert not inside(elsewhere, root)  # the mount point is in the corpus, the folder is not
        assert inside(root / "mnt", root)
