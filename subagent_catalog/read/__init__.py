"""The dsh on-disk format, one file at a time (layer 1: imports only ``errors``, ``progress`` and ``regular``).

This package owns everything upstream's JSONL backend and cold ``inspect()``
decide about a single log: the walk of a session root (``discover``),
storage paths and directory names (``paths``), reading a log's bytes
safely (``logread``), zstd frames (``zstdframes``), the line scanner
(``scanner``), packed chunk rows (``chunk_rows``), upstream's
inspect rules (``inspect_migrate``, ``inspect_rules``), subagent
descriptors (``descriptor``), projection units (``projection``),
JavaScript value semantics (``jsvalue``), size limits (``limits``)
the process pool that reads many logs (``pool``), each event's decoded
text (``event_text``) and the byte search of raw logs (``search_scan``).
Its product is one ``LogFacts`` per file. It imports no
other layer of the package, so its code alone decides the facts (the facts
cache keys on a digest of this package's source).
"""
