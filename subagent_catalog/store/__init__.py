"""Stored facts and frames (layer 4: imports ``catalog``, ``frames``, ``read``, base).

Owns what outlives one read: the facts codec (:mod:`.codec`), the per-file
facts cache (:mod:`.cache`), the Parquet archive's layout (:mod:`.layout`),
its export (:mod:`.export`) and opening (:mod:`.archive`), and the engines
that read a root for an export, locally or on a Dask cluster
(:mod:`.distributed`). The public archive API is re-exported by
:mod:`subagent_catalog.archive`.
"""
