"""Parse the pages of a written site: their ids and links (shared by the site tests and the browser test)."""

from __future__ import annotations

import urllib.parse
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value is not None:
                self.ids.append(value)
            if tag == "a" and name == "href" and value is not None:
                self.hrefs.append(value)


def parse_page(path: Path) -> tuple[list[str], list[str]]:
    """A page's element ids (every one, repeats kept) and its ``<a href>`` values."""
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page.ids, page.hrefs


def duplicate_ids(path: Path) -> dict[str, int]:
    """The ids a page holds more than once, with their counts."""
    return {name: n for name, n in Counter(parse_page(path)[0]).items() if n > 1}


def broken_links(directory: Path) -> list[tuple[str, str]]:
    """Every ``(page, href)`` of the site's pages whose file or ``#fragment`` does not exist.

    A link with a scheme (``https:``) is broken too: a site's links are relative.
    """
    ids = {path.name: set(parse_page(path)[0]) for path in directory.glob("*.html")}
    broken = []
    for path in sorted(directory.glob("*.html")):
        for href in parse_page(path)[1]:
            parts = urllib.parse.urlsplit(href)
            if parts.scheme or parts.netloc or parts.query:
                broken.append((path.name, href))
                continue
            target = urllib.parse.unquote(parts.path) or path.name
            fragment = urllib.parse.unquote(parts.fragment)
            if "/" in target or target not in ids or (fragment and fragment not in ids[target]):
                broken.append((path.name, href))
    return broken


HUB_PRICED = ("deepseek-official", "deepseek-v4-flash")
"""A priced model (``synth.runs.MODEL``): a child reporting it has a known cost."""


def hub_child_cost_known(index: int) -> bool:
    """Whether the hub's child ``index`` has a known cost (every seventh reports an unpriced model)."""
    return index % 7 != 3


def write_hub(root: Path, children: int) -> str:
    """A hub run: ``hub`` starts ``children`` labelled subagents, each one model step of known usage.

    Child ``i`` (``hub-child-00007``) reports ``1,000 + 37 * ((i * 53) % children)`` input tokens (so cost order
    is no list order), of the priced model unless ``hub_child_cost_known(i)`` is false; every fifth ends
    in an error. The hub's log holds a ``started subagent <id>`` result for the first three children and a
    subagent notice from the first. Returns the hub's id.
    """
    from subagent_catalog.synth.writer import EventLog, descriptor, header, write_session

    base = 1_760_000_000_000
    hub = EventLog("hub", time=base)
    hub.turn_start()
    hub.user("coordinate the children")
    for index in range(3):
        hub.tool_round(f"call-{index}", f"started subagent hub-child-{index:05d}")
    hub.add(
        "user/message",
        {
            "content": [{"type": "text", "text": "child 0 settled"}],
            "source": {"kind": "subagent-settled", "form": "notice", "senderSessionId": "hub-child-00000"},
            "role": "user",
            "id": "notice-1",
        },
        surfaceOp="append",
    )
    hub.turn_end()
    write_session(root, header("hub", created_at=base), hub.events, "none")
    for index in range(children):
        sid = f"hub-child-{index:05d}"
        log = EventLog(sid, time=base + 10 * index)
        log.turn_start()
        log.user(f"task {index}")
        log.descriptor(descriptor("one-shot", label=f"child task {index}"))
        provider, model = HUB_PRICED if hub_child_cost_known(index) else ("acme", "unpriced-model")
        message = {
            "id": f"m-{sid}",
            "role": "assistant",
            "content": [{"type": "text", "text": "done"}],
            "source": {"kind": "model", "provider": provider, "model": model},
        }
        usage = {"inputTokens": 1_000 + 37 * ((index * 53) % children), "outputTokens": 100}
        log.add("step/start", {"turn": log.turn, "step": 1})
        log.add(
            "assistant/message",
            {"turn": log.turn, "step": 1, "message": message, "usage": usage},
            dt=500,
            surfaceOp="append",
        )
        log.add("step/end", {"turn": log.turn, "step": 1})
        if index % 5 == 4:
            log.add("turn/end", {"turn": log.turn, "reason": {"kind": "error", "error": {"message": "boom"}}})
        else:
            log.turn_end()
        head = header(sid, created_at=base + 1 + index, parent="hub", subagent=True)
        write_session(root, head, log.events, "none")
    return "hub"
