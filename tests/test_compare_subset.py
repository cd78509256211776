"""Two filtered frames of one corpus: subset, project_subset, and `compare ROOT ROOT --a-project X --b-project Y`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

from subagent_catalog.analysis.compare import compare
from subagent_catalog.analysis.subset import SubsetError, project_subset, subset
from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from tests.compare_corpora import runs_corpus

TABLES = ("outcomes", "metrics", "models", "tools", "errors", "health", "tasks")
SAMPLE_PROJECT = "--home-dev-projects-webapp--"


PROJECTS = {"a": "--work-app-a--", "b": "--work-app-b--"}
"""The project directories of ``write_runs(cwd="/work/app-a")`` and ``cwd="/work/app-b"``."""


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``both``: one root of two projects (two error rates); ``solo-a``, ``solo-b``: a copy of each project alone."""
    base = tmp_path_factory.mktemp("compare-subset")
    runs_corpus(base / "both", runs=30, seed=3, error_rate=0.1, tool_failure_rate=0.2, cwd="/work/app-a")
    runs_corpus(base / "both", runs=30, seed=4, error_rate=0.4, token_scale=1.2, cwd="/work/app-b")
    assert sorted(p.name for p in (base / "both").iterdir()) == sorted(PROJECTS.values())
    for tag, project in PROJECTS.items():
        shutil.copytree(base / "both" / project, base / f"solo-{tag}" / project)
    return {"both": base / "both", "solo-a": base / "solo-a", "solo-b": base / "solo-b"}


def test_two_projects_of_one_corpus_compare_like_two_corpora(roots: dict[str, Path]) -> None:
    both = read_corpus(roots["both"], cache=False, jobs=1)
    kept = compare(
        project_subset(both, [PROJECTS["a"]]),
        project_subset(both, [PROJECTS["b"]]),
        match="prompt",
        resamples=200,
        seed=7,
    )
    alone = compare(
        read_corpus(roots["solo-a"], cache=False, jobs=1),
        read_corpus(roots["solo-b"], cache=False, jobs=1),
        match="prompt",
        resamples=200,
        seed=7,
    )
    assert kept.runs == alone.runs == (30, 30)
    assert (kept.trees, kept.cost_unknown, kept.notes) == (alone.trees, alone.cost_unknown, alone.notes)
    for name in TABLES:
        assert_frame_equal(getattr(kept, name), getattr(alone, name), check_exact=True)
    # a pair names its runs' list order in the corpus each was read from: the whole root's, or each root's own
    assert kept.pairs is not None and alone.pairs is not None
    orders = ["a_list_order", "b_list_order"]
    assert_frame_equal(kept.pairs.drop(orders), alone.pairs.drop(orders), check_exact=True)
    assert kept.errors.filter(pl.col("b") > 0).height >= 1  # the groups (and their example runs) were compared


def test_compare_root_root_with_two_projects_equals_compare_of_two_roots(roots: dict[str, Path]) -> None:
    def run(*args: str) -> dict[str, object]:
        options = ["-q", "--no-cache", "--resamples", "200", "--format", "json", "--label-a", "A", "--label-b", "B"]
        result = CliRunner().invoke(main, ["compare", *args, *options])
        assert result.exit_code == 0, result.output
        data: dict[str, object] = json.loads(result.output)
        return data

    root = str(roots["both"])
    kept = run(root, root, "--a-project", PROJECTS["a"], "--b-project", PROJECTS["b"])
    alone = run(str(roots["solo-a"]), str(roots["solo-b"]))
    assert kept == alone


def test_the_projects_name_the_sides_by_default(roots: dict[str, Path]) -> None:
    root = str(roots["both"])
    result = CliRunner().invoke(
        main, ["compare", root, root, f"--a-project={PROJECTS['a']}", f"--b-project={PROJECTS['b']}", "-q"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == f"compare: B = {PROJECTS['b']} against A = {PROJECTS['a']}"


def test_an_unknown_project_is_an_error_naming_those_there_are(roots: dict[str, Path]) -> None:
    root = str(roots["both"])
    result = CliRunner().invoke(main, ["compare", root, root, "--a-project", "app-c", "-q"])
    assert result.exit_code == 1
    assert "no project directory 'app-c'" in result.output
    assert f"'{PROJECTS['a']}', '{PROJECTS['b']}'" in result.output
    with pytest.raises(SubsetError, match="no project named"):
        project_subset(read_corpus(roots["both"], cache=False, jobs=1), [])


def test_a_condition_that_selects_nothing_readable_is_a_subset_error() -> None:
    corpus = read_corpus("data/sample", cache=False)
    for where in (pl.col("no_such_column") == 1, pl.col("project_dir")):
        with pytest.raises(SubsetError, match="cannot select sessions by"):
            subset(corpus, where)


@pytest.mark.parametrize("loaded", [False, True], ids=["events-unloaded", "events-loaded"])
def test_a_subset_keeps_the_descriptors_problems_and_events_of_its_sessions(loaded: bool) -> None:
    corpus = read_corpus("data/sample", cache=False)
    if loaded:
        assert corpus.events.height > 0
    part = project_subset(corpus, [SAMPLE_PROJECT])
    kept = set(part.sessions["path"])
    dropped = set(corpus.sessions["path"]) - kept
    assert kept and dropped and set(part.sessions["project_dir"]) == {SAMPLE_PROJECT}
    assert part.listing_error == corpus.listing_error
    # descriptors: exactly those of the kept files
    assert_frame_equal(part.descriptors, corpus.descriptors.filter(pl.col("path").is_in(list(kept))))
    # problems: none of a file left out; every other one stays (corpus-level ones too)
    assert not set(part.problems["path"].drop_nulls()) & dropped
    assert part.problems.height == corpus.problems.filter(~pl.col("path").is_in(list(dropped)).fill_null(False)).height
    assert corpus.problems.filter(pl.col("path").is_in(list(dropped))).height >= 1  # the sample has one to drop
    # events: those of the kept sessions, whether read again or filtered
    ids = part.sessions["session_id"].drop_nulls()
    expected = corpus.events.filter(pl.col("session_id").is_in(ids.implode()))
    assert part.events.height > 0
    assert_frame_equal(part.events, expected)
