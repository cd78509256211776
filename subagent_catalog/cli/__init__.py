"""The ``subagent-catalog`` command line (layer 8): a thin translator over the library.

It may import every lower layer and click; nothing imports it but ``__main__``. One module per
command family: ``reports`` (``summary``, ``report``, ``check``), ``listing`` (``list``,
``conformance``), ``show``, ``search``, ``findings``, ``runs``, ``compare``, ``export``, ``interop``
(``otel``, ``sql``);
``io`` (streams, output files, error lines), ``options`` (the options corpus commands share and
the input rule), ``window`` (``--since``/``--until``) and ``gate`` (``check``'s thresholds and
baselines) hold what they share. This module builds the command group.

Every command reads its ROOT by one input rule (``cli.options.source_options``,
``corpus.open_source``): an archive (an object-store URL, or a directory
holding ``manifest.json``) or a corpus root, ``--input`` forcing one; an
input holding neither is an error. It hands the corpus or archive to a
library function; the commands only parse options and format results. Errors the library raises on purpose
(``SubagentCatalogError``: a missing root, a
listing that fails as a whole, an output that cannot be written) and
``OSError`` become one-line messages ending with a hint and exit status 1;
usage errors (unknown option, bad value) exit with 2.
``check`` exits with 1 when a selected check fails. Streams, output files and
error lines are handled by ``subagent_catalog.cli.io``: what is printed to a
terminal stream is escaped, files written with ``-o`` keep the exact data.
"""

from __future__ import annotations

import click

from subagent_catalog.cli.compare import compare_command
from subagent_catalog.cli.export import export
from subagent_catalog.cli.findings import findings_command
from subagent_catalog.cli.interop import otel, sql_command
from subagent_catalog.cli.io import CatalogGroup, translate_errors
from subagent_catalog.cli.listing import conformance, list_command
from subagent_catalog.cli.reports import check, report, summary
from subagent_catalog.cli.runs import runs
from subagent_catalog.cli.search import search
from subagent_catalog.cli.show import show

__all__ = ["main", "translate_errors"]


@click.group(cls=CatalogGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="subagent-catalog", prog_name="subagent-catalog")
def main() -> None:
    """Audit DeepSeek Harness session corpora."""


for _command in (
    conformance,
    summary,
    report,
    check,
    list_command,
    export,
    search,
    findings_command,
    otel,
    sql_command,
    show,
    runs,
    compare_command,
):
    main.add_command(_command)
