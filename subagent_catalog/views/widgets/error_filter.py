"""The browser's error-group filter and its search by error: a failed run's group, the groups offered.

A failed run (an outcome in ``FAILED_OUTCOMES``) belongs to one error group, as ``analysis.error_groups``
makes them: its last error's code and its normalised message (``normalise_message``: ids, paths, numbers
and quoted text made alike), else its outcome's detail, else its outcome. The filter's values read
``CODE · message`` (``message`` alone when there is no code), the groups with the most runs first; a run
that did not fail has no group. The browser's search matches a session's error code and message too.
"""

from __future__ import annotations

import polars as pl
import traitlets

from subagent_catalog.analysis.error_groups import error_messages
from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES
from subagent_catalog.analysis.tallies import tally

__all__ = ["ERROR_COLUMNS", "FILTERS", "ErrorGroupFilter", "error_group_choices", "error_group_column"]

FILTERS = (
    "outcome",
    "error_group",
    "tool_failures",
    "kind",
    "mode",
    "activity",
    "reason",
    "cause",
    "depth",
    "provider",
    "project",
    "finding",
    "session_label",
)
"""The browser's filters, in the order it shows them (``error_group``: this module's; ``finding`` and
``session_label``: ``finding_filter``'s)."""

ERROR_COLUMNS = ("outcome_detail", "last_error_code", "last_error_message")
"""The ``sessions`` columns the tree keeps for the error groups and the search by error."""


class ErrorGroupFilter(traitlets.HasTraits):
    """The ``error_group`` trait ``CatalogBrowser`` takes from here (its filters are ``FILTERS``)."""

    error_group = traitlets.Unicode(
        None, allow_none=True, help="failed runs of one error group: 'CODE · message' or the message"
    ).tag(sync=True)


def error_group_column(frame: pl.DataFrame) -> pl.Series:
    """Each row's error group (``CODE · message``), null for a run that did not fail.

    ``frame`` has ``outcome``, ``outcome_detail``, ``last_error_code`` and ``last_error_message``.

    Examples:
        >>> frame = pl.DataFrame({"outcome": ["error", "aborted", "completed"],
        ...     "outcome_detail": [None, "parent", None], "last_error_code": ["NETWORK", None, None],
        ...     "last_error_message": ["timeout after 300 ms", None, None]})
        >>> error_group_column(frame).to_list()
        ['NETWORK · timeout after <n> ms', 'parent', None]
    """
    message = error_messages(frame.select(pl.coalesce("last_error_message", "outcome_detail", "outcome")).to_series())
    failed = frame["outcome"].is_in(list(FAILED_OUTCOMES)).fill_null(False)
    return pl.DataFrame({"code": frame["last_error_code"], "message": message, "failed": failed}).select(
        pl.when(pl.col("failed") & pl.col("code").is_not_null())
        .then(pl.concat_str("code", pl.lit(" · "), pl.col("message").fill_null("")))
        .when("failed")
        .then(pl.col("message"))
        .alias("error_group")
    )["error_group"]


def error_group_choices(sessions: pl.DataFrame) -> list[str]:
    """The error groups of the failed sessions, the most runs first (then by name).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> choices = error_group_choices(read_corpus("data/sample").sessions)
        >>> "CONTEXT_LENGTH · context length exceeded" in choices, len(choices)
        (True, 7)
    """
    groups = error_group_column(sessions.select("outcome", *ERROR_COLUMNS)).drop_nulls()
    if groups.is_empty():
        return []
    return [str(value) for value in tally(groups.to_frame(), "error_group")["error_group"].to_list()]
