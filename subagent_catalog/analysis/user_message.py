"""A ``user/message`` as a transcript shows it: its blocks one by one and where the message came from.

Upstream writes more than human prompts as user messages, told apart by ``data.source.kind``: a
human prompt (``user``), a subagent's closing notice (``subagent-settled``: a summary line, then
the child's closing message, whose blocks may hold reasoning and tool calls), a plugin's message
(``plugin``: a runtime-context snapshot, a compaction checkpoint), a coordinator's relay
(``coordinator``). ``user_message`` keeps each block apart (joined by a blank line, never glued)
and names the source in words.
"""

from __future__ import annotations

from typing import Any

SOURCE_NAMES = {
    "user": "human prompt",
    "subagent-settled": "subagent notice",
    "coordinator": "coordinator relay",
    "plugin": "plugin message",
}
"""How a view names a ``user/message`` source kind (others show the kind itself)."""


def source_name(source: Any) -> str | None:
    """A user message's source in words (``None`` when the message names none).

    A plugin's ``snapshot`` is a runtime-context snapshot and the ``compact`` plugin's message a
    compaction checkpoint.

    Examples:
        >>> source_name({"kind": "plugin", "form": "snapshot"}), source_name({"kind": "subagent-settled"})
        ('runtime-context snapshot', 'subagent notice')
        >>> source_name({"kind": "plugin", "plugin": "compact"}), source_name({"kind": "x"}), source_name(None)
        ('compaction checkpoint', 'x', None)
    """
    if not isinstance(source, dict) or not isinstance(source.get("kind"), str):
        return None
    kind = source["kind"]
    if kind == "plugin" and source.get("form") == "snapshot":
        return "runtime-context snapshot"
    if kind == "plugin" and source.get("plugin") == "compact":
        return "compaction checkpoint"
    return SOURCE_NAMES.get(kind, kind)


def _block(block: Any) -> dict[str, Any]:
    if not isinstance(block, dict):
        return {"type": "block", "text": ""}
    kind = block.get("type") if isinstance(block.get("type"), str) else "block"
    if kind == "tool-call":
        arguments = block.get("arguments")
        return {"type": kind, "name": block.get("name"), "text": arguments if isinstance(arguments, str) else ""}
    text = block.get("text")
    if not isinstance(text, str):
        text = "" if kind in ("text", "reasoning") else f"[{kind}]"
    return {"type": kind, "text": text}


def user_message(data: Any) -> tuple[str, dict[str, Any]]:
    """A user message's text (blocks apart, a blank line between) and the ``detail`` a view needs.

    The text holds every text and reasoning block's text and a ``[tool-call NAME]`` line for a
    tool call; ``detail`` holds ``source`` (``kind``, ``form``, ``plugin``, ``sender``) and
    ``source_name`` when the message names a source, and ``blocks`` (each ``type``, ``text`` and
    a tool call's ``name``) when it has more than one block or any block other than text.

    Examples:
        >>> text, detail = user_message({"content": [{"type": "text", "text": "Its closing message:"},
        ...     {"type": "reasoning", "text": "thinking"}, {"type": "text", "text": "Done"}],
        ...     "source": {"kind": "subagent-settled", "form": "notice", "senderSessionId": "c1"}})
        >>> text
        'Its closing message:\\n\\nthinking\\n\\nDone'
        >>> detail["source_name"], [b["type"] for b in detail["blocks"]], detail["source"]["sender"]
        ('subagent notice', ['text', 'reasoning', 'text'], 'c1')
        >>> user_message({"content": "plain"})
        ('plain', {})
    """
    content = data.get("content") if isinstance(data, dict) else None
    detail: dict[str, Any] = {}
    source = data.get("source") if isinstance(data, dict) else None
    name = source_name(source)
    if name is not None and isinstance(source, dict):
        detail["source"] = {
            key: source[field]
            for key, field in (("kind", "kind"), ("form", "form"), ("plugin", "plugin"), ("sender", "senderSessionId"))
            if isinstance(source.get(field), str)
        }
        detail["source_name"] = name
    if isinstance(content, str):
        return content, detail
    if not isinstance(content, list):
        return "", detail
    blocks = [_block(block) for block in content]
    parts = [
        f"[tool-call {block.get('name') or '?'}]" if block["type"] == "tool-call" else block["text"] for block in blocks
    ]
    if len(blocks) > 1 or any(block["type"] != "text" for block in blocks):
        detail["blocks"] = blocks
    text = ""
    for part in parts:
        if text:  # a blank line between blocks (newlines already ending a block count)
            text += "\n" * max(0, 2 - (len(text) - len(text.rstrip("\n"))))
        text += part
    return text, detail
