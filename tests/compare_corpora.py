"""Corpora for the comparison tests: runs of known error rates, and copies with exactly N turns made errors."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from subagent_catalog.synth.runs import write_runs

INJECTED = {"message": "injected failure in run 7", "code": "INJECTED"}


def runs_corpus(root: Path, *, runs: int, seed: int, error_rate: float = 0.0, **options: float | str) -> Path:
    """A corpus of ``write_runs`` runs under ``root`` (created)."""
    write_runs(root, runs=runs, seed=seed, error_rate=error_rate, **options)  # type: ignore[arg-type]
    return root


def _logs(root: Path) -> list[Path]:
    return sorted(Path(p) for p in root.glob("*/*/session.jsonl"))


def end_kind(log: Path) -> str:
    """The reason kind of a plain log's last ``turn/end``."""
    ends = [json.loads(line) for line in log.read_text().splitlines() if '"type":"turn/end"' in line]
    return str(ends[-1]["data"]["reason"]["kind"])


def with_errors(source: Path, out: Path, count: int) -> list[str]:
    """Copy ``source`` to ``out`` and change the last ``turn/end`` of ``count`` completed runs to ``error``.

    The runs changed are the first ``count`` completed logs in path order; their session ids are returned.
    """
    shutil.copytree(source, out)
    changed = []
    for log in _logs(out):
        if len(changed) == count:
            break
        lines = log.read_text().splitlines()
        last = max(i for i, line in enumerate(lines) if '"type":"turn/end"' in line)
        record = json.loads(lines[last])
        if record["data"]["reason"]["kind"] != "completed":
            continue
        record["data"]["reason"] = {"kind": "error", "error": dict(INJECTED)}
        lines[last] = json.dumps(record, separators=(",", ":"), ensure_ascii=False)
        log.write_text("\n".join(lines) + "\n")
        changed.append(json.loads(lines[0])["id"])
    if len(changed) != count:
        raise ValueError(f"only {len(changed)} completed runs to change in {source}")
    return changed


def recovered(log: Path) -> str:
    """Make a completed one-turn log end its turn in error, then run a second turn that completes; its id.

    The run completed after an earlier error: not a failure (its ``last_error_*`` are set all the same).
    """
    lines = log.read_text().splitlines()
    end = json.loads(lines[-1])
    assert end["type"] == "turn/end" and end["data"]["reason"]["kind"] == "completed", log
    end["data"]["reason"] = {"kind": "error", "error": {"message": "recovered from this", "code": "RECOVERED"}}
    seq, time = end["seq"], end["time"]
    more = [
        end,
        {"type": "turn/start", "seq": seq + 1, "time": time + 1, "data": {"turn": 2}},
        {"type": "turn/end", "seq": seq + 2, "time": time + 2, "data": {"turn": 2, "reason": {"kind": "completed"}}},
    ]
    lines[-1:] = [json.dumps(event, separators=(",", ":")) for event in more]
    log.write_text("\n".join(lines) + "\n")
    return str(json.loads(lines[0])["id"])


def renamed_model(root: Path, model: str, count: int | None = None) -> None:
    """Name ``model`` (one no price table knows) in the steps of the first ``count`` logs (all: ``None``)."""
    for log in _logs(root)[:count]:
        log.write_text(log.read_text().replace('"deepseek-v4-flash"', json.dumps(model)))


def same_files(a: Path, b: Path) -> bool:
    """Whether two roots hold the same relative paths."""
    names = [sorted(os.path.relpath(p, root) for p in root.rglob("*") if p.is_file()) for root in (a, b)]
    return names[0] == names[1]
