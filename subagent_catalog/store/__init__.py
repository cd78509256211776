"""Stored facts and frames (layer 4: imports ``catalog``, ``frames``, ``read``, base).

Owns what outlives one read: the facts codec (``codec``), the per-file
facts cache (``cache``), the Parquet archive's layout (``layout``),
its export (``export``) and opening (``archive``), and the engines
that read a root for an export, locally or on a Dask cluster
(``distributed``). The public archive API is re-exported by
``subagent_catalog.archive``.
"""
