"""The semantic conventions a trace export follows: attribute names, pinned versions, text clipping.

Two conventions are written side by side (``conventions=`` chooses):

- **OpenInference** (``openinference-semantic-conventions``, pinned at
  ``OPENINFERENCE_VERSION``): ``openinference.span.kind`` (``AGENT``,
  ``CHAIN``, ``LLM``, ``TOOL``), ``llm.*`` token counts and messages,
  ``tool.*``, ``input.value``/``output.value``. Phoenix reads these.
- **OpenTelemetry GenAI** (``gen_ai.*``, from
  ``opentelemetry-semantic-conventions`` pinned at ``GEN_AI_PACKAGE_VERSION``,
  schema ``GEN_AI_SCHEMA_URL``). The GenAI conventions are still in
  development (that package marks them as moved to their own repository), so
  the version is named in every export: the instrumentation scope's
  ``schema_url`` and its ``dsh.conventions`` attribute.

``dsh.*`` attributes carry what neither convention has (the raw dsh usage
fields, read causes, the spawn link) and are always written.
"""

from __future__ import annotations

from importlib.metadata import version as package_version
from typing import Literal

from openinference.semconv.resource import ResourceAttributes
from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.schemas import Schemas

Conventions = Literal["openinference+gen_ai", "openinference", "gen_ai"]

OPENINFERENCE_VERSION = "0.1.42"
"""The ``openinference-semantic-conventions`` release the attribute names follow (pinned in pyproject)."""

GEN_AI_PACKAGE_VERSION = "0.66b2"
"""The ``opentelemetry-semantic-conventions`` release the ``gen_ai.*`` names come from (pinned in pyproject)."""

GEN_AI_SCHEMA_URL = Schemas.V1_44_0.value
"""The semantic-conventions schema that release publishes (the scope's ``schema_url``)."""

MAX_TEXT = 4096
"""Default clip for message texts, tool arguments and results, in characters (``max_text=``)."""

MAX_MESSAGES = 16
"""At most this many input messages per LLM span (the most recent: the step's new input first)."""

SPAN_KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
AGENT = OpenInferenceSpanKindValues.AGENT.value
CHAIN = OpenInferenceSpanKindValues.CHAIN.value
LLM = OpenInferenceSpanKindValues.LLM.value
TOOL = OpenInferenceSpanKindValues.TOOL.value

PROJECT_NAME = ResourceAttributes.PROJECT_NAME
OI = SpanAttributes
GEN_AI = gen_ai


def conventions_text() -> str:
    """The versions an export follows, as one line (the scope's ``dsh.conventions`` attribute).

    Examples:
        >>> for part in conventions_text().split("; "):
        ...     print(part)
        openinference-semantic-conventions 0.1.42
        gen_ai.* from opentelemetry-semantic-conventions 0.66b2 (schema 1.44.0, in development)
    """
    schema = GEN_AI_SCHEMA_URL.rsplit("/", 1)[-1]
    return (
        f"openinference-semantic-conventions {OPENINFERENCE_VERSION}; gen_ai.* from "
        f"opentelemetry-semantic-conventions {GEN_AI_PACKAGE_VERSION} (schema {schema}, in development)"
    )


def installed_versions() -> dict[str, str]:
    """The installed releases of the two convention packages (a test checks they are the pinned ones).

    Examples:
        >>> sorted(installed_versions())
        ['openinference-semantic-conventions', 'opentelemetry-semantic-conventions']
    """
    names = ("openinference-semantic-conventions", "opentelemetry-semantic-conventions")
    return {name: package_version(name) for name in names}


def clip(text: str | None, limit: int) -> str | None:
    """``text`` cut to ``limit`` characters, with a marker saying how many were left out.

    Examples:
        >>> clip("abcdefgh", 4), clip("abc", 4), clip(None, 4)
        ('abcd… [clipped 4 of 8 characters]', 'abc', None)
    """
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… [clipped {len(text) - limit} of {len(text)} characters]"


def wants(conventions: Conventions, name: Literal["openinference", "gen_ai"]) -> bool:
    """Whether an export with these conventions writes that set of attributes.

    Examples:
        >>> wants("openinference+gen_ai", "gen_ai"), wants("openinference", "gen_ai")
        (True, False)
    """
    return name in conventions.split("+")
