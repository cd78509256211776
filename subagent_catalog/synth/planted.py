"""A random corpus of clean runs, planted pathologies and near misses, and the list of what was planted.

``write_planted_corpus(root, seed=...)`` writes one run per slot (each in its own ten minutes, so no
run's times touch another's) and returns every pathology it planted as ``(session_id, kind,
severity)``: ``findings`` with its default thresholds must report exactly these. Near misses sit one
step under each threshold (a tool called ``LOOP - 1`` times in a row, ``STORM - 1`` failures in a turn,
a prompt under the context share, nine children in a turn, an open run silent for less than an hour),
so a detector that counts wrongly is caught either way. Deterministic for a seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from subagent_catalog.synth.pathologies import HOUR, PlantLog, planted_child, write_planted_log

__all__ = ["CONTEXT_WINDOW", "Planted", "write_planted_corpus"]

Planted = tuple[str, str, str]
"""A planted pathology: ``(session_id, kind, severity)``."""

# ``findings``' default thresholds (tests check these agree with ``FindingOptions``).
LOOP, STORM, RETRIES, SHARE, FAN_OUT, STALLED_MS, COST_FACTOR, COST_RUNS = 3, 5, 3, 0.9, 10, HOUR, 3.0, 20
CONTEXT_WINDOW = 128_000
SLOT_MS = 600_000
MAIN, CONTEXT = "/work/planted", "/work/context"
TOOLS = ("read_file", "grep", "shell", "edit_file")


class _Corpus:
    def __init__(self, root: str, seed: int, rng: random.Random) -> None:
        self.root, self.seed, self.rng = root, seed, rng
        self.planted: list[Planted] = []
        self.args = 0
        self.context_runs = 0

    def unique_args(self) -> dict[str, str]:
        self.args += 1
        return {"path": f"src/m{self.args}.py"}

    def clean_turn(self, log: PlantLog, text: str) -> None:
        """A turn of distinct calls, fewer failures and retries than any threshold."""
        log.turn_start(text)
        failures = self.rng.randrange(STORM)
        for n in range(self.rng.randrange(6)):
            log.call(self.rng.choice(TOOLS), self.unique_args(), "ok", error=n < failures)
        for attempt in range(self.rng.randrange(RETRIES)):
            log.retry(attempt=attempt + 1)
        log.answer("done")
        log.turn_end()

    def clean(self, sid: str, at: int) -> None:
        log = PlantLog(sid, at=at)
        for turn in range(self.rng.randint(1, 3)):
            self.clean_turn(log, f"task {turn}")
        write_planted_log(self.root, log, cwd=MAIN, at=at)

    def loop(self, sid: str, at: int) -> None:
        log = PlantLog(sid, at=at)
        self.clean_turn(log, "before")
        planted = self.rng.random() < 0.6
        calls = self.rng.randint(LOOP, LOOP + 3) if planted else LOOP - 1
        log.turn_start("read it")
        log.call("grep", self.unique_args(), "ok")
        same = self.unique_args()
        for _ in range(calls):
            log.call("read_file", same, "same text")
        log.call("read_file", self.unique_args(), "ok")
        log.answer("done")
        log.turn_end()
        write_planted_log(self.root, log, cwd=MAIN, at=at)
        if planted:
            self.planted.append((sid, "tool-loop", "warn"))

    def storm(self, sid: str, at: int) -> None:
        log = PlantLog(sid, at=at)
        planted = self.rng.random() < 0.6
        log.turn_start("build")
        for _ in range(self.rng.randint(STORM, STORM + 3) if planted else STORM - 1):
            log.call("shell", self.unique_args(), "exit 1", error=True)
        log.call("shell", self.unique_args(), "ok")
        log.answer("done")
        log.turn_end()
        self.clean_turn(log, "after")
        write_planted_log(self.root, log, cwd=MAIN, at=at)
        if planted:
            self.planted.append((sid, "tool-error-storm", "warn"))

    def retry(self, sid: str, at: int) -> None:
        log = PlantLog(sid, at=at)
        planted = self.rng.random() < 0.6
        log.turn_start("summarise")
        for attempt in range(self.rng.randint(RETRIES, RETRIES + 2) if planted else RETRIES - 1):
            log.retry(attempt=attempt + 1)
        log.answer("summary")
        log.turn_end()
        write_planted_log(self.root, log, cwd=MAIN, at=at)
        if planted:
            self.planted.append((sid, "retry-storm", "warn"))

    def context(self, sid: str, at: int) -> None:
        if self.context_runs >= COST_RUNS - 1:  # fewer priced runs than a cost p95 needs: no cost outlier
            self.clean(sid, at)
            return
        self.context_runs += 1
        log = PlantLog(sid, at=at)
        log.add("request/context", {"provider": "deepseek", "model": "deepseek-chat", "contextWindow": CONTEXT_WINDOW})
        choice = self.rng.random()
        log.turn_start("long task")
        if choice < 0.25:
            log.turn_end("error", error={"message": "context length exceeded", "code": "CONTEXT_LENGTH"})
            self.planted.append((sid, "context-growth", "error"))
        else:
            share = self.rng.uniform(SHARE, 0.99) if choice < 0.6 else self.rng.uniform(0.3, SHARE - 0.05)
            log.answer("one", step=1, usage={"inputTokens": 1_000, "outputTokens": 10})
            log.answer("two", step=2, usage={"inputTokens": int(share * CONTEXT_WINDOW) + 1, "outputTokens": 10})
            log.turn_end()
            if choice < 0.6:
                self.planted.append((sid, "context-growth", "warn"))
        write_planted_log(self.root, log, cwd=CONTEXT, at=at)

    def stalled(self, sid: str, at: int, end: int) -> None:
        planted = self.rng.random() < 0.6
        log = PlantLog(sid, at=at if planted else end - self.rng.randint(60_000, STALLED_MS // 2))
        log.turn_start("never ends")
        log.answer("working")
        write_planted_log(self.root, log, cwd=MAIN, at=log.at - 20)
        if planted:
            self.planted.append((sid, "stalled", "warn"))

    def tree(self, sid: str, at: int) -> None:
        """A parent starting children in one turn: fan-out, duplicate prompts, unread and runaway children."""
        rng = self.rng
        count = rng.choice([rng.randint(1, FAN_OUT - 1), rng.randint(FAN_OUT - 1, FAN_OUT + 2)])
        prompts = [f"{sid} part {n}" for n in range(count)]
        duplicated = count >= 3 and rng.random() < 0.4
        if duplicated:
            prompts[2] = prompts[1]
        parent = PlantLog(sid, at=at)
        parent.turn_start("split the work")
        ends: list[tuple[int, str]] = []
        unread: list[str] = []
        runaway: str | None = None
        for n, prompt in enumerate(prompts):
            kid = f"{sid}-c{n}"
            if rng.random() < 0.5:  # foreground: the call waits for the child's answer
                created = parent.at + 31
                end = planted_child(self.root, kid, sid, prompt, at=created, work_ms=rng.randint(5, 200), cwd=MAIN)
                parent.call(
                    "subagent", {"prompt": prompt, "run_in_background": False}, "answer", result_dt=end - created + 11
                )
                continue
            parent.call("subagent", {"prompt": prompt}, f"started subagent {kid}")
            late = runaway is None and rng.random() < 0.15
            work = 2 * HOUR if late else rng.randint(5, 400)
            end = planted_child(self.root, kid, sid, prompt, at=parent.at - 9, work_ms=work, cwd=MAIN)
            if late:
                runaway = kid
                unread.append(kid)
            elif rng.random() < 0.2:
                unread.append(kid)
            else:
                ends.append((end, kid))
        parent.answer("started")
        parent.turn_end()
        for end, kid in sorted(ends):
            parent.at = max(parent.at, end + 10)
            parent.notice(kid)
            parent.answer("noted")
            parent.turn_end()
        last_child = max([end for end, _ in ends] + [parent.at])
        parent.at = max(parent.at, last_child) + 500
        parent.turn_start("wrap up")
        parent.answer("all done")
        parent.turn_end()
        write_planted_log(self.root, parent, cwd=MAIN, at=at)
        if count >= FAN_OUT:
            self.planted.append((sid, "fan-out", "warn"))
        if duplicated:
            self.planted.append((sid, "duplicate-task", "warn"))
        self.planted.extend((sid, "unread-child", "warn") for _ in unread)
        if runaway is not None:
            self.planted.append((runaway, "runaway-child", "warn"))

    def costs(self, end: int) -> None:
        """A project of equal-cost runs, one of them (sometimes) far above its p95."""
        outlier = self.rng.random() < 0.5
        runs = self.rng.randint(COST_RUNS, COST_RUNS + 5)
        for n in range(runs):
            sid = f"p{self.seed}-cost-{n:02d}"
            log = PlantLog(sid, at=end - HOUR + n * 1000)
            log.turn_start("priced task")
            tokens = 40 * 10_000 if outlier and n == runs - 1 else 10_000
            log.answer("ok", usage={"inputTokens": tokens, "outputTokens": 100})
            log.turn_end()
            write_planted_log(self.root, log, cwd=f"/work/costs-{self.seed}", at=log.at - 10)
            if outlier and n == runs - 1:
                self.planted.append((sid, "cost-outlier", "info"))


def write_planted_corpus(root: str, *, seed: int, runs: int = 40) -> list[Planted]:
    """Write a random corpus of ``runs`` slots under ``root`` and return what it planted.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> root = tempfile.mkdtemp()
        >>> planted = write_planted_corpus(root, seed=1, runs=12)
        >>> read_corpus(root).sessions.height > 12, all(kind for _, kind, _ in planted)
        (True, True)
    """
    rng = random.Random(seed)
    corpus = _Corpus(root, seed, rng)
    end = runs * SLOT_MS + 4 * HOUR
    kinds: list[Callable[[str, int], None]] = [
        corpus.clean,
        corpus.loop,
        corpus.storm,
        corpus.retry,
        corpus.context,
        corpus.tree,
        lambda sid, at: corpus.stalled(sid, at, end),
    ]
    for slot in range(runs):
        make = rng.choice(kinds)
        make(f"p{seed}-{slot:03d}", slot * SLOT_MS)
    corpus.costs(end)
    clock = PlantLog(f"p{seed}-clock", at=end)  # the corpus's last event: what "stalled" is measured against
    clock.turn_start("last")
    clock.answer("done")
    clock.turn_end()
    write_planted_log(root, clock, cwd=MAIN, at=end)
    return corpus.planted
