"""Corpus frames (layer 2: imports ``read`` and the base modules).

Owns :class:`~subagent_catalog.frames.corpus.Corpus`, the column schemas
(:mod:`.schemas`), the assembly of per-file facts into the ``sessions``,
``descriptors`` and ``problems`` frames (:mod:`.assemble`), the events frame
and its lazy scan (:mod:`.events`) and the corpus's plain-HTML notebook repr
(:mod:`.display`). No log is read here except through ``read``; reading a
whole root with the facts cache is :func:`subagent_catalog.corpus.read_corpus`.
"""

from subagent_catalog.frames.corpus import Corpus

__all__ = ["Corpus"]
