"""Run facts (issue 15): a golden log with hand-computed values, stored facts, catalog rows."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec
import polars as pl
import pytest

from subagent_catalog.catalog.tables import catalog
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.schemas import RUN_SCHEMA
from subagent_catalog.read.logread import read_log_file
from subagent_catalog.store import codec
from subagent_catalog.store.codec import FactsRecordError, dump_facts, load_facts

GOLDEN = Path(__file__).parent / "data" / "run-facts"
CHILD_LOG = GOLDEN / "--work-app--" / "child-1" / "session.jsonl"

# Derived by reading tests/data/run-facts/--work-app--/child-1/session.jsonl by hand (own events are seq >= 4;
# seq 0-3 are the parent's seed: its turn 1, its deepseek-v3 header and its grep call are not counted).
CHILD_EXPECTED: dict[str, Any] = {
    "run_first_ms": 1000100,  # seq 4, the descriptor
    "run_last_ms": 1001000,  # seq 40, the last usage chunk
    "run_wall_ms": 900,
    # turns open 1000200->500 300, 600->650 50, 700->690 (ends before it starts) 0, 800->900 100, and turn 6 open
    # from 1000950 to the last own event 1001000, 50; the 50-600 ms between turns are idle.
    "active_ms": 500,
    "turns": 5,  # turn/start of turns 2, 3, 4, 5 (legacy trigger shape), 6
    "turns_open": 1,  # turn 6 has no turn/end
    "last_turn_open": True,  # ... and it is the last turn
    "turn_ms": 450,  # 300 (turn 2) + 50 (turn 3) + 0 (turn 4 ends 10 ms before it starts) + 100 (turn 5)
    "llm_ms": 99,  # step/start -> message: (2,1) 1000202->1000222 20, (2,2) 1000260->1000330 70, (3,1) 601->610 9
    "tool_ms": 29,  # call -> result: call-1 230->240 10, call-2 620->630 10, call-3 631->640 9
    "tool_busy_ms": 29,  # the same three calls never overlap and each runs inside an open turn
    "ttft_ms": 40,  # only (2,2) streams a token before its message: text-chunks row at 1000300, step start 1000260
    "ttft_steps": 1,
    "decode_ms": 30,  # (2,2): first token 1000300 -> message 1000330 ...
    "decode_tokens": 31,  # ... and its message reports outputTokens 31
    "turns_completed": 0,
    "turns_error": 2,  # turn 2 and turn 5 (legacy {kind, step, message})
    "turns_aborted": 1,
    "turns_max_tokens": 1,
    "turns_blocked": 0,
    "turns_interrupted": 0,
    "turns_other": 0,
    "last_turn_outcome": "error",
    "last_abort_cause": "user",
    "last_abort_reason": None,  # {"kind": "user"} carries no reason text
    "last_error_message": "legacy boom",
    "last_error_code": "UNKNOWN",  # the legacy shape has no code: upstream's migration says UNKNOWN
    "models": ["deepseek-official/deepseek-v4-flash", "deepseek-official/deepseek-v4-pro"],
    "providers": ["deepseek-official"],
    "steps": 3,  # step/end seq 14, 22, 32 (turn 6's step never ends)
    "usage_steps": 3,  # (2,1), (2,2), (6,1)
    "input_tokens": 1310,  # 100 (chunk == message) + 210 (the later sample replaces 200) + 1000
    "output_tokens": 52,  # 20 + 31 + 1
    "cache_read_tokens": 50,  # only (2,1)'s sample carries it
    "cache_write_tokens": 7,
    "reasoning_tokens": 5,  # 5 + 0
    "last_context_tokens": 1000,  # the last own sample (6,1): input 1000, no cache counts
    "peak_context_tokens": 1000,  # prompts 100 + 50 (2,1), 210 + 7 (2,2), 1000 (6,1)
    "context_window": None,  # no request/context event states one
    "peak_context_share": None,
    "tool_calls": 3,
    "tools": ["read_file", "shell"],
    "tool_results": 3,
    "tool_results_failed": 2,  # seq 13 (isError with data.error), seq 31 (isError, no data.error)
    "tool_output_bytes": 12,  # "FAIL\n" 5 + "é" 2 + "abc" 3 + "no" 2
    "title": None,  # no session/title event
    "prompt": "run the tests",  # seq 6, its first own user/message (source kind user)
    "name": "run the tests",  # no title: the prompt
}

PARENT_EXPECTED: dict[str, Any] = {
    **dict.fromkeys(RUN_SCHEMA, 0),
    "run_first_ms": 900000,
    "run_last_ms": 900003,
    "run_wall_ms": 3,
    "active_ms": 3,
    "tool_busy_ms": 0,  # grep is called but never answered: it adds nothing (as to tool_ms)
    "turns": 1,
    "last_turn_open": False,
    "turn_ms": 3,
    "turns_completed": 1,
    "last_turn_outcome": "completed",
    "last_abort_cause": None,
    "last_abort_reason": None,
    "last_error_message": None,
    "last_error_code": None,
    "models": ["deepseek-official/deepseek-v3"],
    "providers": ["deepseek-official"],
    "input_tokens": None,  # no usage sample at all: null, not 0
    "output_tokens": None,
    "cache_read_tokens": None,
    "cache_write_tokens": None,
    "reasoning_tokens": None,
    "last_context_tokens": None,
    "peak_context_tokens": None,
    "context_window": None,
    "peak_context_share": None,
    "tool_calls": 1,
    "tools": ["grep"],
    "title": None,
    "prompt": None,  # no user/message at all
    "name": None,
}


# Hand-derived from the same log: one sample per step, the last one of the step kept (its event's seq and
# time), the model of the step's message, else the route of the last request/header before the sample.
CHILD_SAMPLES = [
    (11, 1000222, 2, 1, False, "deepseek-official", "deepseek-v4-flash", 100, 20, 50, None, 5),
    (21, 1000330, 2, 2, False, "deepseek-official", "deepseek-v4-flash", 210, 31, None, 7, None),
    (40, 1001000, 6, 1, False, "deepseek-official", "deepseek-v4-pro", 1000, 1, None, None, 0),  # header seq 26
]
# (seq, time, turn, step, call id, name, argument bytes, in seed, result seq, result time, is error, error name,
# error code, result bytes): the parent's call in the seed is flagged and never answered.
CHILD_CALLS = [
    (2, 900002, 1, 1, "call-p-1", "grep", 2, True, None, None, None, None, None, None),
    (12, 1000230, 2, 1, "call-1", "shell", 19, False, 13, 1000240, True, "ToolError", "EXIT_NONZERO", 7),
    (28, 1000620, 3, 1, "call-2", "read_file", 2, False, 29, 1000630, False, None, None, 3),
    (30, 1000631, 3, 1, "call-3", "shell", 2, False, 31, 1000640, True, None, None, 2),
]


def test_golden_log_nested_records_and_outcome() -> None:
    rows = {row["session_id"]: row for row in read_corpus(GOLDEN, cache=False).sessions.iter_rows(named=True)}
    child, parent = rows["child-1"], rows["parent-1"]
    assert [tuple(sample.values()) for sample in child["usage_samples"]] == CHILD_SAMPLES
    assert [tuple(call.values()) for call in child["tool_call_records"]] == CHILD_CALLS
    assert (child["outcome"], child["outcome_detail"]) == ("open", "the last turn never ended")
    assert (parent["outcome"], parent["outcome_detail"]) == ("completed", None)
    assert parent["usage_samples"] == []
    assert [call["name"] for call in parent["tool_call_records"]] == ["grep"]


def test_expected_tables_cover_every_run_column() -> None:
    assert list(CHILD_EXPECTED) == list(RUN_SCHEMA)
    assert set(PARENT_EXPECTED) == set(RUN_SCHEMA)


@pytest.mark.parametrize("cache", [False, True])
def test_golden_log_run_facts(cache: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if cache:
        monkeypatch.setenv("SUBAGENT_CATALOG_CACHE", str(tmp_path / "cache"))
    for _ in range(2 if cache else 1):  # with the cache: the second read decodes stored facts
        sessions = read_corpus(GOLDEN).sessions
        rows = {row["session_id"]: row for row in sessions.iter_rows(named=True)}
        assert {name: rows["child-1"][name] for name in RUN_SCHEMA} == CHILD_EXPECTED
        assert {name: rows["parent-1"][name] for name in RUN_SCHEMA} == PARENT_EXPECTED
        assert sessions.select(list(RUN_SCHEMA)).schema == pl.Schema(RUN_SCHEMA)
    assert not cache or any((tmp_path / "cache").iterdir())


def test_unreadable_logs_have_null_run_facts(tmp_path: Path) -> None:
    log = tmp_path / "--p--" / "s" / "session.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"not a header\n")
    row = read_corpus(tmp_path).sessions.row(0, named=True)
    assert {name: row[name] for name in RUN_SCHEMA} == dict.fromkeys(RUN_SCHEMA)
    seeded = tmp_path / "--p--" / "t" / "session.jsonl"
    seeded.parent.mkdir()
    head = b'{"type":"session","version":0,"id":"t","createdAt":1,"seedLength":-1,"delegationDepth":0}\n'
    seeded.write_bytes(head + b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n')
    assert read_log_file(str(seeded), "none").run is None  # an invalid seedLength: the own events are unknown


def test_catalog_rows_carry_project_created_at_and_run_facts() -> None:
    rows = catalog(read_corpus(GOLDEN))
    assert rows.height == 1
    row = rows.row(0, named=True)
    assert (row["parent"], row["id"], row["kind"]) == ("parent-1", "child-1", "child")
    assert row["project_dir"] == "--work-app--"
    assert row["created_at"] == dt.datetime(1970, 1, 1, 0, 16, 40, tzinfo=dt.UTC)  # createdAt 1000000 ms
    assert {name: row[name] for name in RUN_SCHEMA} == CHILD_EXPECTED
    rate = rows.group_by("project_dir", pl.col("created_at").dt.date().alias("day")).agg(
        (pl.col("turns_error").sum() / pl.col("turns").sum()).alias("failure_rate")
    )
    assert rate.to_dicts() == [{"project_dir": "--work-app--", "day": dt.date(1970, 1, 1), "failure_rate": 0.4}]


def _run_wire(**changes: Any) -> bytes:
    facts = read_log_file(str(CHILD_LOG), "none")
    blob = dump_facts(facts)
    assert blob is not None and load_facts(blob) == replace(facts, events=None)
    record = msgspec.msgpack.decode(blob[5:])
    run = record[codec._FACTS_FIELDS.index("run")]
    for name, value in changes.items():
        run[codec._RUN_FIELDS.index(name)] = value
    return blob[:5] + msgspec.msgpack.encode(record)


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"turns": -1}, "run turns is not an integer >= 0"),
        ({"tool_results_failed": 9}, "more failed tool results than results"),
        ({"input_tokens": 1.5}, "Expected `int | null`"),
        ({"tools": ["shell", "read_file"]}, "not sorted"),
        ({"tools": ["a", "a"]}, "distinct strings"),
        ({"first_ms": None}, "only one of the run's first and last"),
        ({"last_error_message": "x", "turns_error": 0}, "error message without an error turn"),
        ({"usage_steps": 0}, "token counts without a usage sample"),
        ({"models": None}, "only one of the run's models and providers"),
        ({"active_ms": 901}, "active time over wall time"),
        ({"tool_busy_ms": 501}, "tool-busy time over active time"),
        ({"active_ms": None}, "active or tool-busy time without the run's times"),
        ({"last_context_tokens": 1001}, "a last size over the peak"),
        ({"peak_context_share": -0.5}, "not a share of a known peak"),
        ({"context_window": 0}, "run context_window is not an integer >= 1"),
    ],
)
def test_forged_run_facts_are_refused(changes: dict[str, Any], why: str) -> None:
    with pytest.raises(FactsRecordError, match=why):
        load_facts(_run_wire(**changes))


TURN_KINDS = ("completed", "error", "aborted", "max-tokens", "blocked", "interrupted")  # upstream TurnEndReasonMap
USAGE_KEYS = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_read_tokens": "cacheReadTokens",
    "cache_write_tokens": "cacheWriteTokens",
    "reasoning_tokens": "reasoningTokens",
}


def _expected_from_events(
    events: tuple[dict[str, Any], ...], seed_length: int | None, cases: Counter[str]
) -> dict[str, Any]:
    """Every run fact of one generated session, counted from the events the generator wrote.

    Written without the reader's code: a usage sample is a usage chunk or an
    ``assistant/message.data.usage``; the last sample of a (turn, step) is
    the one that counts. ``cases`` tallies the shapes met, so the caller can
    check the corpus holds each of them.
    """
    own = events[seed_length or 0 :]
    samples: dict[tuple[int, int], dict[str, int]] = {}
    outcomes: Counter[str] = Counter()
    last_kind = abort_cause = abort_reason = error = None
    turn_ms: list[int] = []
    opened: dict[str, Any] | None = None
    for e in own:
        data = e["data"]
        usage = None
        if e["type"] == "assistant/chunk" and data["chunk"]["type"] == "usage":
            usage = data["chunk"]["usage"]
        elif e["type"] == "assistant/message":
            usage = data.get("usage")
            cases["interrupted message"] += data.get("interrupted", False)
            cases["message without usage"] += usage is None and not data.get("interrupted", False)
        if usage is not None:
            key = (data["turn"], data["step"])
            if key in samples:
                cases["duplicated usage" if samples[key] == usage else "replaced usage"] += 1
            samples[key] = usage
            cases["no cacheReadTokens"] += "cacheReadTokens" not in usage
            cases["no reasoningTokens"] += "reasoningTokens" not in usage
            cases["cacheWriteTokens"] += "cacheWriteTokens" in usage
        elif e["type"] == "turn/start":
            opened = e
        elif e["type"] == "turn/end":
            assert opened is not None and opened["data"]["turn"] == data["turn"]
            turn_ms.append(max(0, e["time"] - opened["time"]))
            opened = None
            reason = data["reason"]
            last_kind = reason["kind"]
            outcomes[last_kind] += 1
            if last_kind == "aborted":
                abort_cause = reason["reason"]["kind"]
                abort_reason = reason["reason"].get("reason")
                cases["hook abort"] += abort_reason is not None
            elif last_kind == "error":
                error = reason["error"]
    cases.update(f"turn {kind}" for kind in outcomes)
    results = [e["data"] for e in own if e["type"] == "tool/result"]
    blocks = [r["message"]["content"][0] for r in results]
    cases["failed tool result with data.error"] += sum(
        b["isError"] and "error" in r for r, b in zip(results, blocks, strict=True)
    )
    cases["failed tool result without data.error"] += sum(
        b["isError"] and "error" not in r for r, b in zip(results, blocks, strict=True)
    )
    headers = [e["data"]["header"]["config"] for e in own if e["type"] == "request/header"]
    models = list(dict.fromkeys(f"{c['provider']}/{c['model']}" for c in headers))
    cases["second model"] += len(models) > 1 or models[:1] not in ([], ["deepseek-official/deepseek-v4-flash"])
    tokens = {
        column: sum(u[key] for u in samples.values() if key in u) if any(key in u for u in samples.values()) else None
        for column, key in USAGE_KEYS.items()
    }
    first = min(e["time"] for e in own) if own else None
    last = max(e["time"] for e in own) if own else None
    cases["killed in the last turn"] += opened is not None
    return {
        "run_first_ms": first,
        "run_last_ms": last,
        "run_wall_ms": None if first is None or last is None else last - first,
        "turns": sum(e["type"] == "turn/start" for e in own),
        "turns_open": int(opened is not None),
        "last_turn_open": opened is not None,
        "turn_ms": sum(turn_ms) if turn_ms else None,
        **_time_split(own),
        **_active_and_busy(own),
        "turns_completed": outcomes["completed"],
        "turns_error": outcomes["error"],
        "turns_aborted": outcomes["aborted"],
        "turns_max_tokens": outcomes["max-tokens"],
        "turns_blocked": outcomes["blocked"],
        "turns_interrupted": outcomes["interrupted"],
        "turns_other": sum(n for k, n in outcomes.items() if k not in TURN_KINDS),
        "last_turn_outcome": last_kind,
        "last_abort_cause": abort_cause,
        "last_abort_reason": abort_reason,
        "last_error_message": error["message"] if error else None,
        "last_error_code": error["code"] if error else None,
        "models": models or None,
        "providers": list(dict.fromkeys(c["provider"] for c in headers)) or None,
        "steps": sum(e["type"] == "step/end" for e in own),
        "usage_steps": len(samples),
        **tokens,
        **_context_sizes(events, seed_length or 0),
        "tool_calls": sum(e["type"] == "tool/call" for e in own),
        "tools": sorted({e["data"]["name"] for e in own if e["type"] == "tool/call"}),
        "tool_results": len(results),
        "tool_results_failed": sum(b["isError"] is True for b in blocks),
        "tool_output_bytes": sum(len(t["text"].encode()) for b in blocks for t in b["content"]),
        **_names(events, own, cases),
    }


def _names(events: tuple[dict[str, Any], ...], own: tuple[dict[str, Any], ...], cases: Counter[str]) -> dict[str, Any]:
    """The last title of the log (the seed's too), the first own human prompt, and the name: the title, else it."""
    titles = [e["data"]["title"] for e in events if e["type"] == "session/title" and e["data"]["title"].strip()]
    prompts = [
        " ".join(b["text"] for b in e["data"]["content"] if b["type"] == "text")
        for e in own
        if e["type"] == "user/message" and e["data"].get("source", {}).get("kind", "user") == "user"
    ]
    title = " ".join(titles[-1].split()) if titles else None
    prompt = next((" ".join(p.split()) for p in prompts if p.strip()), None)
    cases["titled"] += title is not None
    assert all(len(text) < 80 for text in (title or "", prompt or ""))  # the generator's are never clipped
    return {"title": title, "prompt": prompt, "name": title if title is not None else prompt}


def _measure(intervals: list[tuple[int, int]], within: list[tuple[int, int]] | None = None) -> int:
    """How long at least one interval is open (and, with ``within``, one of those too): a sweep over the boundaries."""
    edges = [
        (t, kind, delta)
        for kind, spans in enumerate((intervals, within or []))
        for a, b in spans
        if b > a
        for t, delta in ((a, 1), (b, -1))
    ]
    depth = [0, 0]
    total, previous = 0, None
    for time, kind, delta in sorted(edges):
        if previous is not None and depth[0] > 0 and (within is None or depth[1] > 0):
            total += time - previous
        depth[kind] += delta
        previous = time
    return total


def _active_and_busy(own: tuple[dict[str, Any], ...]) -> dict[str, int | None]:
    """``active_ms`` and ``tool_busy_ms`` from their definitions (docs/runs.md), by a sweep, not the reader's merge.

    A turn is open from its ``turn/start`` to its ``turn/end`` (the generator pairs them), a turn killed open
    to the last own event; a call runs from its ``tool/call`` to the result answering it before a ``turn/end``.
    """
    if not own:
        return {"active_ms": None, "tool_busy_ms": None}
    turns: list[tuple[int, int]] = []
    calls: list[tuple[int, int]] = []
    opened: int | None = None
    pending: dict[str, int] = {}
    for e in own:
        if e["type"] == "turn/start":
            opened = e["time"]
        elif e["type"] == "turn/end":
            assert opened is not None
            turns.append((opened, e["time"]))
            opened = None
            pending.clear()
        elif e["type"] == "tool/call":
            pending[e["data"]["callId"]] = e["time"]
        elif e["type"] == "tool/result" and e["data"]["message"]["source"]["callId"] in pending:
            calls.append((pending.pop(e["data"]["message"]["source"]["callId"]), e["time"]))
    if opened is not None:
        turns.append((opened, own[-1]["time"]))
    return {"active_ms": _measure(turns), "tool_busy_ms": _measure(calls, turns)}


def _context_sizes(events: tuple[dict[str, Any], ...], seed: int) -> dict[str, Any]:
    """The context columns from upstream's ``contextPressure`` rules over the log (usage-projection.ts).

    A usage event's prompt is input + cache read + cache write; the window is the last ``request/context``'s
    (the seed's count: a fork inherits it); the peak share divides each own prompt by the window stated before it.
    """
    window = None
    prompts: dict[tuple[Any, Any], tuple[int, int | None]] = {}  # a step's last sample replaces its earlier ones
    last = None
    for e in events:
        data = e["data"]
        if e["type"] == "request/context":
            window = data.get("contextWindow")
        usage = None
        if e["type"] == "assistant/chunk" and data["chunk"]["type"] == "usage":
            usage = data["chunk"]["usage"]
        elif e["type"] == "assistant/message":
            usage = data.get("usage")
        if usage is not None and e["seq"] >= seed:
            last = usage["inputTokens"] + usage.get("cacheReadTokens", 0) + usage.get("cacheWriteTokens", 0)
            prompts[(data["turn"], data["step"])] = (last, window)
    shares = [prompt / size for prompt, size in prompts.values() if size]
    return {
        "last_context_tokens": last,
        "peak_context_tokens": max((prompt for prompt, _ in prompts.values()), default=None),
        "context_window": window,
        "peak_context_share": max(shares, default=None),
    }


def _is_token(chunk: dict[str, Any]) -> bool:
    if chunk["type"] in ("text-delta", "reasoning-delta"):
        return bool(chunk["text"])
    return chunk["type"] == "tool-call-delta" and (bool(chunk["argumentsDelta"]) or "name" in chunk)


def _time_split(own: tuple[dict[str, Any], ...]) -> dict[str, int]:
    """Model, first-token, decode and tool time of one session's own events, step by step.

    Written from upstream's session-stats README, not the reader: a step's model time runs from its
    ``step/start`` to its ``assistant/message``; its first token is its first non-empty delta before that
    message; a tool's time runs from its call to the result answering its ``callId`` in the same turn.
    """
    starts: dict[tuple[int, int], int] = {}
    tokens: dict[tuple[int, int], int] = {}
    out = dict.fromkeys(("llm_ms", "ttft_ms", "ttft_steps", "decode_ms", "decode_tokens", "tool_ms"), 0)
    calls: dict[str, int] = {}
    for e in own:
        data, key = e["data"], (e["data"].get("turn"), e["data"].get("step"))
        if e["type"] == "step/start":
            starts[key] = e["time"]
        elif e["type"] == "assistant/chunk" and key in starts and key not in tokens and _is_token(data["chunk"]):
            tokens[key] = e["time"]
        elif e["type"] == "assistant/message" and key in starts:
            start = starts.pop(key)
            out["llm_ms"] += e["time"] - start  # the synthesizer's clock never runs backwards
            if key in tokens:
                first = tokens.pop(key)
                out["ttft_ms"] += first - start
                out["ttft_steps"] += 1
                if "usage" in data:
                    out["decode_ms"] += e["time"] - first
                    out["decode_tokens"] += data["usage"]["outputTokens"]
        elif e["type"] == "tool/call":
            calls[data["callId"]] = e["time"]
        elif e["type"] == "tool/result" and data["message"]["source"]["callId"] in calls:
            out["tool_ms"] += e["time"] - calls.pop(data["message"]["source"]["callId"])
        elif e["type"] == "turn/end":
            calls.clear()
    return out


def _expected_records(events: tuple[dict[str, Any], ...], seed_length: int | None) -> tuple[list[Any], list[Any]]:
    """The usage samples and tool call records of one generated log, seed included, without the reader's code.

    A step's sample is its last usage (chunk or message), attributed to the step's message's source model,
    else to the route of the last request header written before it; a call is paired with the first result
    naming its ``callId``; a seed result's size is left to the parent (``None``).
    """
    seed = seed_length or 0
    route: tuple[str, str] | None = None
    samples: dict[tuple[int, int, bool], list[Any]] = {}
    calls: list[list[Any]] = []
    pending: dict[str, list[Any]] = {}
    for e in events:
        data, in_seed = e["data"], e["seq"] < seed
        if e["type"] == "request/header":
            config = data["header"]["config"]
            route = (config["provider"], config["model"])
        usage = None
        if e["type"] == "assistant/chunk" and data["chunk"]["type"] == "usage":
            usage = data["chunk"]["usage"]
        elif e["type"] == "assistant/message":
            usage = data.get("usage")
        key = (data.get("turn"), data.get("step"), in_seed)
        if usage is not None:
            assert route is not None
            counts = [usage.get(name) for name in USAGE_KEYS.values()]
            samples[key] = [e["seq"], e["time"], key[0], key[1], in_seed, *route, *counts]
        if e["type"] == "assistant/message" and key in samples:
            samples[key][5:7] = [data["message"]["source"]["provider"], data["message"]["source"]["model"]]
        if e["type"] == "tool/call":
            record = [e["seq"], e["time"], data["turn"], data["step"], data["callId"], data["name"]]
            record += [len(data["arguments"].encode()), in_seed, None, None, None, None, None, None]
            calls.append(record)
            pending[data["callId"]] = record
        elif e["type"] == "tool/result":
            block = data["message"]["content"][0]
            record = pending.pop(block["toolCallId"])
            error = data.get("error", {})
            size = None if in_seed else sum(len(part["text"].encode()) for part in block["content"])
            record[8:] = [e["seq"], e["time"], block["isError"], error.get("name"), error.get("code"), size]
    return [tuple(v) for v in sorted(samples.values())], [tuple(c) for c in calls]


def _expected_outcome(expected: dict[str, Any]) -> tuple[str, str | None]:
    if expected["last_turn_open"]:
        return "open", "the last turn never ended"
    kind = expected["last_turn_outcome"]
    if kind == "error":
        return kind, f"{expected['last_error_message']} ({expected['last_error_code']})"
    if kind == "aborted":
        cause, reason = expected["last_abort_cause"], expected["last_abort_reason"]
        by = f"aborted by {cause}" if cause in ("user", "parent", "hook") else f"aborted ({cause})"
        return kind, f"{by}: {reason}" if reason else by
    if kind == "max-tokens":
        return kind, "max-tokens: the model stopped at its output token limit"
    return kind, None


NEW_CASES = (
    "turn error",
    "turn aborted",
    "turn max-tokens",
    "duplicated usage",
    "replaced usage",
    "second model",
    "message without usage",
    "interrupted message",
    "no cacheReadTokens",
    "no reasoningTokens",
    "cacheWriteTokens",
    "failed tool result with data.error",
    "failed tool result without data.error",
    "hook abort",
    "killed in the last turn",
    "second model in one session",
    "seed calls",
)


def test_generated_corpus_matches_the_generators_totals(tmp_path: Path) -> None:
    from subagent_catalog.synth.events import WORKER, session_events
    from subagent_catalog.synth.generate import generate
    from subagent_catalog.synth.plan import plan_corpus

    count, seed = 80, 11
    generate(tmp_path / "c", sessions=count, seed=seed, compression="none", damaged_fraction=0.0, jobs=1)
    rows = {row["session_id"]: row for row in read_corpus(tmp_path / "c").sessions.iter_rows(named=True)}
    WORKER.clear()
    WORKER.update(plans=plan_corpus(count, seed, damaged_fraction=0.0), seed=seed)
    session_events.cache_clear()
    cases: Counter[str] = Counter()
    checked = tokens = seeded = 0
    for index, plan in enumerate(WORKER["plans"]):
        events, seed_length = session_events(index)
        expected = _expected_from_events(events, seed_length, cases)
        row = rows[plan.id]
        assert row["verdict"] == "ok"
        assert {name: row[name] for name in RUN_SCHEMA} == expected, plan.id
        samples, calls = _expected_records(events, seed_length)
        assert [tuple(sample.values()) for sample in row["usage_samples"]] == samples, plan.id
        assert [tuple(call.values()) for call in row["tool_call_records"]] == calls, plan.id
        assert (row["outcome"], row["outcome_detail"]) == _expected_outcome(expected), plan.id
        cases["second model in one session"] += len({sample[5:7] for sample in samples if not sample[4]}) > 1
        cases["seed calls"] += any(call[7] for call in calls)
        checked += 1
        tokens += expected["input_tokens"] or 0
        seeded += bool(seed_length)
        cases["last outcome not completed"] += expected["last_turn_outcome"] != "completed"
        cases["error message"] += expected["last_error_message"] is not None
    session_events.cache_clear()
    assert checked == count and tokens > 0 and seeded > 0  # the totals are not trivial
    missing = [
        case for case in (*NEW_CASES, "last outcome not completed", "error message", "titled") if not cases[case]
    ]
    assert not missing, (missing, cases)
