"""The dsh on-disk format, one file at a time (layer 1: imports only ``errors`` and ``progress``).

This package owns everything upstream's JSONL backend and cold ``inspect()``
decide about a single log: the walk of a session root (:mod:`.discover`),
storage paths and directory names (:mod:`.paths`), reading a log's bytes
safely (:mod:`.logread`), zstd frames (:mod:`.zstdframes`), the line scanner
(:mod:`.scanner`), packed chunk rows (:mod:`.chunk_rows`), upstream's
inspect rules (:mod:`.inspect_migrate`, :mod:`.inspect_rules`), subagent
descriptors (:mod:`.descriptor`), projection units (:mod:`.projection`),
JavaScript value semantics (:mod:`.jsvalue`), size limits (:mod:`.limits`)
and the process pool that reads many logs (:mod:`.pool`). Its product is one
:class:`~subagent_catalog.read.logread.LogFacts` per file. It imports no
other layer of the package, so its code alone decides the facts (the facts
cache keys on a digest of this package's source).
"""
