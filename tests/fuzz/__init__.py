"""Fuzz suite: seeded mutations of real-format corpora and the invariants every read must keep.

``mutations`` builds hostile corpora, ``invariants`` checks one corpus,
``runner`` is the long tier (``python -m tests.fuzz.runner --cases N``);
``tests/test_fuzz.py`` is the fast tier that ``make test`` runs.
"""

import argparse as _argparse
from pathlib import Path as _Path

ARTIFACTS = _Path(__file__).resolve().parents[2] / "tests" / "artifacts"
"""Where a long tier writes its JSON summary (``--out``'s default)."""


def tier_parser(module: str, doc: str | None) -> _argparse.ArgumentParser:
    """A long tier's command line: ``--cases``, ``--seed``, ``--case-seed`` and ``--out`` (a tier adds its own)."""
    parser = _argparse.ArgumentParser(prog=f"python -m {module}", description=(doc or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--case-seed", type=int, default=None, help="run exactly this case seed again")
    parser.add_argument("--out", default=str(ARTIFACTS))
    return parser


def case_seeds(args: _argparse.Namespace) -> list[int]:
    """The seeds a tier runs: ``--case-seed`` alone, else ``--cases`` seeds derived from ``--seed``."""
    if args.case_seed is not None:
        return [args.case_seed]
    return [args.seed * 1_000_000 + i for i in range(args.cases)]
