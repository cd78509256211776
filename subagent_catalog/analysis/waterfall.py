"""``waterfall``: one run's turns, model steps and tool calls as bars on one time axis (the data the views draw).

One row per bar, from a session's ``transcript`` rows (its own rows: a fork's inherited seed is its
parent's time and is left to the parent's waterfall):

- ``turn``: ``turn/start`` to its ``turn/end`` (``outcome`` the end's kind; ``open`` and no end
  when the turn never ended);
- ``model``: a model step from its ``step/start`` to its ``assistant/message``, ``ttft_ms`` after
  its start the first token (null when no token streamed); a stream that never got its message
  (a retried attempt, a turn that ended first, a torn log) is a ``model`` bar from its first to
  its last chunk, ``partial`` and without a first token;
- ``tool``: a tool call from its ``tool/call`` to the first ``tool/result`` answering it, ``failed``
  when that result is an error; a call never started has no start, a call never answered no end;
- ``retry``: a failed model call that was retried (an instant: ``start_ms == end_ms``).

Model bars and tool bars that overlap in time are put in ``lane``\\ s (0 first), so parallel tool
calls sit side by side. A time the log does not give is null, never 0 and never guessed: the row
stays (nothing is dropped) and the views draw nothing for the missing part and say so.
"""

from __future__ import annotations

import heapq
from typing import Any, Literal

import orjson
import polars as pl

from subagent_catalog.frames.units import human_duration

WaterfallKind = Literal["turn", "model", "tool", "retry"]

WATERFALL_SCHEMA: dict[str, Any] = {
    "kind": pl.String,
    "turn": pl.Int64,
    "step": pl.Int64,
    "seq": pl.Int64,
    "start_ms": pl.Int64,
    "end_ms": pl.Int64,
    "ttft_ms": pl.Int64,
    "lane": pl.Int64,
    "failed": pl.Boolean,
    "partial": pl.Boolean,
    "outcome": pl.String,
    "label": pl.String,
}
"""The waterfall's columns: ``seq`` is the transcript row the bar shows (its page anchor ``seq-N``),
``start_ms``/``end_ms`` epoch milliseconds (null when the log does not give them), ``ttft_ms`` a model
step's first-token latency, ``lane`` the bar's lane among its kind's overlapping bars, ``outcome`` a
turn's end kind (``open`` when it never ended), ``label`` one line saying what the bar is."""

LABEL_CLIP = 200
"""Characters of a label taken from the log (a tool name, a failure message)."""


def _detail(row: dict[str, Any]) -> dict[str, Any]:
    raw = row["detail"]
    if not raw:
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _clip(text: str | None) -> str:
    text = (text or "").replace("\n", " ")
    return text if len(text) <= LABEL_CLIP else text[:LABEL_CLIP] + "…"


def _span(start: int | None, end: int | None) -> str:
    return human_duration(end - start) if start is not None and end is not None else "end unknown"


def _bar(kind: WaterfallKind, row: dict[str, Any], start: int | None, end: int | None, label: str) -> dict[str, Any]:
    bar: dict[str, Any] = dict.fromkeys(WATERFALL_SCHEMA)  # ttft_ms, lane and outcome: None
    bar.update(kind=kind, turn=row["turn"], step=row["step"], seq=row["seq"], start_ms=start, end_ms=end)
    return bar | {"failed": False, "partial": False, "label": label}


def _model(row: dict[str, Any]) -> dict[str, Any]:
    start, llm, ttft = row["step_start_ms"], row["llm_ms"], row["ttft_ms"]
    bar = _bar("model", row, start, start + llm, "")
    bar["ttft_ms"] = ttft
    model = _detail(row).get("model")
    first = f"first token after {human_duration(ttft)}" if ttft is not None else "no token streamed"
    where = f"{row['turn'] if row['turn'] is not None else '?'}.{row['step'] if row['step'] is not None else '?'}"
    bar["label"] = f"model step {where}{f' · {_clip(model)}' if model else ''} · {human_duration(llm)} · {first}"
    return bar


def _partial(rows: list[dict[str, Any]], detail: dict[str, Any]) -> dict[str, Any]:
    times = [r["time_ms"] for r in rows if r["time_ms"] is not None]
    lasts = [r["last_time_ms"] for r in rows if r["last_time_ms"] is not None]
    start, end = (min(times), max(lasts)) if times and lasts else (None, None)
    bar = _bar("model", rows[0], start, end, "")
    bar["partial"] = True
    bar["failed"] = any(r["is_error"] for r in rows)
    why = detail.get("partial") or "no message"
    failure = f": {_clip(detail['failure'])}" if isinstance(detail.get("failure"), str) else ""
    bar["label"] = f"model stream without a message ({_clip(why)}){failure} · from its first to its last chunk"
    return bar


def _tools(own: list[dict[str, Any]]) -> list[dict[str, Any]]:
    bars: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    orphans: set[int] = set()  # positions of results without their call
    for row in own:
        if row["kind"] == "tool-call":
            started = _detail(row).get("started_ms")
            bar = _bar("tool", row, started if isinstance(started, int) else None, None, "")
            bar["label"] = _clip(row["name"] or "?")
            bars.append(bar)
            if row["call_id"] is not None:
                calls.setdefault(row["call_id"], bar)
        elif row["kind"] == "tool-result":
            detail = _detail(row)
            if detail.get("repeat"):
                continue  # a second result for the call: the call ended at its first
            call: dict[str, Any] | None = calls.pop(row["call_id"], None) if row["call_id"] is not None else None
            if call is None:  # a result that answers no call of the log
                call = _bar("tool", row, None, None, f"result of {_clip(row['name'] or '?')} without its call")
                orphans.add(len(bars))
                bars.append(call)
            call["end_ms"] = row["time_ms"]
            call["failed"] = bool(row["is_error"])
            error = detail.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            if call["failed"]:
                call["label"] += f" · failed{f' ({_clip(str(code))})' if code is not None else ''}"
    for at, bar in enumerate(bars):
        if at in orphans:
            continue
        if bar["start_ms"] is None:
            bar["label"] = f"tool {bar['label']} · requested, never started"
        elif bar["end_ms"] is None:
            bar["label"] = f"tool {bar['label']} · no result: its end is unknown"
        else:
            bar["label"] = f"tool {bar['label']} · {_span(bar['start_ms'], bar['end_ms'])}"
    return bars


def _lanes(bars: list[dict[str, Any]]) -> None:
    """Give overlapping bars of one kind different lanes (the lowest free lane, in start order)."""
    timed = sorted((b for b in bars if b["start_ms"] is not None), key=lambda b: (b["start_ms"], b["seq"] or 0))
    busy: list[tuple[int, int]] = []  # (end, lane) of the lanes in use
    free: list[int] = []
    lanes = 0
    for bar in timed:
        start = bar["start_ms"]
        while busy and busy[0][0] <= start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, lanes = lanes, lanes + 1
        bar["lane"] = lane
        end = bar["end_ms"] if bar["end_ms"] is not None else start  # an unknown end holds its lane for an instant
        heapq.heappush(busy, (max(end, start + 1), lane))


def waterfall(rows: pl.DataFrame) -> pl.DataFrame:
    """One run's turns, model steps and tool calls as bars on one time axis (``WATERFALL_SCHEMA``).

    Pure: ``rows`` are one session's ``transcript`` rows; the bars are in start order (bars
    without a start last, in log order). Rows of a fork's seed are left out (their time is
    the parent's).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.analysis.transcript import transcript
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> root = tempfile.mkdtemp()
        >>> log = EventLog("s1"); log.turn_start(); log.user("go")
        >>> log.assistant("thinking", chunks=2); log.tool_round("c1", "ok"); log.turn_end()
        >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
        >>> bars = waterfall(transcript(read_corpus(root), "s1"))
        >>> bars.select("kind", "start_ms", "end_ms", "ttft_ms", "lane").with_columns(
        ...     pl.col("start_ms", "end_ms") - 1_700_000_000_000).rows()
        [('turn', 1, 13, None, None), ('model', 3, 6, 1, 0), ('model', 8, 9, None, 0), ('tool', 10, 11, None, 0)]
        >>> bars["label"][3]
        'tool read_file · 1 ms'
    """
    own = rows.filter(~pl.col("in_seed").fill_null(False)).to_dicts()
    bars: list[dict[str, Any]] = []
    opened: dict[Any, dict[str, Any]] = {}
    for row in own:
        if row["kind"] == "turn-start":
            bar = _bar("turn", row, row["time_ms"], None, "")
            bar["outcome"] = "open"
            opened[row["turn"]] = bar
            bars.append(bar)
        elif row["kind"] == "turn-end":
            ended: dict[str, Any] | None = opened.pop(row["turn"], None)
            if ended is None:  # its start is not in the own rows (a fork's seed, a torn head)
                ended = _bar("turn", row, None, None, "")
                bars.append(ended)
            ended["end_ms"] = row["time_ms"]
            ended["outcome"] = row["name"] or "other"
            ended["failed"] = bool(row["is_error"])
    for bar in bars:
        how = "never ended" if bar["outcome"] == "open" else bar["outcome"]
        number = bar["turn"] if bar["turn"] is not None else "?"
        bar["label"] = f"turn {number} · {how} · {_span(bar['start_ms'], bar['end_ms'])}"
    models: list[dict[str, Any]] = []
    stream: list[dict[str, Any]] = []
    for row in own:
        if row["kind"] == "retry":
            bar = _bar(
                "retry", row, row["time_ms"], row["time_ms"], f"model call failed, retried: {_clip(row['text'])}"
            )
            bar["failed"] = True
            bars.append(bar)
        elif row["llm_ms"] is not None and row["step_start_ms"] is not None:
            models.append(_model(row))
        elif row["partial"] and row["kind"] in ("assistant", "reasoning", "tool-call"):
            stream.append(row)
            detail = _detail(row)
            if "partial" in detail:  # the last row of a stream that never got its message
                models.append(_partial(stream, detail))
                stream = []
    if stream:
        models.append(_partial(stream, {}))
    tools = _tools(own)
    _lanes(models)
    _lanes(tools)
    bars += models + tools
    frame = pl.DataFrame(bars, schema=WATERFALL_SCHEMA)
    order = pl.col("start_ms").is_null()
    return frame.with_row_index("_at").sort(order, "start_ms", "_at").drop("_at")
