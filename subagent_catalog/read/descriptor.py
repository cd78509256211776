"""Validation of ``subagent/descriptor`` payloads (descriptor format v2).

Upstream folds a payload to an identity only when it is a strict v2
record; every other payload resets the identity, and upstream does not say
why. ``classify_descriptor`` gives the same verdict and the exact reason:
which field, which unknown key, which version. Field rules are declared as
pydantic models (strict types, unknown keys forbidden).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from subagent_catalog.read.jsvalue import is_number, js_number, js_string

DESCRIPTOR_VERSION = 2
DescriptorStatus = Literal["valid", "malformed", "unknown-version"]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", defer_build=True)


class ToolFilter(_Strict):
    """``toolFilter``: ``allow`` and/or ``deny`` string lists."""

    allow: list[str] = []
    deny: list[str] = []

    @model_validator(mode="after")
    def _one_side(self) -> ToolFilter:
        if not self.model_fields_set & {"allow", "deny"}:
            raise ValueError("toolFilter must declare allow and/or deny")
        return self


class OneShotDescriptor(_Strict):
    """A v2 one-shot descriptor: ``label`` optional."""

    version: float
    mode: Literal["one-shot"]
    provider: str
    label: str = ""


class ContinuableDescriptor(_Strict):
    """A v2 continuable descriptor: ``label`` required, resumable composition optional."""

    version: float
    mode: Literal["continuable"]
    provider: str
    label: str
    agentProvider: str = ""
    agentModel: str = ""
    persona: str = ""
    toolFilter: ToolFilter | None = None

    @model_validator(mode="before")
    @classmethod
    def _tool_filter_not_null(cls, value: Any) -> Any:
        if isinstance(value, dict) and "toolFilter" in value and value["toolFilter"] is None:
            raise ValueError("toolFilter must be an object")
        return value


@dataclass(frozen=True)
class DescriptorVerdict:
    """What one descriptor payload means to upstream, and why.

    ``label`` is ``None`` when absent; ``version`` is the raw value rendered
    as text (``None`` when absent).
    """

    status: DescriptorStatus
    reason: str | None
    version: str | None
    mode: str | None
    provider: str | None
    label: str | None
    agent_provider: str | None = None
    agent_model: str | None = None
    persona: str | None = None
    tool_allow: list[str] | None = None
    tool_deny: list[str] | None = None

    @property
    def valid(self) -> bool:
        """Whether the payload establishes an identity."""
        return self.status == "valid"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _js_key_order(record: dict[str, Any]) -> list[str]:
    def index_key(key: str) -> bool:
        return key.isdigit() and (key == "0" or not key.startswith("0")) and int(key) < 2**32 - 1

    numeric = sorted((k for k in record if index_key(k)), key=int)
    return numeric + [k for k in record if not index_key(k)]


def _render_version(value: Any) -> str:
    if is_number(value):
        number = js_number(value)
        if math.isfinite(number) and number.is_integer():
            return str(int(number))
    return js_string(value) if not isinstance(value, (dict, list)) else type(value).__name__


_FIELD_ORDER = ("mode", "extra", "provider", "label", "agentProvider", "agentModel", "persona", "toolFilter")


def _first_reason(error: ValidationError, record: dict[str, Any]) -> str:
    def rank(item: Any) -> tuple[int, int]:
        loc = [str(part) for part in item["loc"]]
        if item["type"] == "extra_forbidden" and len(loc) == 1:
            return (_FIELD_ORDER.index("extra"), _js_key_order(record).index(loc[0]) if loc[0] in record else 0)
        head = loc[0] if loc else ""
        return (_FIELD_ORDER.index(head) if head in _FIELD_ORDER else len(_FIELD_ORDER), 0)

    first = min(error.errors(), key=rank)
    loc = ".".join(str(part) for part in first["loc"])
    if first["type"] == "extra_forbidden":
        return f'unknown field "{loc}"'
    if first["type"] == "missing":
        return f"{loc} is required"
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{loc}: {message}" if loc else message


def classify_descriptor(data: Any) -> DescriptorVerdict:
    """Upstream's verdict on one descriptor payload, with the reason.

    Examples:
        >>> classify_descriptor({"version": 2, "mode": "continuable", "provider": "spawn", "label": "x"}).status
        'valid'
        >>> classify_descriptor({"version": "2", "mode": "one-shot", "provider": "p"}).reason
        'version must be a number'
        >>> classify_descriptor({"version": 1, "mode": "one-shot"}).status
        'unknown-version'
        >>> classify_descriptor({"version": 2, "mode": "one-shot", "provider": "p", "persona": "x"}).reason
        'unknown field "persona"'
    """
    if not isinstance(data, dict):
        shape = "null" if data is None else ("an array" if isinstance(data, list) else type(data).__name__)
        return DescriptorVerdict("malformed", f"payload must be an object, got {shape}", None, None, None, None)
    version = data.get("version")
    mode = _text(data.get("mode"))
    provider = _text(data.get("provider"))
    label = _text(data.get("label"))
    shown = _render_version(version) if "version" in data else None
    if not is_number(version):
        return DescriptorVerdict("malformed", "version must be a number", shown, mode, provider, label)
    if js_number(version) != DESCRIPTOR_VERSION:
        return DescriptorVerdict(
            "unknown-version", f"descriptor version {shown} is not {DESCRIPTOR_VERSION}", shown, mode, provider, label
        )
    if data.get("mode") not in ("one-shot", "continuable") or mode is None:
        return DescriptorVerdict("malformed", 'mode must be "one-shot" or "continuable"', shown, None, provider, label)
    model: type[_Strict] = OneShotDescriptor if mode == "one-shot" else ContinuableDescriptor
    try:
        parsed = model.model_validate(data)
    except ValidationError as error:
        return DescriptorVerdict("malformed", _first_reason(error, data), shown, mode, provider, label)
    if isinstance(parsed, OneShotDescriptor):
        return DescriptorVerdict(
            "valid", None, shown, mode, parsed.provider, parsed.label if "label" in parsed.model_fields_set else None
        )
    assert isinstance(parsed, ContinuableDescriptor)
    fields = parsed.model_fields_set
    tool = parsed.toolFilter
    return DescriptorVerdict(
        "valid",
        None,
        shown,
        mode,
        parsed.provider,
        parsed.label,
        agent_provider=parsed.agentProvider if "agentProvider" in fields else None,
        agent_model=parsed.agentModel if "agentModel" in fields else None,
        persona=parsed.persona if "persona" in fields else None,
        tool_allow=list(tool.allow) if tool is not None and "allow" in tool.model_fields_set else None,
        tool_deny=list(tool.deny) if tool is not None and "deny" in tool.model_fields_set else None,
    )
