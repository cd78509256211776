"""Build ``data/findings``: a small corpus in the real dsh on-disk format, one pathology per session.

Run ``python data/make_findings.py`` (it refuses to overwrite an existing ``data/findings``). Each
session plants one pathology a detector of ``subagent_catalog.analysis.findings`` must find, or a
near miss it must not find (the same tool with other arguments of the same size, failures spread
over turns, fewer retries, a smaller prompt); docs/findings.md walks through it, and the expectations
in ``tests/test_findings.py`` are written from this list, not from a run of the code. Deterministic:
the same bytes every run.
"""

from __future__ import annotations

import os
import sys

from subagent_catalog.synth.pathologies import HOUR, PlantLog, planted_child, write_planted_log

COSTS_CWD = "/work/costs"


def main(root: str) -> None:
    """Write every planted session under ``root``."""
    # tool-loop: four identical read_file calls in a row; the near miss has the same sizes, other bytes.
    log = PlantLog("loop-yes")
    log.turn_start("read the config")
    for _ in range(4):
        log.call("read_file", {"path": "a.py"}, "x = 1")
    log.answer("done")
    log.turn_end()
    write_planted_log(root, log)
    log = PlantLog("loop-no")
    log.turn_start("read the files")
    for name in ("a", "b", "c", "d"):
        log.call("read_file", {"path": f"{name}.py"}, "x = 1")
    log.answer("done")
    log.turn_end()
    write_planted_log(root, log)

    # tool-error-storm: five failed results in one turn; the near miss spreads five over five turns.
    log = PlantLog("storm-yes")
    log.turn_start("run the build")
    for n in range(5):
        log.call("shell", {"cmd": f"make {n}"}, "exit 2", error=True)
    log.answer("it fails")
    log.turn_end()
    write_planted_log(root, log)
    log = PlantLog("storm-no")
    for n in range(5):
        log.turn_start(f"try {n}")
        log.call("shell", {"cmd": f"make {n}"}, "exit 2", error=True)
        log.answer("failed")
        log.turn_end()
    write_planted_log(root, log)

    # retry-storm: three model retries in one turn; the near miss has two, then one in the next turn.
    log = PlantLog("retry-yes")
    log.turn_start("summarise")
    for attempt in (1, 2, 3):
        log.retry(attempt=attempt)
    log.answer("summary")
    log.turn_end()
    write_planted_log(root, log)
    log = PlantLog("retry-no")
    log.turn_start("summarise")
    log.retry(attempt=1)
    log.retry(attempt=2)
    log.answer("summary")
    log.turn_end()
    log.turn_start("again")
    log.retry(attempt=1)
    log.answer("summary")
    log.turn_end()
    write_planted_log(root, log)

    # context-growth: a prompt at 94 % of a 128K window; the near miss peaks at 50 %; one turn
    # ends with a context-length error.
    for session_id, tokens in (("context-yes", 120_000), ("context-no", 64_000)):
        log = PlantLog(session_id)
        log.add("request/context", {"provider": "deepseek", "model": "deepseek-chat", "contextWindow": 128_000})
        log.turn_start("long task")
        log.answer("step one", step=1, usage={"inputTokens": 1_000, "outputTokens": 10})
        log.answer("step two", step=2, usage={"inputTokens": tokens, "outputTokens": 10})
        log.turn_end()
        write_planted_log(root, log)
    log = PlantLog("context-error")
    log.turn_start("huge task")
    log.turn_end("error", error={"message": "context length exceeded", "code": "CONTEXT_LENGTH"})
    write_planted_log(root, log)

    # fan-out: ten children started in one turn, each settled and its notice read.
    parent = PlantLog("fanout-parent")
    parent.turn_start("split the work")
    kids = [f"fanout-child-{n}" for n in range(10)]
    for kid in kids:
        parent.call(
            "subagent",
            {"description": kid, "prompt": f"do part {kid}", "run_in_background": True},
            f"started subagent {kid}",
        )
    parent.answer("started them")
    parent.turn_end()
    for kid in kids:
        planted_child(root, kid, "fanout-parent", f"do part {kid}", at=parent.at)
    parent.at += 100
    for kid in kids:
        parent.notice(kid)
        parent.answer("noted")
        parent.turn_end()
    write_planted_log(root, parent)

    # duplicate-task: two foreground children given the same prompt (linked by start time).
    parent = PlantLog("dup-parent")
    parent.turn_start("check twice")
    start = parent.at
    for n in range(2):
        parent.call(
            "subagent",
            {"description": "audit", "prompt": "audit the parser", "run_in_background": False},
            "parser is fine",
        )
        planted_child(root, f"dup-child-{n}", "dup-parent", "audit the parser", at=start + 15 + 40 * n)
    parent.answer("both agree")
    parent.turn_end()
    write_planted_log(root, parent)

    # unread-child: two continuable children, both completed; only the first one's notice arrived.
    parent = PlantLog("unread-parent")
    parent.turn_start("two tasks")
    parent.call("subagent", {"description": "a", "prompt": "task a"}, "started subagent read-child")
    parent.call("subagent", {"description": "b", "prompt": "task b"}, "started subagent unread-child")
    parent.answer("waiting")
    parent.turn_end()
    planted_child(root, "read-child", "unread-parent", "task a", at=parent.at)
    planted_child(root, "unread-child", "unread-parent", "task b", at=parent.at)
    parent.at += 100
    parent.notice("read-child")
    parent.answer("got a")
    parent.turn_end()
    write_planted_log(root, parent)

    # runaway-child: the root completes; its child works on for three hours (the corpus's last event).
    parent = PlantLog("runaway-root")
    parent.turn_start("background job")
    parent.call("subagent", {"description": "long", "prompt": "long job"}, "started subagent runaway-child")
    parent.answer("started")
    parent.turn_end()
    write_planted_log(root, parent)
    planted_child(root, "runaway-child", "runaway-root", "long job", at=parent.at, open_for=3 * HOUR)

    # stalled: an open run whose last event is two hours before the corpus's last one.
    log = PlantLog("stalled-yes")
    log.at = HOUR
    log.turn_start("never finishes")
    log.answer("working", step=1)
    write_planted_log(root, log, at=HOUR)

    # cost-outlier: twenty runs of one project cost the same; a twenty-first costs forty times more.
    for n in range(21):
        log = PlantLog(f"cost-{n:02d}")
        log.turn_start("priced task")
        tokens = 400_000 if n == 20 else 10_000
        log.answer("ok", usage={"inputTokens": tokens, "outputTokens": 100})
        log.turn_end()
        write_planted_log(root, log, cwd=COSTS_CWD)


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "findings")
    if os.path.exists(target):
        sys.exit(f"{target} exists: remove it first to rebuild it")
    main(target)
