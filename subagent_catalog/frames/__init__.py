"""Corpus frames (layer 2: imports ``read`` and the base modules).

Owns ``Corpus``, the column schemas
(``schemas``), the assembly of per-file facts into the ``sessions``,
``descriptors`` and ``problems`` frames (``assemble``), the events frame
and its lazy scan (``events``) and the corpus's plain-HTML notebook repr
(``display``). No log is read here except through ``read``; reading a
whole root with the facts cache is ``subagent_catalog.corpus.read_corpus``.
"""

from subagent_catalog.frames.corpus import Corpus

__all__ = ["Corpus"]
