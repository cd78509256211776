"""The records a run's name comes from, read from a healthy log's bytes: titles and user messages.

A run is named by its last ``session/title`` or its first human ``user/message``
(``analysis.run_names``). Naming a run by reading its whole log costs what reading
it costs (about 8 ms for a typical synthesized log); ``name_records`` instead
decompresses a log the corpus read found healthy (verdict ``ok``: its events are
exactly its lines), finds the lines whose bytes hold either type, and decodes
only those (``orjson``), as ``search_scan`` does for a search. Lines holding an
escape a writer may use in a type (``\\u``, ``\\/``) are decoded too. Anything
odd (an unstable file, a line that is not a JSON object, a number past 64 bits)
gives ``None``: the caller reads the log with the reader instead.
"""

from __future__ import annotations

import orjson

from subagent_catalog.read.jsvalue import is_safe_integer, json_text
from subagent_catalog.read.paths import Compression
from subagent_catalog.read.search_scan import healthy_parts, line_spans

NAME_TYPES = ("session/title", "user/message")
"""The event types a run's name is read from."""

NameRecord = tuple[str, int | None, str]
"""``(type, seq, data as JSON text)`` of one title or user message."""

_NEEDLES = [b'"session/title"', b'"user/message"']


def name_records(path: str, compression: Compression) -> list[NameRecord] | None:
    """The title and user-message records of a healthy log, in file order (``None``: use the reader).

    Args:
        path: the log's exact path.
        compression: how the log is stored.

    Returns:
        One ``(type, seq, data)`` per ``session/title`` or ``user/message`` line, or ``None``
        when the log cannot be read this way.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "session.jsonl")
        >>> with open(path, "wb") as out:
        ...     _ = out.write(b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        ...                   b'{"type":"user/message","seq":0,"time":5,"data":{"content":"hi"}}\\n'
        ...                   b'{"type":"assistant/message","seq":1,"time":6,"data":{"content":"ok"}}\\n')
        >>> name_records(path, "none")
        [('user/message', 0, '{"content":"hi"}')]
    """
    parts = healthy_parts(path, compression)
    if parts is None:
        return None
    _meta, body = parts
    needles = list(_NEEDLES)
    for escape in (b"\\u", b"\\/"):
        if escape in body:
            needles.append(escape)
    found: list[NameRecord] = []
    for start, end in line_spans(body, needles, body):
        if start == end:
            continue
        try:
            event = orjson.loads(body[start:end])
        except orjson.JSONDecodeError:
            return None
        if not isinstance(event, dict):
            return None
        kind = event.get("type")
        if kind not in NAME_TYPES:
            continue
        seq = event.get("seq")
        found.append((kind, int(seq) if is_safe_integer(seq) else None, json_text(event.get("data"))))
    return found
