"""Fuzz suite: seeded mutations of real-format corpora and the invariants every read must keep.

``mutations`` builds hostile corpora, ``invariants`` checks one corpus,
``runner`` is the long tier (``python -m tests.fuzz.runner --cases N``);
``tests/test_fuzz.py`` is the fast tier that ``make test`` runs.
"""
