"""The decoded human text of each event of a log: the events frame's ``text`` and ``text_fields`` columns.

An event's text is made of **parts**, each the text of one field, in
document order: message text (``text``), reasoning (``reasoning``), a tool
call's name and arguments (``name``, ``arguments``), a tool result's output
(``result``), an error (``error``), a descriptor's label and persona
(``label``, ``persona``), and for any other type every string value of its
data (``data``). Adjacent content blocks of the same kind (``text``,
``reasoning``, ``result``) are **one part, concatenated as they are** (no
separator: streamed blocks of one kind are one continuous text, as the
transcript shows them), so a phrase running from one block into the next is
found. Parts are joined by ``PART_SEPARATOR`` (U+001F, which never occurs in
a part: one inside a text is written as U+FFFD); ``text_fields`` names each
part's field, space-separated. JSON keys, ids and other structure are never
text.

``assistant/chunk`` events have no text of their own (their deltas are the
text their ``assistant/message`` holds whole), except a stream that never got
its message (a killed run, an aborted turn, a retried attempt): its blocks
are assembled from its chunks as the transcript assembles them, and put on
the stream's last chunk event.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from subagent_catalog.read.jsvalue import frame_text, is_safe_integer

__all__ = [
    "MERGED_FIELDS",
    "PART_SEPARATOR",
    "TEXT_TYPES",
    "OpenStreams",
    "event_parts",
    "event_steps",
    "event_text",
    "log_texts",
    "orphan_streams",
    "stream_text",
]

PART_SEPARATOR = "\x1f"
"""Between two parts of an event's ``text`` (the ASCII unit separator)."""

MERGED_FIELDS = frozenset({"text", "reasoning", "result"})
"""Fields whose adjacent blocks are one part (concatenated without a separator)."""

TEXT_TYPES: tuple[str, ...] = (
    "user/message",
    "assistant/message",
    "assistant/chunk",
    "tool/call",
    "tool/result",
    "turn/end",
    "subagent/descriptor",
)
"""The event types whose text is named fields (messages, tool calls and results, errors, labels); every other
type's text is its data's string values (``data``), which an archive stores apart (``data_text``, format 6).
The types ``search_events`` searches by default (``DEFAULT_TYPES``)."""

Parts = list[tuple[str, str]]
Text = tuple[str | None, str | None]
"""An event's ``(text, text_fields)``: both ``None`` when it carries no text."""


def _strings(value: Any) -> Iterator[str]:
    """Every string value inside a decoded JSON value (keys excluded), in document order."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def _add(out: Parts, name: str, value: Any) -> None:
    if isinstance(value, str):
        if out and name in MERGED_FIELDS and out[-1][0] == name:
            out[-1] = (name, out[-1][1] + value)
        else:
            out.append((name, value))


def _content(content: Any, out: Parts) -> None:
    """The texts of a message's content (a string, or a list of blocks)."""
    if isinstance(content, str):
        _add(out, "text", content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                _block(block, out)


def _block(block: dict[str, Any], out: Parts) -> None:
    kind = block.get("type")
    if kind == "text" or kind == "reasoning":
        _add(out, kind, block.get("text"))
    elif kind == "tool-call":
        _field(out, "name", block.get("name"))
        _field(out, "arguments", block.get("arguments"))
    elif kind == "tool-result":
        result = block.get("content")
        if isinstance(result, str):
            _add(out, "result", result)
        elif isinstance(result, list):
            for part in result:
                if isinstance(part, dict) and part.get("type") == "text":
                    _add(out, "result", part.get("text"))


def _field(out: Parts, name: str, value: Any) -> None:
    """A part that never merges with its neighbour."""
    if isinstance(value, str):
        out.append((name, value))


def _message(data: dict[str, Any]) -> dict[str, Any]:
    message = data.get("message")
    return message if isinstance(message, dict) else {}


def event_parts(kind: Any, data: Any) -> Parts:
    """The text parts of one event (chunks excluded), as ``(field, text)`` pairs in document order.

    Examples:
        >>> event_parts("tool/call", {"name": "grep", "arguments": '{"q":"x"}', "callId": "c1"})
        [('name', 'grep'), ('arguments', '{"q":"x"}')]
        >>> event_parts("user/message", {"id": "m1", "content": [
        ...     {"type": "text", "text": "Build leak "}, {"type": "text", "text": "replica"}]})
        [('text', 'Build leak replica')]
        >>> event_parts("request/context", {"provider": "p", "contextWindow": 1})
        [('data', 'p')]
    """
    out: Parts = []
    if not isinstance(data, dict):
        out.extend(("data", text) for text in _strings(data))
    elif kind == "user/message":
        _content(data.get("content"), out)
    elif kind == "assistant/message":
        _content(_message(data).get("content"), out)
    elif kind == "tool/call":
        _field(out, "name", data.get("name"))
        _field(out, "arguments", data.get("arguments"))
    elif kind == "tool/result":
        _content(_message(data).get("content"), out)
        out.extend(("error", text) for text in _strings(data.get("error")))
    elif kind == "turn/end":
        reason = data.get("reason")
        if isinstance(reason, dict):
            out.extend(("error", text) for text in _strings(reason.get("error")))
    elif kind == "subagent/descriptor":
        _field(out, "label", data.get("label"))
        _field(out, "persona", data.get("persona"))
    elif kind == "assistant/chunk":
        pass  # a stream's text is its message's, or assembled by ``log_texts``
    else:
        out.extend(("data", text) for text in _strings(data))
    return out


def _joined(parts: Parts) -> Text:
    if not parts:
        return None, None
    texts = [frame_text(text) or "" for _, text in parts]
    text = PART_SEPARATOR.join(t.replace(PART_SEPARATOR, "\ufffd") if PART_SEPARATOR in t else t for t in texts)
    return text, " ".join(name for name, _ in parts)


def event_text(kind: Any, data: Any) -> Text:
    """One event's ``(text, text_fields)`` (``(None, None)`` when it has no text part).

    Examples:
        >>> event_text("tool/call", {"name": "grep", "arguments": "{}"})
        ('grep\\x1f{}', 'name arguments')
        >>> event_text("step/start", {"turn": 1, "step": 1})
        (None, None)
    """
    return _joined(event_parts(kind, data))


# --- streams that never got their message -----------------------------------------------------------


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _key(value: Any, open_value: Any) -> Any:
    """A turn or step as the events frame's column holds it (a safe integer), else the open one."""
    return int(value) if is_safe_integer(value) else open_value


_DELTA = {"text-delta": "text", "reasoning-delta": "reasoning", "tool-call-delta": "tool-call"}
_BLOCK_FIELD = {"text": "text", "reasoning": "reasoning", "tool-call": "tool-call"}


def _stream_parts(chunks: list[dict[str, Any]]) -> Parts:
    """The parts of a stream's blocks (by slot, in order of first chunk): final block text, else the deltas."""
    blocks: dict[Any, list[Any]] = {}  # slot -> [type, parts, final, name]
    for event in chunks:
        chunk = _get(event.get("data"), "chunk")
        kind = _get(chunk, "type")
        slot = _get(chunk, "index")
        if kind == "block-start":
            block_type = _get(chunk, "blockType")
        elif kind == "block-end":
            block_type = _get(_get(chunk, "block"), "type")
        else:
            block_type = _DELTA.get(kind) if isinstance(kind, str) else None
            if block_type is None:
                continue  # usage, finish and unknown chunks carry no text
        if (block := blocks.get(slot)) is None:
            block = blocks[slot] = [block_type if isinstance(block_type, str) else "text", [], None, None]
        if kind == "block-end":
            final = _get(chunk, "block")
            block[2] = final if isinstance(final, dict) else None
        elif kind == "tool-call-delta":
            name = _get(chunk, "name")
            if block[3] is None and isinstance(name, str):
                block[3] = name
            delta = _get(chunk, "argumentsDelta")
            block[1].append(delta if isinstance(delta, str) else "")
        elif kind != "block-start":
            delta = _get(chunk, "text")
            block[1].append(delta if isinstance(delta, str) else "")
    out: Parts = []
    for block_type, pieces, final, name in blocks.values():
        field = _BLOCK_FIELD.get(block_type)
        final = final or {}
        if field == "tool-call":
            called = final.get("name")
            _field(out, "name", called if isinstance(called, str) else name)
            arguments = final.get("arguments")
            _field(out, "arguments", arguments if isinstance(arguments, str) else "".join(pieces))
        elif field is not None:
            text = final.get("text")
            _add(out, field, text if isinstance(text, str) else "".join(pieces))
    return out


class OpenStreams:
    """The streams of a log still waiting for their message, fed one event at a time (``orphan_streams``' rule).

    ``feed`` takes each event's ``(type, data.turn, data.step)`` in file
    order and an item that stands for it (its position, or the event), and
    gives the streams that event leaves without a message, each as the items
    of its chunks; ``end`` gives those the end of the log leaves. Only the
    chunks of open streams are held, never the log.

    Examples:
        >>> streams = OpenStreams()
        >>> streams.feed("assistant/chunk", 1, 1, "a"), streams.feed("llm/retry", 1, 1, "r"), streams.end()
        ([], [['a']], [])
    """

    def __init__(self) -> None:
        self.streams: dict[tuple[Any, Any], list[Any]] = {}
        self.open_turn: Any = None
        self.open_step: Any = None

    def feed(self, kind: Any, turn: Any, step: Any, item: Any) -> list[list[Any]]:
        """The streams this event leaves without a message (usually none)."""
        orphans: list[list[Any]] = []
        if kind == "assistant/chunk":
            key = (_key(turn, self.open_turn), _key(step, self.open_step))
            self.streams.setdefault(key, []).append(item)
            return orphans
        if kind == "turn/start":
            self.open_turn, self.open_step = turn, None
        elif kind == "step/start":
            self.open_step = step
        elif kind == "step/end":
            self.open_step = None
        streams = self.streams
        if streams:
            if kind == "assistant/message" or kind == "llm/retry":
                key = (_key(turn, self.open_turn), _key(step, self.open_step))
                items = streams.pop(key, None)
                if items is not None and kind == "llm/retry":
                    orphans.append(items)
            elif kind == "turn/end":
                ended = _key(turn, self.open_turn)
                orphans.extend(streams.pop(key) for key in [key for key in streams if key[0] == ended])
        if kind == "turn/end":
            self.open_turn = self.open_step = None
        return orphans

    def end(self) -> list[list[Any]]:
        """The streams still open at the end of the log (none are left open after)."""
        orphans = list(self.streams.values())
        self.streams = {}
        return orphans


def orphan_streams(steps: Iterable[tuple[Any, Any, Any]]) -> list[list[int]]:
    """The streams of a log that never got their message: each the positions of its chunks.

    ``steps`` gives each event's ``(type, data.turn, data.step)`` in file
    order (``None`` where absent; a packed chunk row counts as one
    ``assistant/chunk``). A stream is the chunks of one ``(turn, step)`` (the
    chunk's own, else those of the open ``turn/start`` and ``step/start``)
    since its last message; an ``assistant/message`` of that step takes it,
    and an ``llm/retry`` of that step, a ``turn/end`` of its turn or the end
    of the log leaves it without one (``OpenStreams`` applies the rule).

    Examples:
        >>> chunk = ("assistant/chunk", 1, 1)
        >>> orphan_streams([chunk, ("assistant/message", 1, 1), chunk])
        [[2]]
    """
    streams = OpenStreams()
    orphans: list[list[int]] = []
    for index, (kind, turn, step) in enumerate(steps):
        orphans.extend(streams.feed(kind, turn, step, index))
    orphans.extend(streams.end())
    return orphans


def event_steps(event: dict[str, Any]) -> tuple[Any, Any, Any]:
    """An event's ``(type, data.turn, data.step)`` (``None`` where absent), as ``OpenStreams`` takes them.

    Examples:
        >>> event_steps({"type": "step/start", "data": {"turn": 1, "step": 2}}), event_steps({"type": "x"})
        (('step/start', 1, 2), ('x', None, None))
    """
    data = event.get("data")
    return event.get("type"), _get(data, "turn"), _get(data, "step")


def log_texts(events: list[dict[str, Any]]) -> list[Text]:
    """``(text, text_fields)`` of every event of one log (file order), streams without a message assembled.

    Each event's own text (``event_text``); the chunks of a stream that never
    got its message (``orphan_streams``) are assembled as the transcript
    assembles them, and the text put on the stream's last chunk.

    Examples:
        >>> chunk = lambda i, text: {"type": "assistant/chunk", "data": {"turn": 1, "step": 1,
        ...     "chunk": {"type": "text-delta", "index": 0, "text": text}}}
        >>> log_texts([chunk(0, "Build le"), chunk(1, "ak replica")])
        [(None, None), ('Build leak replica', 'text')]
    """
    out: list[Text] = [
        (None, None) if event.get("type") == "assistant/chunk" else event_text(event.get("type"), event.get("data"))
        for event in events
    ]
    for indices in orphan_streams(map(event_steps, events)):
        text = stream_text([events[index] for index in indices])
        if text[0] is not None:
            out[indices[-1]] = text
    return out


def stream_text(chunks: list[dict[str, Any]]) -> Text:
    """The ``(text, text_fields)`` of one stream's chunk events, assembled as the transcript does.

    Examples:
        >>> stream_text([{"type": "assistant/chunk", "data": {"chunk": {"type": "tool-call-delta", "index": 0,
        ...     "name": "grep", "argumentsDelta": "{}"}}}])
        ('grep\\x1f{}', 'name arguments')
    """
    return _joined(_stream_parts(chunks))
