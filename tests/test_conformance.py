"""Every conformance case: our output equals the rows upstream returned (SPEC section 6).

Runs in-process with the comparison of ``../shared/conformance/check.py``;
``make conformance`` runs the same check through the command line.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from subagent_catalog.catalog.conformance import conformance_lines
from subagent_catalog.corpus import read_corpus

SHARED = Path(__file__).resolve().parents[2] / "shared" / "conformance"


def _cases(folder: str) -> list[Path]:
    base = SHARED / folder
    return sorted(p for p in base.iterdir() if (p / "expected.jsonl").exists()) if base.is_dir() else []


def _checker():
    spec = importlib.util.spec_from_file_location("conformance_check", SHARED / "check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/conformance is not present")


@pytest.mark.parametrize("case", _cases("cases") + _cases("trace-cases"), ids=lambda p: p.name)
def test_case_matches_upstream(case: Path) -> None:
    meta = json.loads((case / "meta.json").read_text())
    corpus = read_corpus(case / "corpus", compression=meta["compression"])
    actual = "\n".join(conformance_lines(corpus, None, semantics=meta.get("semantics", "projection")))
    problems = _checker().compare((case / "expected.jsonl").read_text(encoding="utf-8"), actual)
    assert problems == [], "\n".join(problems)
