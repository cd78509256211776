"""The findings cache: per session, by log fingerprint, thresholds, rules digest and scanner identity.

Each test compares against ``findings(..., cache=False)`` over the same corpus (computed without any
cache), and counts the log reads the log-reading parts make (``_scan_types``, ``Corpus.log_events``,
the rules' ``search_events``, the scanners' runner).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import subagent_catalog.analysis.findings as findings_package
from subagent_catalog.analysis.findings import Rule, findings, log_events, rules
from subagent_catalog.analysis.findings.cache import FindingsCache, findings_file
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from tests import findings_scanners

GOLDEN = Path(__file__).parent.parent / "data" / "findings"
RULES = [Rule("make", "make", scope="tool-call", message="ran make")]


@dataclass
class Reads:
    """What the log-reading parts read."""

    scanned: list[str] = field(default_factory=list)
    events: list[int] = field(default_factory=list)
    searched: list[int] = field(default_factory=list)
    scanners: int = 0

    @property
    def any(self) -> bool:
        return bool(self.scanned or self.events or self.searched or self.scanners)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    target = tmp_path / "corpus"
    shutil.copytree(GOLDEN, target)
    return target


@pytest.fixture
def cache_dir(tmp_path: Path) -> str:
    return str(tmp_path / "cache")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Reads]:
    seen = Reads()
    scan, log, search, scanner = (
        log_events._scan_types,
        Corpus.log_events,
        rules.search_events,
        findings_package.scanner_findings,
    )

    def counted_scan(args: tuple[Any, ...]) -> Any:
        seen.scanned.append(args[0])
        return scan(args)

    def counted_log(self: Corpus, list_order: int) -> pl.DataFrame:
        seen.events.append(list_order)
        return log(self, list_order)

    def counted_search(source: Any, *args: Any, **kwargs: Any) -> pl.DataFrame:
        seen.searched.append(source.sessions.height)
        return search(source, *args, **kwargs)

    def counted_scanners(*args: Any, **kwargs: Any) -> Any:
        seen.scanners += 1
        return scanner(*args, **kwargs)

    monkeypatch.setattr(log_events, "_scan_types", counted_scan)
    monkeypatch.setattr(Corpus, "log_events", counted_log)
    monkeypatch.setattr(rules, "search_events", counted_search)
    monkeypatch.setattr(findings_package, "scanner_findings", counted_scanners)
    yield seen


def _fresh(root: Path, **options: Any) -> pl.DataFrame:
    return findings(read_corpus(root, cache=False), cache=False, **options)


def _clear(reads: Reads) -> None:
    reads.scanned.clear()
    reads.events.clear()
    reads.searched.clear()
    reads.scanners = 0


def test_second_call_reads_no_log(root: Path, cache_dir: str, reads: Reads) -> None:
    first = findings(read_corpus(root, cache=cache_dir), rules=RULES)
    assert reads.any  # the first call read the logs it needed
    assert os.path.isfile(findings_file(root, "none", directory=cache_dir))
    _clear(reads)
    second = findings(read_corpus(root, cache=cache_dir), rules=RULES)
    assert not reads.any, reads
    assert_frame_equal(second, first)
    _clear(reads)
    assert_frame_equal(second, _fresh(root, rules=RULES))


def test_touched_log_is_read_again_alone(root: Path, cache_dir: str, reads: Reads) -> None:
    findings(read_corpus(root, cache=cache_dir), rules=RULES)
    corpus = read_corpus(root, cache=cache_dir)
    path = corpus.sessions.filter(pl.col("session_id") == "loop-yes")["path"].item()
    info = os.stat(path)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 5_000_000_000))
    _clear(reads)
    again = findings(read_corpus(root, cache=cache_dir), rules=RULES)
    assert reads.scanned and set(reads.scanned) == {path}
    assert reads.searched == [1]  # the rules searched the touched log only
    _clear(reads)
    assert_frame_equal(again, _fresh(root, rules=RULES))


def test_touched_log_alone_is_searched_when_no_rule_matched(root: Path, cache_dir: str, reads: Reads) -> None:
    """Sessions whose cached answer is "no finding" are answered too (an empty entry is a hit)."""
    nothing = [Rule("nothing", "zq-this-text-is-in-no-log-qz")]
    assert findings(read_corpus(root, cache=cache_dir), detectors=[], rules=nothing).height == 0
    path = read_corpus(root, cache=False).sessions.filter(pl.col("session_id") == "retry-no")["path"].item()
    info = os.stat(path)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 5_000_000_000))
    _clear(reads)
    assert findings(read_corpus(root, cache=cache_dir), detectors=[], rules=nothing).height == 0
    assert reads.searched == [1]


def test_changed_threshold_recomputes_only_its_detector(root: Path, cache_dir: str, reads: Reads) -> None:
    findings(read_corpus(root, cache=cache_dir), rules=RULES)
    _clear(reads)
    changed = findings(read_corpus(root, cache=cache_dir), rules=RULES, retry_storm_retries=2)
    assert reads.scanned  # retry-storm read its logs again
    assert not reads.searched  # the rules did not change
    _clear(reads)
    assert_frame_equal(changed, _fresh(root, rules=RULES, retry_storm_retries=2))
    assert changed.filter(pl.col("kind") == "retry-storm").height >= 1


def test_changed_rules_file_recomputes_the_rules(root: Path, cache_dir: str, reads: Reads, tmp_path: Path) -> None:
    rules_file = tmp_path / "rules.toml"
    rules_file.write_text('[[rule]]\nname = "make"\npattern = "make"\nin = "tool-call"\n')
    findings(read_corpus(root, cache=cache_dir), rules=rules_file)
    rules_file.write_text('[[rule]]\nname = "make"\npattern = "make"\nin = "tool-call"\nmessage = "ran make"\n')
    _clear(reads)
    changed = findings(read_corpus(root, cache=cache_dir), rules=rules_file)
    assert reads.searched  # the rules ran again
    assert not reads.scanned  # the detectors did not
    assert set(changed.filter(pl.col("kind") == "make")["message"]) == {"ran make (5 matches)"}
    _clear(reads)
    assert_frame_equal(changed, _fresh(root, rules=rules_file))


def test_corrupted_entry_is_ignored_and_rewritten(root: Path, cache_dir: str, reads: Reads) -> None:
    expected = findings(read_corpus(root, cache=cache_dir), rules=RULES)
    corpus = read_corpus(root, cache=cache_dir)
    store = FindingsCache.open(corpus, directory=cache_dir)
    assert store.status == "loaded"
    bad = {key: [["tool-loop", "fatal", "", "", True, None, None, None]] for key in store.entries}
    store.entries.update(bad)  # every entry malformed, yet MAC'd: only the entries' own checks can catch it
    store.put("unused", [])
    assert store.save() is not None
    _clear(reads)
    again = findings(read_corpus(root, cache=cache_dir), rules=RULES)
    assert reads.any  # nothing was taken from the malformed entries
    assert_frame_equal(again, expected)
    reopened = FindingsCache.open(corpus, directory=cache_dir)
    assert all(reopened.get(key) is not None for key in bad)  # rewritten sound
    _clear(reads)
    assert_frame_equal(findings(read_corpus(root, cache=cache_dir), rules=RULES), expected)
    assert not reads.any


def test_torn_cache_file_is_ignored_and_replaced(root: Path, cache_dir: str, reads: Reads) -> None:
    expected = findings(read_corpus(root, cache=cache_dir), rules=RULES)
    path = findings_file(root, "none", directory=cache_dir)
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) // 2])
    corpus = read_corpus(root, cache=cache_dir)
    assert FindingsCache.open(corpus, directory=cache_dir).status.startswith("ignored: ")
    assert_frame_equal(findings(corpus, rules=RULES), expected)
    assert FindingsCache.open(corpus, directory=cache_dir).status == "loaded"


def test_unwritable_cache_directory_is_no_cache(root: Path, tmp_path: Path, reads: Reads) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    corpus = read_corpus(root, cache=False)
    expected = findings(corpus, cache=False)
    assert_frame_equal(findings(corpus, cache=str(blocker / "cache")), expected)
    inside = root / "cache"
    assert_frame_equal(findings(corpus, cache=str(inside)), expected)
    assert not inside.exists()  # never written under the corpus


def test_corpus_read_without_cache_uses_none(root: Path, tmp_path: Path, reads: Reads) -> None:
    corpus = read_corpus(root, cache=False)
    findings(corpus)
    _clear(reads)
    findings(corpus)
    assert reads.scanned  # no cache directory: everything computed again


def test_scanner_results_are_cached(root: Path, cache_dir: str, reads: Reads) -> None:
    options: dict[str, Any] = {"detectors": [], "scanners": [findings_scanners.make_calls]}
    first = findings(read_corpus(root, cache=cache_dir), **options)
    assert reads.scanners == 1 and first.height > 0
    _clear(reads)
    second = findings(read_corpus(root, cache=cache_dir), **options)
    assert reads.scanners == 0
    assert_frame_equal(second, first)


def test_lambda_scanner_is_never_cached(root: Path, cache_dir: str, reads: Reads) -> None:
    from subagent_catalog.analysis.findings.cache import scanner_identity

    assert scanner_identity(lambda rows, session: []) is None
    assert scanner_identity(findings_scanners.make_calls) is not None
