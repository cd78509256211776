"""Python scanners: a researcher's own function over one session's transcript, run in worker processes.

A scanner is a module-level function (it is sent to worker processes) taking one session's own
transcript (``transcript``'s rows, a fork's seed left out) and its ``sessions`` row, and returning
findings as mappings: ``message`` (required), ``severity`` (``info``, ``warn``, ``error``; default
``warn``), ``kind`` (default the function's name), ``evidence``, ``turn``, ``step``, ``seq``,
``seq_end``. It runs in a separate process with a time limit per session: a scanner that raises,
returns something that is not findings, or runs past the limit never stops the others; it gives a
``scanner-error`` or ``scanner-timeout`` finding for that session instead (its findings there are
unknown). The logs are read in the calling process; only the user's code runs in the workers.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import polars as pl

from subagent_catalog.analysis.findings.options import FindingsError
from subagent_catalog.analysis.findings.schema import SEVERITIES, Finding
from subagent_catalog.analysis.transcript import session_transcript
from subagent_catalog.bounds import POSITIVE_SECONDS
from subagent_catalog.frames.corpus import Corpus

__all__ = ["Scanner", "scanner_findings"]

Scanner = Callable[[pl.DataFrame, dict[str, Any]], Iterable[Mapping[str, Any]]]
"""A scanner: ``(transcript rows, sessions row) -> findings`` (mappings; see the module)."""

_INTS = ("turn", "step", "seq", "seq_end")
_MAX_FINDINGS = 1000
"""Findings one scanner may return for one session (more is an error: a scanner that matches everything)."""


def _name(scanner: Scanner) -> str:
    return str(getattr(scanner, "__name__", type(scanner).__name__)).replace("_", "-")


def _checked(scanner: Scanner, rows: pl.DataFrame, session: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Run a scanner on one session and check what it returns (in the worker)."""
    out: list[tuple[Any, ...]] = []
    for item in scanner(rows, session):
        if not isinstance(item, Mapping):
            raise TypeError(f"a finding must be a mapping, not {type(item).__name__}")
        message = item.get("message")
        if not isinstance(message, str) or not message:
            raise TypeError("a finding needs a 'message' string")
        severity = item.get("severity", "warn")
        if severity not in SEVERITIES:
            raise TypeError(f"severity must be one of {', '.join(SEVERITIES)}, not {severity!r}")
        kind = item.get("kind", _name(scanner))
        if not isinstance(kind, str) or not kind:
            raise TypeError("a finding's 'kind' must be a non-empty string")
        evidence = item.get("evidence", "")
        where = []
        for key in _INTS:
            value = item.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"a finding's {key!r} must be an integer or None, not {value!r}")
            where.append(value)
        out.append((kind, severity, message, "" if evidence is None else str(evidence), *where))
        if len(out) > _MAX_FINDINGS:
            raise ValueError(f"more than {_MAX_FINDINGS} findings for one session")
    return out


def _run(scanner: Scanner, rows: pl.DataFrame, session: dict[str, Any]) -> tuple[str, Any]:
    """The worker: the scanner's checked findings, or the error it raised (never raises)."""
    try:
        return "ok", _checked(scanner, rows, session)
    except Exception as error:  # a scanner's own bug is a finding, not a crash
        return "error", f"{type(error).__name__}: {str(error)[:300]}"


def _ready() -> bool:
    """A task that only proves a worker is up (its interpreter started, the package imported)."""
    return True


def _pool(context: Any, workers: int) -> Any:
    """A pool of started workers: the time limit counts the scanner's time, not a worker's start."""
    pool = context.Pool(workers)
    pool.starmap(_ready, [()] * (workers * 2))
    return pool


def scanner_findings(
    corpus: Corpus,
    scanners: Sequence[Scanner],
    *,
    reserved: Iterable[str],
    timeout_s: float = 30.0,
    jobs: int | None = None,
    only: set[str] | None = None,
) -> list[Finding]:
    """Run each scanner over every readable session's own transcript, in worker processes.

    Args:
        corpus: the corpus whose sessions to scan.
        scanners: module-level functions (see the module).
        reserved: kinds a scanner may not use (the built-in detectors' and the rules').
        timeout_s: the time one scanner may take on one session.
        jobs: worker processes (default 2).
        only: scan only the sessions with these ids.

    Raises:
        FindingsError: a scanner that is not a callable, or a time limit that is not positive.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> scanner_findings(read_corpus("data/findings"), [], reserved=[])
        []
        >>> scanner_findings(read_corpus("data/findings"), ["x"], reserved=[])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        subagent_catalog.analysis.findings.options.FindingsError: a scanner must be a function, not str
    """
    if not scanners:
        return []
    POSITIVE_SECONDS.check("scanner_timeout_s", timeout_s, error=FindingsError)
    for scanner in scanners:
        if not callable(scanner):
            raise FindingsError(f"a scanner must be a function, not {type(scanner).__name__}")
    taken = set(reserved)
    readable = corpus.sessions.filter(pl.col("verdict") != "skipped")
    if only is not None:
        readable = readable.filter(pl.col("session_id").is_in(list(only)))
    sessions = readable.to_dicts()
    work: list[tuple[Scanner, pl.DataFrame, dict[str, Any]]] = []
    for session in sessions:
        rows = session_transcript(corpus, session, corpus.log_events(session["list_order"]))
        own = rows.filter(~pl.col("in_seed").fill_null(False)) if "in_seed" in rows.columns else rows
        light = {key: value for key, value in session.items() if not isinstance(value, list)}
        work.extend((scanner, own, light) for scanner in scanners)
    found: list[Finding] = []
    context = multiprocessing.get_context("spawn")
    workers = max(1, jobs or 2)
    pool = _pool(context, workers)
    try:
        for start in range(0, len(work), workers):
            batch = work[start : start + workers]
            pending = [pool.apply_async(_run, item) for item in batch]
            deadline = time.monotonic() + timeout_s
            stuck = False
            for (scanner, _rows, session), result in zip(batch, pending, strict=True):
                name = _name(scanner)
                try:
                    status, value = result.get(timeout=max(0.0, deadline - time.monotonic()))
                except multiprocessing.TimeoutError:
                    stuck = True
                    why = f"scanner {name} ran past {timeout_s:g} s on this log: its findings here are unknown"
                    found.append(Finding.about(session, "scanner-timeout", "info", why))
                    continue
                if status == "error":
                    found.append(
                        Finding.about(session, "scanner-error", "info", f"scanner {name} failed on this log", value)
                    )
                    continue
                for kind, severity, message, evidence, turn, step, seq, seq_end in value:
                    if kind in taken:
                        why = f"scanner {name} used a reserved kind {kind!r}"
                        found.append(Finding.about(session, "scanner-error", "info", why))
                        continue
                    found.append(
                        Finding.about(
                            session, kind, severity, message, evidence, turn=turn, step=step, seq=seq, seq_end=seq_end
                        )
                    )
            if stuck:  # a worker still runs a scanner past its time: end the pool, start another
                pool.terminate()
                pool.join()
                pool = _pool(context, workers)
    finally:
        pool.terminate()
        pool.join()
    return found
