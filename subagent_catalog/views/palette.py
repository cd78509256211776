"""One colour per outcome for every view: the report, ``show`` pages, the waterfall, the browser and the dashboard.

The outcome colours are Okabe and Ito's colour-blind-safe set (``Color Universal
Design``), so an outcome looks the same in every view and stays apart from
the others under the common colour-vision deficiencies. A series that is not an
outcome (runs per day, a percentile, tokens, a model, a waterfall's model and tool
bars) is drawn from ``SERIES_COLOURS``, none of which is an outcome's, so a line
never reads as an outcome. Pure data and a few tiny functions: no view keeps
colours of its own. Each view draws its legend (the report's outcome key and
chart legends, the timelines', the waterfall's, the browser's).
"""

from __future__ import annotations

from subagent_catalog.frames.display import escape

OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky-blue": "#56B4E9",
    "bluish-green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish-purple": "#CC79A7",
}
"""Okabe and Ito's eight colours, by their own names."""

GREY = "#999999"
"""The colour of an outcome or category the palette does not name."""

OUTCOME_COLOURS = {
    "completed": OKABE_ITO["bluish-green"],
    "error": OKABE_ITO["vermillion"],
    "aborted": OKABE_ITO["orange"],
    "open": OKABE_ITO["sky-blue"],
    "max-tokens": OKABE_ITO["reddish-purple"],
    "blocked": OKABE_ITO["blue"],
    "interrupted": OKABE_ITO["yellow"],
    "unreadable": OKABE_ITO["black"],
    "no-turns": "#CCCCCC",
    "other": GREY,
}
"""The colour of each run outcome (``frames.outcome.OUTCOMES``) in every view."""

LISTING_COLOURS = {
    "child": OKABE_ITO["blue"],
    "corrupt": OKABE_ITO["vermillion"],
    "unavailable": OKABE_ITO["orange"],
    "unsupported": OKABE_ITO["reddish-purple"],
    "omitted": GREY,
}
"""The colour of each listing row's outcome: a listed child, or a diagnostic's reason."""

STATUS_COLOURS = {
    "valid": OKABE_ITO["blue"],
    "malformed": OKABE_ITO["vermillion"],
    "unknown-version": OKABE_ITO["reddish-purple"],
}
"""The colour of each descriptor status."""

SERIES_COLOURS = {
    "indigo": "#332288",
    "wine": "#882255",
    "olive": "#999933",
    "teal": "#44AA99",
    "rose": "#CC6677",
    "lavender": "#B4AEE0",
    "slate": "#8C959F",
}
"""Colours of series that are not outcomes (Paul Tol's muted set, colour-blind safe): none is an outcome's."""

BETTER_COLOURS = {"b": "#1a7f37", "a": "#cf222e"}
"""A comparison's direction: the colour of "B better" (B improved on A, a group vanished) and of "A better"
(B got worse, a group is new). A green and a red kept apart from the outcome colours (the words say it too)."""

_LIGHT = {OKABE_ITO["yellow"], OKABE_ITO["sky-blue"], OKABE_ITO["orange"], "#CCCCCC", GREY}


def outcome_colour(outcome: str | None) -> str:
    """The fill of a run outcome; grey for an outcome the palette does not name (or none).

    Examples:
        >>> outcome_colour("error"), outcome_colour("open"), outcome_colour("no-such")
        ('#D55E00', '#56B4E9', '#999999')
    """
    return OUTCOME_COLOURS.get(outcome or "", GREY)


def ink(fill: str) -> str:
    """The text colour that reads on ``fill``: near-black on the light colours, white on the dark.

    Examples:
        >>> ink("#F0E442"), ink("#D55E00")
        ('#1f2328', '#ffffff')
    """
    return "#1f2328" if fill.upper() in _LIGHT else "#ffffff"


def outcome_css(selector: str = ".o-{outcome}") -> str:
    """CSS rules colouring a badge per outcome, for a page's ``<style>`` (``{outcome}`` is filled in).

    Examples:
        >>> outcome_css(".sc-o-{outcome}").split("}")[0]
        '.sc-o-completed{background:#009E73;color:#ffffff'
    """
    return "".join(
        f"{selector.format(outcome=name)}{{background:{fill};color:{ink(fill)}}}"
        for name, fill in OUTCOME_COLOURS.items()
    )


def outcome_badge(outcome: str | None, text: str | None = None) -> str:
    """An outcome as a badge saying ``text`` (default the outcome; escaped), grey for a word the palette lacks.

    Examples:
        >>> outcome_badge("error"), outcome_badge(None)
        ('<span class="badge o-error">error</span>', '<span class="badge o-other">?</span>')
    """
    name = outcome if outcome in OUTCOME_COLOURS else "other"
    return f'<span class="badge o-{name}">{escape(text if text is not None else outcome or "?")}</span>'


OUTCOME_BADGE_CSS = (
    ".badge{display:inline-block;padding:0 7px;border-radius:10px;font-size:11.5px;line-height:18px;"
    "white-space:nowrap;margin-right:4px}" + outcome_css(".badge.o-{outcome}")
)
"""The style of ``outcome_badge`` for a page without the report's style sheet (``show`` pages)."""
