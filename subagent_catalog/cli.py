"""The ``subagent-catalog`` command line: a thin translator over the library."""

from __future__ import annotations

import json
import sys

import click

from subagent_catalog.conformance import conformance_lines
from subagent_catalog.corpus import read_corpus


@click.group()
def main() -> None:
    """Audit DeepSeek Harness session corpora."""


@main.command()
@click.argument("root", type=click.Path(file_okay=False))
@click.option("--compression", type=click.Choice(["zstd", "none", "auto"]), default="auto")
@click.option("--semantics", type=click.Choice(["projection", "trace"]), default="projection")
@click.option("--all-parents", is_flag=True)
@click.option("--parents", default=None)
def conformance(root: str, compression: str, semantics: str, all_parents: bool, parents: str | None) -> None:
    """Print upstream-shaped listing lines for conformance checks."""
    corpus = read_corpus(root, compression=compression)  # type: ignore[arg-type]
    chosen = None if all_parents or parents is None else [p for p in parents.split(",")]
    out = sys.stdout
    for line in conformance_lines(corpus, chosen, semantics=semantics):  # type: ignore[arg-type]
        out.write(line + "\n")
