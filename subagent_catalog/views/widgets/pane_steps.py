"""The detail pane's steps: the run's waterfall, a jump-to-error control, the first and the last steps.

A long run shows its first ``PANE_HEAD`` and last ``PANE_TAIL`` steps, and every failed step
between them (up to ``PANE_ERRORS``), each gap saying how many steps it hides; so the last
steps, where a run usually fails, are always in the pane. The control lists the failed steps
(first, previous, next, last, and each one); the browser's front end scrolls the pane to a
step when one of them, or a bar of the waterfall, is clicked (``#seq-N`` links, resolved inside
the pane, never against the notebook's page).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from subagent_catalog.analysis.waterfall import waterfall
from subagent_catalog.frames.display import escape
from subagent_catalog.frames.units import plural
from subagent_catalog.views.transcript_parts import anchor
from subagent_catalog.views.transcript_view import transcript_fragment
from subagent_catalog.views.waterfall_view import waterfall_html

PANE_HEAD = 150
"""The first steps the pane shows."""

PANE_TAIL = 150
"""The last steps the pane shows."""

PANE_ERRORS = 200
"""Failed steps between the first and the last ones that the pane shows and lists (the rest are counted)."""


def shown_steps(steps: pl.DataFrame) -> list[int]:
    """The row positions of ``steps`` the pane shows: the first and the last ones, and the failed ones between.

    Examples:
        >>> steps = pl.DataFrame({"is_error": [i == 200 for i in range(400)], "in_seed": [False] * 400})
        >>> shown = shown_steps(steps)
        >>> len(shown), shown[149:152], shown[-1]
        (301, [149, 200, 250], 399)
    """
    total = steps.height
    if total <= PANE_HEAD + PANE_TAIL:
        return list(range(total))
    middle = steps.slice(PANE_HEAD, total - PANE_HEAD - PANE_TAIL).with_row_index("at")
    failed = middle.filter(pl.col("is_error").fill_null(False) & ~pl.col("in_seed").fill_null(False))["at"]
    kept = [PANE_HEAD + int(at) for at in failed.head(PANE_ERRORS).to_list()]
    return [*range(PANE_HEAD), *kept, *range(total - PANE_TAIL, total)]


def _error_label(row: dict[str, object]) -> str:
    kind, name, turn = row["kind"], row["name"], row["turn"]
    what = {
        "tool-result": f"tool {name or '?'} failed",
        "turn-end": "turn ended in an error",
        "retry": "model call failed, retried",
        "read-problem": "the read stopped",
    }.get(str(kind), f"{kind} failed")
    return f"{what}{f' (turn {turn})' if turn is not None else ''}"


def pane_steps_html(
    steps: pl.DataFrame, *, limit: int, budget: int, hint: Callable[[int | None], str] | None = None
) -> str:
    """The pane's steps section: the waterfall, the jump-to-error control, and the shown steps with their gaps.

    Args:
        steps: one session's ``transcript`` rows (clipped).
        limit: characters of a long text shown before the rest is folded away.
        budget: characters of text in all (``transcript_fragment``'s).
        hint: how to get a clipped text whole (``transcript_fragment``'s).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.transcript import transcript
        >>> html = pane_steps_html(transcript(read_corpus("data/sample"), "auth-refactor"), limit=600, budget=10_000)
        >>> 'class="sc-wf"' in html and "jump to error" in html and 'id="seq-0"' in html
        True
    """
    shown = shown_steps(steps)
    bars = waterfall(steps)
    on_pane = {anchor(row) for row in steps[shown].select("seq", "kind").iter_rows(named=True)} if shown else set()

    def href(seq: int) -> str | None:
        ident = f"seq-{seq}"
        return f"#{ident}" if ident in on_pane else None

    first = steps.filter(~pl.col("in_seed").fill_null(False))["time_ms"].min() if steps.height else None
    start = first if isinstance(first, int) else None
    rows = steps.with_row_index("_at").filter(pl.col("is_error").fill_null(False) & ~pl.col("in_seed").fill_null(False))
    jump = '<div class="sc-jump" style="font-size:12px;color:#57606a;margin:4px 0">no failed step</div>'
    if rows.height:  # the jump-to-error control: the failed steps shown, as links (first, previous, next, last, each)
        on_pane_at = set(shown)
        listed = [row for row in rows.iter_rows(named=True) if row["_at"] in on_pane_at]
        ids = [anchor(row) for row in listed]
        items = "".join(
            f'<li><a href="#{escape(ident)}">{escape(_error_label(row))}</a></li>'
            for ident, row in zip(ids, listed, strict=True)
        )
        left_out = rows.height - len(listed)
        more = (
            f'<div style="color:#57606a">{plural(left_out, "more failed step")} not in the pane '
            "(transcript(corpus, id).filter(pl.col('is_error')) has them all)</div>"
            if left_out
            else ""
        )
        button = '<button type="button" class="sc-button" data-sc-jump="{0}" title="{1}">{2}</button>'
        jump = (
            f'<div class="sc-jump" data-sc-errors="{escape(" ".join(ids))}" style="font-size:12px;margin:4px 0;'
            'border:1px solid #ff8182;background:#fff5f5;border-radius:6px;padding:4px 8px">'
            f"<b>jump to error</b> ({plural(rows.height, 'failed step')}): "
            f'<a href="#{escape(ids[0])}">first</a> · '
            + button.format("prev", "the failed step before the last one jumped to", "◀ previous")
            + " "
            + button.format("next", "the failed step after the last one jumped to", "next ▶")
            + f' · <a href="#{escape(ids[-1])}">last</a>'
            f"<details><summary style='cursor:pointer'>each failed step</summary>"
            f'<ol style="margin:2px 0;padding-left:22px;max-height:12em;overflow-y:auto">{items}</ol></details>'
            f"{more}</div>"
        )
    parts = [waterfall_html(bars, href=href), jump]
    runs: list[tuple[int, int]] = []
    for at in shown:
        if runs and runs[-1][1] == at:
            runs[-1] = (runs[-1][0], at + 1)
        else:
            runs.append((at, at + 1))
    done, left = 0, budget
    for low, high in runs:
        if low > done:
            parts.append(
                f'<div class="sc-gap" style="color:#57606a;margin:8px 0;padding:4px 8px;border:1px dashed #d0d7de;'
                f'border-radius:6px;font-size:12px">… {plural(low - done, "step")} not shown here '
                "(transcript(corpus, id) has them all) …</div>"
            )
        part = steps.slice(low, high - low)
        parts.append(transcript_fragment(part, limit=limit, budget=left, hint=hint, anchors=True, start=start))
        left = max(0, left - int(part["text"].str.len_chars().sum() or 0))  # at most what the part spent
        done = high
    return "".join(parts)
