"""Property tests: the reader never raises on damage; the catalog keeps its invariants."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from subagent_catalog.catalog.collation import collation_key
from subagent_catalog.catalog.listing import children_rows, descendant_rows, list_children, list_descendants
from subagent_catalog.catalog.tables import catalog, catalog_descendants
from subagent_catalog.corpus import read_corpus
from subagent_catalog.read.logread import analyse_log
from subagent_catalog.synth.writer import EventLog, descriptor, encode_log, header, write_file, write_session
from tests.helpers import healthy

CHILD = header("c", created_at=3, parent="P", subagent=True)


def valid_log(compression: str) -> bytes:
    log = EventLog("c")
    log.turn_start()
    log.user("work")
    log.descriptor(descriptor("continuable", label="x"))
    log.assistant("answer", chunks=4)
    log.turn_end()
    log.turn_start()
    log.tool_round("call-1", "result")
    log.turn_end()
    return encode_log(CHILD, log.events, compression, batch=3)  # type: ignore[arg-type]


LOGS = {c: valid_log(c) for c in ("none", "zstd")}


def read_one(data: bytes, compression: str) -> tuple[pl.DataFrame, pl.DataFrame, str]:
    root = Path(tempfile.mkdtemp())
    try:
        path = write_file(root / "_no-cwd" / "c" / ("session.jsonl" + (".zstd" if compression == "zstd" else "")), data)
        corpus = read_corpus(root, compression=compression)  # type: ignore[arg-type]
        return corpus.sessions, corpus.problems, path
    finally:
        shutil.rmtree(root)


damage = st.sampled_from(["none", "zstd"]).flatmap(
    lambda c: st.tuples(
        st.just(c),
        st.one_of(
            st.integers(0, len(LOGS[c])).map(lambda n: ("truncate", n, 0)),
            st.tuples(st.just("flip"), st.integers(0, len(LOGS[c]) - 1), st.integers(1, 255)),
        ),
    )
)


@given(damage)
@settings(max_examples=150)
def test_truncation_or_byte_flip_never_raises_and_is_accounted_for(case: tuple) -> None:
    compression, (kind, position, mask) = case
    data = bytearray(LOGS[compression])
    if kind == "truncate":
        data = data[:position]
    else:
        data[position] ^= mask
    sessions, problems, path = read_one(bytes(data), compression)
    assert path in set(sessions["path"]) or path in set(problems["path"])
    row = sessions.filter(pl.col("path") == path)
    if row.height:
        assert row["verdict"].item() in {"ok", "torn-tail", "prefix", "failed", "skipped"}


@given(st.binary(max_size=400), st.sampled_from(["none", "zstd"]))
@settings(max_examples=100)
def test_arbitrary_bytes_never_raise(data: bytes, compression: str) -> None:
    facts = analyse_log(data, compression)  # type: ignore[arg-type]
    assert facts.verdict in {"ok", "torn-tail", "prefix", "failed"}


# --- catalog invariants on random trees --------------------------------------------------------

node_ids = st.text(alphabet="aAbB-_.09xé", min_size=1, max_size=4)


@st.composite
def forests(draw: st.DrawFn) -> list[tuple[str, str | None, int, str]]:
    """(id, parent, createdAt, kind) with kind in healthy/oneshot/broken/fork/root."""
    count = draw(st.integers(1, 14))
    ids = draw(st.lists(node_ids, min_size=count, max_size=count, unique=True))
    nodes = []
    for index, session_id in enumerate(ids):
        parent = draw(st.sampled_from([None, *ids[:index]])) if index else None
        kind = "root" if parent is None else draw(st.sampled_from(["healthy", "oneshot", "broken", "fork"]))
        nodes.append((session_id, parent, draw(st.integers(0, 3)), kind))
    return nodes


def build(nodes: list[tuple[str, str | None, int, str]], compression: str) -> Path:
    root = Path(tempfile.mkdtemp())
    for session_id, parent, created, kind in nodes:
        head = header(session_id, created_at=created, parent=parent, subagent=kind in ("healthy", "oneshot", "broken"))
        if kind == "healthy":
            events = healthy(session_id, f"label {session_id}")
        elif kind == "oneshot":
            events = healthy(session_id, "o", mode="one-shot")
        elif kind == "broken":
            events = healthy(session_id)[:2]
        else:
            events = []
        write_session(root, head, events, compression)  # type: ignore[arg-type]
    return root


@given(forests(), st.sampled_from(["none", "zstd"]))
@settings(max_examples=40)
def test_catalog_invariants(nodes: list[tuple[str, str | None, int, str]], compression: str) -> None:
    root = build(nodes, compression)
    try:
        corpus = read_corpus(root, compression=compression)  # type: ignore[arg-type]
        assert corpus.listing_error is None
        whole = catalog(corpus)
        deep = catalog_descendants(corpus)
        for session_id, *_ in nodes:
            children = children_rows(corpus, session_id)
            descendants = descendant_rows(corpus, session_id)
            # Descendants hold the children's rows at depth 1, in the same order.
            at_one = [r.upstream() for r in descendants if r.depth == 1]
            assert at_one == [{**r.upstream(), "parentId": session_id, "depth": 1} for r in children]
            # Siblings are ordered by createdAt, then by collation key.
            keys = [(r.created_at_ms, collation_key(r.id)) for r in children]
            assert keys == sorted(keys)
            # Each row's parentId is its header's parent, and depth counts the edges up to the root.
            parents = {n[0]: n[1] for n in nodes}
            for row in descendants:
                assert row.parent == parents[row.id]
                depth, up = 1, parents[row.id]
                while up != session_id:
                    depth, up = depth + 1, parents[up]
                assert row.depth == depth
            # catalog() equals the per-parent calls.
            assert (
                whole.filter(pl.col("parent") == session_id)
                .drop("parent", "parent_json")
                .equals(list_children(corpus, session_id))
            )
            assert (
                deep.filter(pl.col("root") == session_id)
                .drop("root", "root_json")
                .equals(list_descendants(corpus, session_id))
            )
    finally:
        shutil.rmtree(root)


@given(forests())
@settings(max_examples=10)
def test_serial_equals_parallel(nodes: list[tuple[str, str | None, int, str]]) -> None:
    root = build(nodes * 1, "zstd")
    try:
        from subagent_catalog.read import pool as corpus_module

        threshold = corpus_module.PARALLEL_THRESHOLD
        corpus_module.PARALLEL_THRESHOLD = 1
        try:
            parallel = read_corpus(root, compression="zstd", jobs=2)
        finally:
            corpus_module.PARALLEL_THRESHOLD = threshold
        serial = read_corpus(root, compression="zstd", jobs=1)
        assert serial.sessions.equals(parallel.sessions)
        assert catalog(serial).equals(catalog(parallel))
    finally:
        shutil.rmtree(root)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="-0123456789abcdefghijklmnopqrstuvwxyz", max_size=40))
def test_lowercase_ids_get_pyuca_keys_without_its_table(text: str) -> None:
    from subagent_catalog.catalog import collation

    # The built-in primary weights are the ones pyuca's table gives (an independent check: pyuca is the reference).
    assert collation._plain_key(text) == tuple(collation._collator().sort_key(text))


def test_a_uuid_tie_does_not_load_the_collation_table() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from subagent_catalog.catalog.collation import collation_key\n"
        "ids = sorted(['84a78383-0550-4aa6-836a-7e62289fe70d', '00017b81-b89d-4473-85ba-9092251178c4'], "
        "key=collation_key)\n"
        "print(ids[0][:4], 'pyuca' in sys.modules)\n"
        "collation_key('B')\n"
        "print('pyuca' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0001", "False", "True"]


# --- active time: a union never exceeds the whole it is part of --------------------------------------------

TIME_OPS = ("start", "end", "end-other", "call", "result", "chunk", "title")
time_ops = st.lists(st.tuples(st.sampled_from(TIME_OPS), st.integers(0, 4), st.integers(-3, 40)), max_size=30)


def _timed_events(ops: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
    """A log from ops: turns that end, end under another number or never end; calls answered or not; a clock
    that may step back (a negative step)."""
    events: list[dict[str, Any]] = []
    clock, turn = 1_000, 0
    for kind, key, step in ops:
        clock = max(0, clock + step)
        call_id = f"c{key}"
        if kind == "start":
            turn += 1
            event: tuple[str, Any] = ("turn/start", {"turn": turn})
        elif kind in ("end", "end-other"):
            event = ("turn/end", {"turn": turn + (5 if kind == "end-other" else 0), "reason": {"kind": "completed"}})
        elif kind == "call":
            event = ("tool/call", {"turn": turn, "step": 1, "callId": call_id, "name": "shell", "arguments": "{}"})
        elif kind == "result":
            block = {"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": "ok"}]}
            message = {"id": f"r{len(events)}", "role": "user", "content": [block]}
            event = (
                "tool/result",
                {"turn": turn, "step": 1, "message": {**message, "source": {"kind": "tool", "callId": call_id}}},
            )
        elif kind == "chunk":
            event = (
                "assistant/chunk",
                {"turn": turn, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}},
            )
        else:
            event = ("session/title", {"title": "t", "messageSeqs": [], "source": {"kind": "fallback"}})
        record = {"type": event[0], "seq": len(events), "time": clock, "data": event[1]}
        if kind == "result":
            record["surfaceOp"] = "append"
        events.append(record)
    return events


def _active_oracle(events: list[dict[str, Any]]) -> tuple[int, int]:
    """(active, busy) by the definition, counted millisecond by millisecond."""
    turns: list[tuple[int, int]] = []
    calls: list[tuple[int, int]] = []
    opened: int | None = None
    pending: dict[str, int] = {}
    for index, event in enumerate(events):
        kind, data, time = event["type"], event["data"], event["time"]
        if kind == "turn/start":
            if opened is not None:  # never ended: open to the event before this one
                turns.append((opened, events[index - 1]["time"]))
            opened = time
        elif kind == "turn/end":
            if opened is not None:
                turns.append((opened, time))
            opened = None
            pending.clear()
        elif kind == "tool/call":
            pending[data["callId"]] = time
        elif kind == "tool/result" and data["message"]["source"]["callId"] in pending:
            calls.append((pending.pop(data["message"]["source"]["callId"]), time))
    if opened is not None:
        turns.append((opened, events[-1]["time"]))
    on = {ms for start, end in turns for ms in range(start, end)}
    running = {ms for start, end in calls for ms in range(start, end)}
    return len(on), len(on & running)


@given(time_ops)
@settings(max_examples=200, deadline=None)
def test_tool_busy_within_active_within_wall(ops: list[tuple[str, int, int]]) -> None:
    from tests.test_fastpath import compare

    events = _timed_events(ops)
    data = encode_log(header("t", created_at=1), events, "none")
    compare(data, "none")  # the typed path, where it answers, folds the same
    run = analyse_log(data, "none").run
    assert run is not None
    if not events:
        assert run.active_ms is None and run.tool_busy_ms is None
        return
    assert run.first_ms is not None and run.last_ms is not None
    assert 0 <= run.tool_busy_ms <= run.active_ms <= run.last_ms - run.first_ms  # type: ignore[operator]
    assert run.tool_busy_ms <= run.tool_ms  # type: ignore[operator]
    assert (run.active_ms, run.tool_busy_ms) == _active_oracle(events)
