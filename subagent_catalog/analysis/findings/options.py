"""The detectors' thresholds, checked once: ``FindingOptions`` holds what ``findings``'s keyword options set."""

from __future__ import annotations

from dataclasses import dataclass, fields

from subagent_catalog.bounds import COUNT, MILLISECONDS, POSITIVE_COUNT, RATIO, Bound
from subagent_catalog.errors import SubagentCatalogError

__all__ = ["THRESHOLD_BOUNDS", "FindingOptions", "FindingsError"]

_HINT = "docs/findings.md gives each detector's threshold and its default"


class FindingsError(SubagentCatalogError, ValueError):
    """A findings request that cannot run: an unknown detector, a threshold out of range, a bad rule."""


THRESHOLD_BOUNDS: dict[str, Bound] = {
    "tool_loop_calls": COUNT.narrow(2),
    "error_storm_failures": POSITIVE_COUNT,
    "retry_storm_retries": POSITIVE_COUNT,
    "context_share": RATIO.narrow(0, 1, low_open=True),
    "fan_out_children": POSITIVE_COUNT,
    "runaway_after_ms": MILLISECONDS.narrow(0, low_open=True),
    "runaway_share": RATIO,
    "stalled_after_ms": MILLISECONDS.narrow(0, low_open=True),
    "cost_outlier_factor": RATIO.narrow(0, low_open=True),
    "cost_outlier_min_runs": POSITIVE_COUNT,
}
"""The range of each threshold of ``FindingOptions`` (and of its ``findings`` option)."""


@dataclass(frozen=True)
class FindingOptions:
    """What each built-in detector counts as a finding (docs/findings.md defines each rule).

    Attributes:
        tool_loop_calls: ``tool-loop``: this many consecutive calls of one tool with byte-identical arguments.
        error_storm_failures: ``tool-error-storm``: this many failed tool results in one turn.
        retry_storm_retries: ``retry-storm``: this many model-call retries (``llm/retry``) in one turn.
        context_share: ``context-growth``: a prompt at least this share of its context window.
        fan_out_children: ``fan-out``: this many subagents started in one turn.
        runaway_after_ms: ``runaway-child``: a subagent working on at least this long after its root's end...
        runaway_share: ``runaway-child``: ...and at least this share of the root's wall time.
        stalled_after_ms: ``stalled``: an open run whose last event is at least this much older than
            the corpus's last event.
        cost_outlier_factor: ``cost-outlier``: a run's known cost above this many times its project's p95.
        cost_outlier_min_runs: ``cost-outlier``: a project's p95 needs at least this many runs of known cost.

    Examples:
        >>> FindingOptions(tool_loop_calls=5).tool_loop_calls
        5
        >>> FindingOptions(context_share=2.0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        subagent_catalog.analysis.findings.options.FindingsError: context_share must be a positive number up to 1, ...
        >>> FindingOptions(stalled_after_ms=2**63)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        subagent_catalog.analysis.findings.options.FindingsError: stalled_after_ms must be a positive number of ...
    """

    tool_loop_calls: int = 3
    error_storm_failures: int = 5
    retry_storm_retries: int = 3
    context_share: float = 0.9
    fan_out_children: int = 10
    runaway_after_ms: int = 60_000
    runaway_share: float = 0.25
    stalled_after_ms: int = 3_600_000
    cost_outlier_factor: float = 3.0
    cost_outlier_min_runs: int = 20

    def __post_init__(self) -> None:
        for spec in fields(self):
            THRESHOLD_BOUNDS[spec.name].check(spec.name, getattr(self, spec.name), error=FindingsError, hint=_HINT)
