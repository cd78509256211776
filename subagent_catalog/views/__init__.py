"""What people look at (layer 7: may import every library layer, never ``cli``).

Owns the self-contained HTML report (:mod:`.report`, :mod:`.report_charts`,
``templates/``), the ``summary`` text (:mod:`.summary_text`), the
data-quality gate (:mod:`.gate`, :mod:`.gate_checks`, :mod:`.gate_format`),
terminal- and CSV-safe text (:mod:`.text`), the tqdm progress adapter
(:mod:`.progress`) and the notebook widgets (:mod:`.widgets`). UI libraries
(ipywidgets, tqdm) are imported only here, and only by the modules that use
them; ``import subagent_catalog`` loads none of this package.
"""
