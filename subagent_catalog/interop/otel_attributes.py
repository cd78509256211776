"""The attributes of each kind of span, in OpenInference and GenAI terms (``otel_conventions`` names them).

Token counts: dsh's ``inputTokens`` is the *uncached* input (billed input =
input + cache read + cache write) and ``reasoningTokens`` are part of
``outputTokens``. OpenInference's ``llm.token_count.prompt`` and GenAI's
``gen_ai.usage.input_tokens`` count the whole prompt, cached tokens
included, so they are written as input + cache read + cache write, with the
cache parts beside them; the raw dsh fields are kept as ``dsh.usage.*``. A
field no usage sample carries is left out, never written as 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from subagent_catalog.interop.otel_conventions import (
    AGENT,
    CHAIN,
    GEN_AI,
    LLM,
    MAX_MESSAGES,
    OI,
    SPAN_KIND,
    TOOL,
    Conventions,
    clip,
    wants,
)
from subagent_catalog.read.jsvalue import is_safe_integer

JSON = "application/json"
TEXT = "text/plain"


@dataclass(frozen=True)
class Message:
    """One message of an LLM span's input or output."""

    role: str
    text: str
    call_id: str | None = None
    calls: tuple[tuple[str | None, str | None, str | None], ...] = ()  # (call id, tool name, arguments)


@dataclass(frozen=True)
class StepUsage:
    """One model step's model and token counts (the raw dsh usage fields; ``None``: not in the sample).

    ``price=`` functions of ``to_otlp`` receive it.
    """

    provider: str | None
    model: str | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    time_ms: int | None = None
    """When the step ended (ms since the epoch): prices are looked up at this time."""

    @property
    def prompt_tokens(self) -> int | None:
        """Input + cache read + cache write (the whole prompt), or ``None`` when no part is known.

        Examples:
            >>> StepUsage("p", "m", 10, 2, 5).prompt_tokens, StepUsage("p", "m").prompt_tokens
            (15, None)
        """
        parts = [self.input_tokens, self.cache_read_tokens, self.cache_write_tokens]
        known = [part for part in parts if part is not None]
        return sum(known) if known else None


PriceFunction = Callable[[StepUsage], float | None]
"""Gives a model step's cost in USD (``None``: unknown); ``to_otlp(price=...)`` fills ``llm.cost.total``."""


@dataclass(frozen=True)
class Export:
    """The settings every span of one export shares (``otel.export_settings`` makes them)."""

    resource: Resource
    scope: InstrumentationScope
    conventions: Conventions
    max_text: int
    price: PriceFunction | None = None
    export_id: str | None = None  # ``ExportIdentity.name``, on every AGENT span as ``dsh.export.id``


_USAGE_FIELDS = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_read_tokens": "cacheReadTokens",
    "cache_write_tokens": "cacheWriteTokens",
    "reasoning_tokens": "reasoningTokens",
}


def step_usage(model: str | None, usage: Any, time_ms: int | None = None) -> StepUsage:
    """The ``StepUsage`` of a step from its ``provider/model`` and its usage sample (non-negative safe integers only).

    Examples:
        >>> usage = step_usage("deepseek/chat", {"inputTokens": 5, "outputTokens": 2.5})
        >>> usage.provider, usage.model, usage.input_tokens, usage.output_tokens
        ('deepseek', 'chat', 5, None)
    """
    provider, _, name = (model or "").partition("/")
    counts: dict[str, int | None] = {}
    for field, key in _USAGE_FIELDS.items():
        value = usage.get(key) if isinstance(usage, dict) else None
        counts[field] = int(value) if is_safe_integer(value) and value >= 0 else None
    return StepUsage(provider or None, name or None, **counts, time_ms=time_ms)


def _kind(export: Export, kind: str, operation: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if wants(export.conventions, "openinference"):
        out[SPAN_KIND] = kind
    if operation is not None and wants(export.conventions, "gen_ai"):
        out[GEN_AI.GEN_AI_OPERATION_NAME] = operation
    return out


def _io(export: Export, value: str | None, output: str | None, *, mime: str = TEXT) -> dict[str, Any]:
    if not wants(export.conventions, "openinference"):
        return {}
    out: dict[str, Any] = {}
    if value is not None:
        out[OI.INPUT_VALUE] = clip(value, export.max_text)
        out[OI.INPUT_MIME_TYPE] = mime
    if output is not None:
        out[OI.OUTPUT_VALUE] = clip(output, export.max_text)
        out[OI.OUTPUT_MIME_TYPE] = TEXT
    return out


def _session(session: dict[str, Any]) -> dict[str, Any]:
    return {OI.SESSION_ID: session["session_id"], "dsh.session.id": session["session_id"]}


def agent(
    export: Export, session: dict[str, Any], first_user: str | None, last_text: str | None, spawn: dict[str, Any]
) -> dict[str, Any]:
    """The AGENT span's attributes (the session header, its identity, how it was started).

    Examples:
        >>> from subagent_catalog.interop.otel import export_settings
        >>> row = {"session_id": "s1", "identity_label": None, "origin": None, "parent_session": None,
        ...        "seed_length": None, "delegation_depth": 0, "identity_mode": None, "agent_preset": None,
        ...        "verdict": "ok", "path": "/r/p/s1/session.jsonl", "cwd": "/w"}
        >>> agent(export_settings(), row, "hi", None, {})["openinference.span.kind"]
        'AGENT'
    """
    out = _kind(export, AGENT, "invoke_agent") | _session(session) | _io(export, first_user, last_text)
    name = session.get("identity_label") or session.get("agent_preset") or session["session_id"]
    if wants(export.conventions, "openinference"):
        out[OI.AGENT_NAME] = name
        out[OI.GRAPH_NODE_ID] = session["session_id"]
        out[OI.GRAPH_NODE_PARENT_ID] = session.get("parent_session")
    if wants(export.conventions, "gen_ai"):
        out[GEN_AI.GEN_AI_AGENT_ID] = session["session_id"]
        out[GEN_AI.GEN_AI_AGENT_NAME] = name
        out[GEN_AI.GEN_AI_CONVERSATION_ID] = session["session_id"]
    out |= {
        "dsh.parent_session": session.get("parent_session"),
        "dsh.origin": session.get("origin"),
        "dsh.seed_length": session.get("seed_length"),
        "dsh.delegation_depth": session.get("delegation_depth"),
        "dsh.mode": session.get("identity_mode"),
        "dsh.label": session.get("identity_label"),
        "dsh.name": session.get("name"),
        "dsh.agent_preset": session.get("agent_preset"),
        "dsh.verdict": session.get("verdict"),
        "dsh.path": session.get("path"),
        "dsh.cwd": session.get("cwd"),
    }
    out |= {f"dsh.spawn.{key}": value for key, value in spawn.items()}
    out["dsh.export.id"] = export.export_id
    return out


def chain(
    export: Export,
    session: dict[str, Any],
    number: Any,
    first_user: str | None,
    last_text: str | None,
    outcome: str | None,
    closed: bool,
) -> dict[str, Any]:
    """A turn's CHAIN span attributes.

    Examples:
        >>> from subagent_catalog.interop.otel import export_settings
        >>> chain(export_settings(), {"session_id": "s1"}, 1, "hi", "done", "completed", True)["dsh.turn_outcome"]
        'completed'
    """
    out = _kind(export, CHAIN, None) | _session(session) | _io(export, first_user, last_text)
    out |= {
        "dsh.turn": number if is_safe_integer(number) else None,
        # not ``dsh.turn.outcome``: Phoenix nests dotted keys, and ``dsh.turn`` holds the number
        "dsh.turn_outcome": outcome,
        "dsh.turn_open": not closed,
    }
    return out


def _messages_oi(prefix: str, messages: list[Message], limit: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, message in enumerate(messages):
        at = f"{prefix}.{i}."
        out[at + "message.role"] = message.role
        if message.text:
            out[at + "message.content"] = clip(message.text, limit)
        if message.call_id is not None:
            out[at + "message.tool_call_id"] = message.call_id
        for j, (call_id, name, arguments) in enumerate(message.calls):
            call = f"{at}message.tool_calls.{j}.tool_call."
            out[call + "id"] = call_id
            out[call + "function.name"] = name
            out[call + "function.arguments"] = clip(arguments, limit)
    return out


def _messages_gen_ai(messages: list[Message], limit: int) -> str:
    items: list[dict[str, Any]] = []
    for message in messages:
        parts: list[dict[str, Any]] = []
        if message.role == "tool":
            parts.append({"type": "tool_call_response", "id": message.call_id, "response": clip(message.text, limit)})
        elif message.text:
            parts.append({"type": "text", "content": clip(message.text, limit)})
        for call_id, name, arguments in message.calls:
            parts.append({"type": "tool_call", "id": call_id, "name": name, "arguments": clip(arguments, limit)})
        items.append({"role": message.role, "parts": parts})
    return orjson.dumps(items).decode()


def llm(
    export: Export,
    session: dict[str, Any],
    key: tuple[Any, Any],
    usage: StepUsage,
    cost: float | None,
    inputs: list[Message],
    output: Message,
    finish: Any,
    partial: bool,
) -> dict[str, Any]:
    """A model step's LLM span attributes: model, provider, tokens, cost, messages (clipped).

    Examples:
        >>> from subagent_catalog.interop.otel import export_settings
        >>> usage = StepUsage("deepseek", "chat", 10, 4, 6, None, 1)
        >>> out = llm(export_settings(), {"session_id": "s"}, (1, 1), usage, None, [Message("user", "hi")],
        ...           Message("assistant", "hello"), None, False)
        >>> out["llm.token_count.prompt"], out["gen_ai.usage.input_tokens"], out["dsh.usage.input_tokens"]
        (16, 16, 10)
    """
    inputs = inputs[-MAX_MESSAGES:]
    out = _kind(export, LLM, "chat") | _session(session)
    prompt = usage.prompt_tokens
    total = None if prompt is None and usage.output_tokens is None else (prompt or 0) + (usage.output_tokens or 0)
    finish_reason = finish.get("kind") if isinstance(finish, dict) else None
    if wants(export.conventions, "openinference"):
        out |= {
            OI.LLM_MODEL_NAME: usage.model,
            OI.LLM_PROVIDER: usage.provider,
            OI.LLM_TOKEN_COUNT_PROMPT: prompt,
            OI.LLM_TOKEN_COUNT_COMPLETION: usage.output_tokens,
            OI.LLM_TOKEN_COUNT_TOTAL: total,
            OI.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_READ: usage.cache_read_tokens,
            OI.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_WRITE: usage.cache_write_tokens,
            OI.LLM_TOKEN_COUNT_COMPLETION_DETAILS_REASONING: usage.reasoning_tokens,
            OI.LLM_COST_TOTAL: cost,
            OI.LLM_FINISH_REASON: finish_reason,
        }
        out |= _messages_oi(OI.LLM_INPUT_MESSAGES, inputs, export.max_text)
        out |= _messages_oi(OI.LLM_OUTPUT_MESSAGES, [output], export.max_text)
        out |= _io(export, inputs[-1].text if inputs else None, output.text or None)
    if wants(export.conventions, "gen_ai"):
        out |= {
            GEN_AI.GEN_AI_REQUEST_MODEL: usage.model,
            GEN_AI.GEN_AI_RESPONSE_MODEL: usage.model,
            GEN_AI.GEN_AI_PROVIDER_NAME: usage.provider,
            GEN_AI.GEN_AI_USAGE_INPUT_TOKENS: prompt,
            GEN_AI.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens,
            GEN_AI.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: usage.cache_read_tokens,
            GEN_AI.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: usage.cache_write_tokens,
            GEN_AI.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: usage.reasoning_tokens,
            GEN_AI.GEN_AI_RESPONSE_FINISH_REASONS: [finish_reason] if finish_reason else None,
            GEN_AI.GEN_AI_INPUT_MESSAGES: _messages_gen_ai(inputs, export.max_text),
            GEN_AI.GEN_AI_OUTPUT_MESSAGES: _messages_gen_ai([output], export.max_text),
        }
    out |= {f"dsh.usage.{field}": getattr(usage, field) for field in _USAGE_FIELDS}
    out["dsh.turn"] = key[0] if is_safe_integer(key[0]) else None
    out["dsh.step"] = key[1] if is_safe_integer(key[1]) else None
    out |= {"dsh.cost_usd": cost, "dsh.partial": partial or None}
    return out


def tool(
    export: Export,
    session: dict[str, Any],
    call_id: str | None,
    name: str | None,
    arguments: str | None,
    result: str | None,
    unfinished: bool,
) -> dict[str, Any]:
    """A tool call's TOOL span attributes: name, arguments, result (clipped).

    Examples:
        >>> from subagent_catalog.interop.otel import export_settings
        >>> out = tool(export_settings(), {"session_id": "s"}, "c1", "grep", '{"q":"x"}', "3 hits", False)
        >>> out["tool.name"], out["gen_ai.tool.call.id"], out["input.value"]
        ('grep', 'c1', '{"q":"x"}')
    """
    out = _kind(export, TOOL, "execute_tool") | _session(session)
    if wants(export.conventions, "openinference"):
        out |= {
            OI.TOOL_NAME: name,
            OI.TOOL_ID: call_id,
            "tool_call.id": call_id,
            "tool_call.function.name": name,
            "tool_call.function.arguments": clip(arguments, export.max_text),
        }
        out |= _io(export, arguments, result, mime=JSON)
    if wants(export.conventions, "gen_ai"):
        out |= {
            GEN_AI.GEN_AI_TOOL_NAME: name,
            GEN_AI.GEN_AI_TOOL_CALL_ID: call_id,
            GEN_AI.GEN_AI_TOOL_CALL_ARGUMENTS: clip(arguments, export.max_text),
            GEN_AI.GEN_AI_TOOL_CALL_RESULT: clip(result, export.max_text),
        }
    out["dsh.tool.unfinished"] = unfinished or None
    return out


def read_problem(text: str, detail: dict[str, Any]) -> dict[str, Any]:
    """The attributes of the ``dsh.read_problem`` event of a damaged log.

    Examples:
        >>> read_problem("torn-tail: cut", {"read_cause": "torn-tail", "read_line": None})["dsh.read_cause"]
        'torn-tail'
    """
    named = ("verdict", "read_cause", "read_line", "read_offset")
    return {"dsh.read_problem": text} | {f"dsh.{key}": detail[key] for key in named if detail.get(key) is not None}
