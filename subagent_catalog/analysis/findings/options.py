"""The detectors' thresholds, checked once: ``FindingOptions`` holds what ``findings``'s keyword options set."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from subagent_catalog.errors import SubagentCatalogError

__all__ = ["FindingOptions", "FindingsError"]

_HINT = "docs/findings.md gives each detector's threshold and its default"


class FindingsError(SubagentCatalogError, ValueError):
    """A findings request that cannot run: an unknown detector, a threshold out of range, a bad rule."""


@dataclass(frozen=True)
class FindingOptions:
    """What each built-in detector counts as a finding (docs/findings.md defines each rule).

    Attributes:
        tool_loop_calls: ``tool-loop``: this many consecutive calls of one tool with byte-identical arguments.
        error_storm_failures: ``tool-error-storm``: this many failed tool results in one turn.
        retry_storm_retries: ``retry-storm``: this many model-call retries (``llm/retry``) in one turn.
        context_share: ``context-growth``: a prompt at least this share of its context window.
        fan_out_children: ``fan-out``: this many subagents started in one turn.
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
        subagent_catalog.analysis.findings.options.FindingsError: context_share must be above 0 and at most 1, ...
    """

    tool_loop_calls: int = 3
    error_storm_failures: int = 5
    retry_storm_retries: int = 3
    context_share: float = 0.9
    fan_out_children: int = 10
    stalled_after_ms: int = 3_600_000
    cost_outlier_factor: float = 3.0
    cost_outlier_min_runs: int = 20

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if spec.type == "int":
                if isinstance(value, bool) or not isinstance(value, int) or value < (2 if "calls" in spec.name else 1):
                    low = 2 if "calls" in spec.name else 1
                    raise FindingsError(f"{spec.name} must be an integer of at least {low}, not {value!r}", hint=_HINT)
            elif (
                isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0
            ):
                raise FindingsError(f"{spec.name} must be a positive finite number, not {value!r}", hint=_HINT)
        if self.context_share > 1:
            raise FindingsError(f"context_share must be above 0 and at most 1, not {self.context_share!r}", hint=_HINT)
