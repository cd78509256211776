"""The events of one planned session and their encoding as log records.

Turns, chunk runs, tool calls, descriptors and seeded replays, encoded with
packed chunk rows as upstream stores them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal

import orjson

from subagent_catalog.read.paths import Compression
from subagent_catalog.synth.plan import (
    BASE_TIME_MS,
    CODE_LINES,
    TASKS,
    WORDS,
    DamageKind,
    SessionPlan,
    log_uniform,
    new_uuid,
)
from subagent_catalog.synth.seeding import descriptor_payload, session_start
from subagent_catalog.synth.variants import ROUTES, STEP_DEBT, Outcome, Variants, extra_rng, repay
from subagent_catalog.synth.writer import EventLog, dumps

WORKER: dict[str, Any] = {}
"""The synthesis this process is writing (plans, root, compression, seed), set by each worker."""


@lru_cache(maxsize=4)
def _text_source(seed: int) -> str:
    rng = random.Random(f"subagent_catalog.synth:text:{seed}")
    parts: list[str] = []
    size = 0
    while size < 300_000:
        if rng.random() < 0.15:
            piece = rng.choice(CODE_LINES) + "\n"
        else:
            piece = " ".join(rng.choices(WORDS, k=rng.randint(6, 18))) + ".\n"
        parts.append(piece)
        size += len(piece)
    return "".join(parts)


class SynthLog(EventLog):
    """An ``EventLog`` with the event shapes of real dsh runs.

    ``rng`` draws everything the corpus's shape depends on (event counts,
    times, ids, text); ``variants`` draws the less common shapes (turn
    outcomes, retries, usage fields, routes, tool errors) from a separate
    generator, so they never shift ``rng``'s stream.

    Examples:
        >>> log = SynthLog("s", rng=random.Random(1), text="lorem ipsum dolor sit amet " * 50)
        >>> log.turn_start()
        >>> log.text_step(1, deltas=3)
        >>> log.turn_end()
        >>> [e["type"] for e in log.events][:3]
        ['turn/start', 'step/start', 'assistant/chunk']
    """

    def __init__(
        self,
        session_id: str,
        *,
        rng: random.Random,
        text: str,
        time_ms: int = BASE_TIME_MS,
        variants: Variants | None = None,
    ) -> None:
        super().__init__(session_id, time=time_ms)
        self.rng = rng
        self.text = text
        self.variants = variants or Variants(random.Random(f"subagent_catalog.synth:extra:{session_id}"))
        self.carry = 0  # time of events drawn but not written, added to the next event
        self.route = ROUTES[0]
        self.own_headers = 0
        self.reason: dict[str, Any] = {"kind": "completed"}

    def add(self, kind: str, data: Any, *, dt: int = 1, **envelope: Any) -> dict[str, Any]:
        """Append one event (after the time of any event drawn but left out) and return it."""
        dt, self.carry = dt + self.carry, 0
        return super().add(kind, data, dt=dt, **envelope)

    def turn_end(self, kind: str | None = None) -> None:
        """Close the current turn with ``kind``, else with the outcome its last step drew."""
        reason = {"kind": kind} if kind is not None else self.reason
        self.reason = {"kind": "completed"}
        self.add("turn/end", {"turn": self.turn, "reason": reason})

    def snippet(self, size: int) -> str:
        """A slice of the text source about ``size`` characters long."""
        size = max(1, min(size, len(self.text) - 1))
        start = self.rng.randrange(0, len(self.text) - size)
        return self.text[start : start + size]

    def words(self, count: int) -> list[str]:
        """``count`` stream deltas (a word each, with its leading space)."""
        return [" " + word for word in self.rng.choices(WORDS, k=count)]

    def message_id(self) -> str:
        """A fresh message id."""
        return new_uuid(self.rng)

    def gap(self, low: int, high: int) -> int:
        """A time step in milliseconds."""
        return self.rng.randint(low, high)

    def spliced(self, text: str | None) -> None:
        """An inbox splice: a queued user message, or the removal of one."""
        if text is None:
            self.add(
                "agent/inbox/spliced", {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}, dt=0
            )
            return
        message = self._user(text)
        self.add(
            "agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [message]}, dt=self.gap(1000, 90_000)
        )

    def _user(self, text: str, source: dict[str, Any] | None = None, ident: str | None = None) -> dict[str, Any]:
        """A user message of ``text`` (with a fresh id unless given one)."""
        return {
            "content": [{"type": "text", "text": text}],
            "source": source or {"kind": "user"},
            "role": "user",
            "id": ident or self.message_id(),
        }

    def user_message(self, text: str, *, source: dict[str, Any] | None = None) -> None:
        """A ``user/message`` on the surface."""
        self.add("user/message", self._user(text, source), dt=self.gap(0, 30), surfaceOp="append")

    def request_header(self, size: int) -> None:
        """The request header a step sends (system prompt of ``size`` characters).

        Its ``reason`` is ``initial`` for the log's first header, ``change``
        when the route differs from the previous header's, else ``resume``.
        """
        self.route = self.variants.route_for(self.own_headers)
        self.own_headers += 1
        config = {"provider": self.route[0], "model": self.route[1]}
        previous = next((e for e in reversed(self.events) if e["type"] == "request/header"), None)
        if previous is None:
            reason = "initial"
        else:
            reason = "change" if previous["data"]["header"]["config"] != config else "resume"
        self.add("request/header", {"header": {"config": config, "system": self.snippet(size)}, "reason": reason}, dt=0)

    def chunk(self, step: int, chunk: dict[str, Any], dt: int) -> None:
        """One ``assistant/chunk`` event."""
        self.add("assistant/chunk", {"turn": self.turn, "step": step, "chunk": chunk}, dt=dt)

    def stream(self, step: int, kind: Literal["text", "reasoning"], index: int, deltas: int, debt: int = 0) -> str:
        """A streamed text or reasoning block: start, deltas, end; returns the text.

        ``debt`` events fewer deltas (more when negative) are written, the
        same text and times (``variants.repay``).
        """
        pieces = self.words(deltas)
        self.chunk(step, {"type": "block-start", "index": index, "blockType": kind}, self.gap(100, 900))
        delta_type = "text-delta" if kind == "text" else "reasoning-delta"
        gaps = [self.gap(0, 40) for _ in pieces]
        for piece, gap in zip(*repay(pieces, gaps, debt), strict=True):
            self.chunk(step, {"type": delta_type, "index": index, "text": piece}, gap)
        body = "".join(pieces)
        self.chunk(step, {"type": "block-end", "index": index, "block": {"type": kind, "text": body}}, self.gap(0, 5))
        return body

    def finish(self, step: int, reason: str, outcome: Outcome = "completed") -> dict[str, int] | None:
        """Usage and finish chunks closing a model response; returns the usage written.

        An ``error`` outcome ends with an error finish (``error-no-usage``:
        without the usage chunk), an ``aborted`` one with neither chunk.
        """
        drawn = {
            "inputTokens": self.rng.randint(800, 60_000),
            "outputTokens": self.rng.randint(20, 2_000),
            "cacheReadTokens": self.rng.randint(0, 50_000),
            "reasoningTokens": self.rng.randint(0, 1_500),
        }
        usage: dict[str, int] | None = self.variants.usage(drawn)
        gap = self.gap(20, 200)
        if outcome in ("aborted", "error-no-usage"):
            usage, self.carry = None, self.carry + gap
        else:
            self.chunk(step, {"type": "usage", "usage": usage}, gap)
        if outcome in ("error", "error-no-usage"):
            failure = self.variants.failure()
            self.reason = {"kind": "error", "error": failure}
            self.chunk(step, {"type": "finish", "reason": {"kind": "error", "failure": failure}}, 0)
        elif outcome == "aborted":
            self.reason = {"kind": "aborted", "reason": self.variants.abort_cause()}
        else:
            if outcome == "max-tokens":
                reason = "max-tokens"
                self.reason = {"kind": "max-tokens"}
            self.chunk(step, {"type": "finish", "reason": {"kind": reason}}, 0)
        return usage

    def assistant_message(
        self,
        step: int,
        content: list[dict[str, Any]],
        usage: dict[str, int] | None = None,
        outcome: Outcome = "completed",
    ) -> None:
        """The assistant message a step settles on (none after an error finish).

        It carries the step's ``usage`` (unless this session's writer leaves
        it out); an aborted step's message is the interrupted one.
        """
        message = {
            "role": "assistant",
            "content": content,
            "source": {"kind": "model", "provider": self.route[0], "model": self.route[1]},
            "id": self.message_id(),
        }
        gap = self.gap(1, 5)
        if outcome in ("error", "error-no-usage"):
            self.carry += gap
            return
        data: dict[str, Any] = {"turn": self.turn, "step": step, "message": message}
        if outcome == "aborted":
            data["interrupted"] = True
        elif usage is not None and self.variants.message_usage:
            data["usage"] = usage
        self.add("assistant/message", data, dt=gap, surfaceOp="append")

    def _step_start(self, step: int, first: str | None) -> None:
        """A ``step/start``; a turn's first step also brings the user's message and the request header."""
        self.add("step/start", {"turn": self.turn, "step": step}, dt=self.gap(5, 40))
        if first is not None:
            self.user_message(first)
            self.request_header(self.rng.randint(2_000, 6_000))

    def text_step(self, step: int, *, deltas: int, reasoning: int = 0, first: str | None = None) -> None:
        """A step that ends with a text answer."""
        self._step_start(step, first)
        outcome = self.variants.outcome()
        if outcome == "retried":  # a failed attempt first: its usage sample is replaced by the next one's
            failure = self.variants.failure()
            self.chunk(step, {"type": "usage", "usage": self.variants.failed_attempt()}, 0)
            self.chunk(step, {"type": "finish", "reason": {"kind": "error", "failure": failure}}, 0)
        if reasoning:
            self.stream(step, "reasoning", 0, reasoning)
        body = self.stream(step, "text", 1 if reasoning else 0, deltas, debt=STEP_DEBT[outcome])
        usage = self.finish(step, "stop", outcome)
        self.assistant_message(step, [{"type": "text", "text": body}], usage, outcome)
        self.add("step/end", {"turn": self.turn, "step": step}, dt=self.gap(1, 3))

    def tool_step(
        self, step: int, *, arg_deltas: int, reasoning: int, result_size: int, first: str | None = None
    ) -> None:
        """A step that calls a tool and records its result."""
        self._step_start(step, first)
        if self.rng.random() < 0.3:
            self.add(
                "request/context",
                {"provider": self.route[0], "model": self.route[1], "contextWindow": 1_000_000},
                dt=0,
            )
        index = 0
        if reasoning:
            self.stream(step, "reasoning", 0, reasoning)
            index = 1
        call_id = f"call_{index:02d}_{self.rng.getrandbits(96):024x}"
        name = self.rng.choice(["read_file", "grep", "shell", "edit_file", "list_dir"])
        path = self.rng.choice(["src/retry.ts", "src/loader.py", "tests/test_loader.py", "README.md", "Cargo.toml"])
        arguments = json.dumps({"path": path, "query": self.snippet(self.rng.randint(10, 60)).strip()})
        step_size = max(1, len(arguments) // arg_deltas)
        pieces = [arguments[i : i + step_size] for i in range(0, len(arguments), step_size)]
        self.chunk(step, {"type": "block-start", "index": index, "blockType": "tool-call"}, self.gap(50, 500))
        for piece in pieces:
            self.chunk(
                step,
                {"type": "tool-call-delta", "index": index, "id": call_id, "name": name, "argumentsDelta": piece},
                self.gap(0, 30),
            )
        self.chunk(
            step,
            {
                "type": "block-end",
                "index": index,
                "block": {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments},
            },
            0,
        )
        usage = self.finish(step, "tool-calls")
        self.assistant_message(
            step, [{"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}], usage
        )
        call_seq = len(self.events)
        self.add(
            "tool/call",
            {"turn": self.turn, "step": step, "callId": call_id, "name": name, "arguments": arguments},
            dt=self.gap(1, 5),
        )
        result: dict[str, Any] = {
            "source": {"kind": "tool", "callId": call_id},
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": call_id,
                    "content": [{"type": "text", "text": self.snippet(result_size)}],
                    "isError": self.rng.random() < 0.05,
                }
            ],
            "role": "user",
            "id": self.message_id(),
        }
        data: dict[str, Any] = {"turn": self.turn, "step": step, "message": result}
        if result["content"][0]["isError"] and (error := self.variants.tool_error()) is not None:
            data["error"] = error
        self.add(
            "tool/result",
            data,
            dt=self.gap(10, 30_000),
            sourceEventSeqs=[call_seq],
            surfaceOp="append",
        )
        self.add("step/end", {"turn": self.turn, "step": step}, dt=self.gap(1, 3))


@lru_cache(maxsize=48)
def session_events(index: int) -> tuple[tuple[dict[str, Any], ...], int | None]:
    """The events of plan ``index`` of the current synthesis and its seed length.

    Seeded sessions start with their parent's events up to the end of one of
    its turns (their parent's descriptor included); the events never depend
    on the worker or on the order sessions are written in.

    Examples:
        >>> from subagent_catalog.synth.plan import plan_corpus
        >>> WORKER.update(plans=plan_corpus(3, seed=1), seed=1)
        >>> events, seed_length = session_events(0)
        >>> events[0]["type"] != ""
        True
    """
    plan = worker_plans()[index]
    seed: int = WORKER["seed"]
    rng = random.Random(f"subagent_catalog.synth:events:{seed}:{index}")
    variants = Variants(extra_rng(seed, index))
    log = SynthLog(plan.id, rng=rng, text=_text_source(seed), time_ms=plan.created_at, variants=variants)
    seed_length, pending_descriptor = session_start(log, plan, lambda parent: session_events(parent)[0])
    own_start = len(log.events)
    damage_at = own_start + max(1, plan.size // 2)
    unknown_done = plan.damage != "unknown-event-type"
    turn = 0
    while len(log.events) - own_start < plan.size or turn == 0:
        turn += 1
        task = rng.choice(TASKS)
        log.spliced(f"Task: {task}. {log.snippet(rng.randint(20, 200))}")
        log.turn_start()
        log.spliced(None)
        if pending_descriptor:
            log.descriptor(descriptor_payload(plan))
            pending_descriptor = False
        if turn == 1 and seed_length is None:
            log.add(
                "session/title",
                {"title": task[:24], "messageSeqs": [len(log.events) + 2], "source": {"kind": "fallback"}},
                dt=0,
            )
        steps = 1 + min(12, int(rng.expovariate(1 / 1.8)))
        budget = max(4, (plan.size - (len(log.events) - own_start)) // (steps * 2))
        for step in range(1, steps + 1):
            first = f"Task: {task}." if step == 1 else None
            reasoning = rng.randint(3, min(40, budget)) if rng.random() < 0.6 else 0
            if step < steps:
                log.tool_step(
                    step,
                    arg_deltas=rng.randint(2, 12),
                    reasoning=reasoning,
                    result_size=log_uniform(rng, 1_024, 51_200 if rng.random() < 0.3 else 8_192),
                    first=first,
                )
            else:
                log.text_step(step, deltas=rng.randint(3, max(4, min(60, budget))), reasoning=reasoning, first=first)
            if not unknown_done and len(log.events) >= damage_at:
                log.add("x-vendor/trace", {"span": rng.getrandbits(32)}, dt=0)
                unknown_done = True
        if rng.random() < 0.15:
            log.add(
                "todo/write",
                {"todos": [{"content": rng.choice(TASKS), "status": "in_progress"}]},
                dt=rng.randint(1, 50),
            )
        if rng.random() < 0.05:
            log.add("x-future/telemetry", {"v": 1}, dt=0, ignorable=True)
        last = unknown_done and len(log.events) + 1 - own_start >= plan.size
        if last and variants.killed():
            # Killed before its turn/end: a message queued meanwhile is the log's last event (the same count).
            queued = log._user("Are you still there?", ident=new_uuid(variants.rng))
            log.add("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [queued]}, dt=1)
        else:
            log.turn_end()
    if not unknown_done:
        log.add("x-vendor/trace", {"span": 0}, dt=0)
        log.turn_start()
        log.turn_end()
    return tuple(log.events), seed_length


_FLUSH_AFTER = frozenset(
    {"step/end", "turn/end", "session/end-seed", "subagent/descriptor", "tool/result", "todo/write"}
)


_BATCH_LIMIT = 64


def _batches(events: Sequence[dict[str, Any]], seed_length: int | None) -> list[list[dict[str, Any]]]:
    out: list[list[dict[str, Any]]] = []
    start = seed_length or 0
    for low in range(0, start, 512):
        out.append(list(events[low : min(start, low + 512)]))
    current: list[dict[str, Any]] = []
    for event in events[start:]:
        current.append(event)
        if event["type"] in _FLUSH_AFTER or len(current) >= _BATCH_LIMIT:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def _packable(event: dict[str, Any]) -> tuple[Any, ...] | None:
    if event["type"] != "assistant/chunk" or len(event) != 4:
        return None
    data = event["data"]
    chunk = data.get("chunk") if isinstance(data, dict) else None
    if not isinstance(chunk, dict):
        return None
    kind = chunk.get("type")
    if kind in ("text-delta", "reasoning-delta") and len(chunk) == 3:
        return (kind, data["turn"], data["step"], chunk["index"])
    if kind == "tool-call-delta" and len(chunk) == 5:
        return (kind, data["turn"], data["step"], chunk["index"], chunk["id"], chunk["name"])
    return None


_ROW_TAG = {"text-delta": "text-chunks", "reasoning-delta": "reasoning-chunks", "tool-call-delta": "tool-call-chunks"}


def pack_rows(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pack runs of 2+ text, reasoning or tool-call deltas into packed chunk rows.

    Runs share turn, step and block index (and call id and name); members
    have consecutive seqs. Everything else is kept as is.

    Examples:
        >>> evs = [{"type": "assistant/chunk", "seq": i, "time": 5 + i,
        ...         "data": {"turn": 1, "step": 1, "chunk": {"type": "reasoning-delta", "index": 0, "text": "w"}}}
        ...        for i in range(3)]
        >>> [(r["type"], r["seq0"], r["data"]["dt"]) for r in pack_rows(evs)]
        [('reasoning-chunks', 0, [1, 1])]
    """
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []
    run_key: tuple[Any, ...] | None = None

    def flush() -> None:
        if len(run) >= 2 and run_key is not None:
            first = run[0]
            tool = run_key[0] == "tool-call-delta"
            data: dict[str, Any] = {"turn": run_key[1], "step": run_key[2], "index": run_key[3]}
            if tool:
                data["id"], data["name"] = run_key[4], run_key[5]
            data["dt"] = [run[i + 1]["time"] - run[i]["time"] for i in range(len(run) - 1)]
            data["args" if tool else "texts"] = [e["data"]["chunk"]["argumentsDelta" if tool else "text"] for e in run]
            out.append({"type": _ROW_TAG[run_key[0]], "seq0": first["seq"], "time0": first["time"], "data": data})
        else:
            out.extend(run)
        run.clear()

    for event in events:
        key = _packable(event)
        if not (key is not None and run and key == run_key and event["seq"] == run[-1]["seq"] + 1):
            flush()
            run_key = key
        (run if key is not None else out).append(event)
    flush()
    return out


def _dump(record: Any) -> bytes:
    try:
        return orjson.dumps(record)
    except TypeError:
        return dumps(record)


def encode_session(
    head: dict[str, Any],
    events: Sequence[dict[str, Any]],
    seed_length: int | None,
    compression: Compression,
    *,
    damage: DamageKind | None = None,
    rng: random.Random | None = None,
    compressor: Any = None,
) -> bytes:
    """The bytes of one synthetic log, with encoding-level damage applied.

    Records are grouped in write batches (the seed as one write, then a
    batch per step, tool result or turn end); zstd logs put each batch in
    its own checksummed frame after a header-only frame.

    Examples:
        >>> from subagent_catalog.synth.writer import header
        >>> encode_session(header("a", created_at=1), [], None, "none", damage="empty-file")
        b''
        >>> encode_session(header("a", created_at=1), [], None, "none").count(b"\\n")
        1
    """
    rng = rng or random.Random(0)
    if damage == "empty-file":
        return b""
    head_line = _dump(head) + b"\n"
    batches = (
        []
        if damage == "header-only"
        else [[_dump(r) + b"\n" for r in pack_rows(b)] for b in _batches(events, seed_length)]
    )
    if damage in ("garbage-line", "seq-gap"):
        _damage_records(batches, damage, rng)
    tail_records: list[bytes] = []
    if damage == "torn-tail":
        turn = max((int(e["data"]["turn"]) for e in events if e["type"] == "turn/start"), default=0) + 1
        nxt = len(events)
        stamp = int(events[-1]["time"]) + 5 if events else int(head["createdAt"])
        tail_records = [
            _dump({"type": "turn/start", "seq": nxt, "time": stamp, "data": {"turn": turn}}) + b"\n",
            _dump({"type": "step/start", "seq": nxt + 1, "time": stamp + 3, "data": {"turn": turn, "step": 1}}) + b"\n",
        ]
    if compression == "none":
        data = head_line + b"".join(b"".join(batch) for batch in batches)
        if tail_records:
            torn = b"".join(tail_records)
            data += torn[: rng.randint(len(tail_records[0]) + 5, len(torn) - 2)]
        return data
    if compressor is None:
        import zstandard

        compressor = zstandard.ZstdCompressor(level=3, write_checksum=True)
    frames: list[bytes] = [compressor.compress(head_line)]
    frames.extend(compressor.compress(b"".join(batch)) for batch in batches)
    if tail_records:
        frame: bytes = compressor.compress(b"".join(tail_records))
        frames.append(frame[: max(6, int(len(frame) * rng.uniform(0.3, 0.9)))])
    return b"".join(frames)


def _damage_records(batches: list[list[bytes]], damage: DamageKind, rng: random.Random) -> None:
    """Insert a garbage line or remove one record just before the last ``turn/end``."""
    flat = [(b, r) for b, batch in enumerate(batches) for r in range(len(batch))]
    ends = [i for i, (b, r) in enumerate(flat) if b'"type":"turn/end"' in batches[b][r]]
    if not ends or ends[-1] == 0:
        return
    b, r = flat[ends[-1]]
    if damage == "garbage-line":
        garbage = rng.choice([b'{"type":"step/start","seq":', b"\x00\x00\x00\x00", b"<<<<<<< HEAD", b""])
        batches[b].insert(r, garbage + b"\n")
        return
    for position in range(ends[-1] - 1, -1, -1):
        pb, pr = flat[position]
        record = batches[pb][pr]
        if b'"seq":' in record and b'"seq0":' not in record:
            del batches[pb][pr]
            return


def worker_plans() -> Sequence[SessionPlan]:
    """The plans of the synthesis this process is writing.

    Examples:
        >>> from subagent_catalog.synth.plan import plan_corpus
        >>> WORKER.update(plans=plan_corpus(2, seed=1), seed=1)
        >>> len(worker_plans())
        2
    """
    plans: Sequence[SessionPlan] = WORKER["plans"]
    return plans
