"""What people look at (layer 7: may import every library layer, never ``cli``).

Owns the self-contained HTML report (``report``, ``report_charts``,
``templates/``), the ``summary`` text (``summary_text``), the
data-quality gate's text, Markdown and JSON (``gate_format``; its checks are in ``analysis``),
transcripts as pages and Markdown (``transcript_view``; ``transcript_tree``
writes a run's pages into a directory it owns: ``output_site``, names from ``page_names``),
terminal- and CSV-safe text (``text``), the tqdm progress adapter
(``progress``) and the notebook widgets (``widgets``). UI libraries
(ipywidgets, tqdm) are imported only here, and only by the modules that use
them; ``import subagent_catalog`` loads none of this package.
"""
