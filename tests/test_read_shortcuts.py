"""Shortcuts in per-session helpers give exactly what the general code gives (property tests).

``encode_segment`` and ``project_key`` return early for text with nothing to
escape, and ``clean_row`` leaves ASCII strings as they are; the general code
(kept as ``_encode_units`` / ``_project_units``, and ``frame_text`` on every
string) is the reference.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from subagent_catalog.read.jsvalue import clean_row, frame_text
from subagent_catalog.read.paths import _encode_units, _project_units, encode_segment, project_key

# Mostly the characters the shortcuts take, with escapes, separators, surrogates and non-ASCII mixed in.
_TEXT = st.text(
    alphabet=st.sampled_from([*"aZ09._-~/\\: \n", "\u00e9", "\ud800", "\U0001f600", "\u0663"]), min_size=1
) | st.text(min_size=1)


@settings(max_examples=500)
@given(_TEXT)
def test_encode_segment_shortcut_matches_the_general_code(raw: str) -> None:
    if raw not in (".", ".."):
        assert encode_segment(raw) == _encode_units(raw)


@settings(max_examples=500)
@given(_TEXT)
def test_project_key_shortcut_matches_the_general_code(cwd: str) -> None:
    assert project_key(cwd) == _project_units(cwd)


def test_the_shortcuts_are_taken_for_plain_ids_and_paths() -> None:
    assert encode_segment("de9fe5b2-3d23-4dc1.x_y") == "de9fe5b2-3d23-4dc1.x_y"
    assert project_key("/home/dev//projects:x\\y") == "--home-dev-projects-x-y--"
    assert project_key("/" * 3) == "--root--" and project_key("a" * 300) == f"--{'a' * 251}--"


_VALUES = st.one_of(
    st.none(), st.integers(), st.booleans(), _TEXT, st.lists(_TEXT, max_size=3), st.lists(st.integers())
)


@settings(max_examples=300)
@given(st.dictionaries(st.text(max_size=3), _VALUES, max_size=6))
def test_clean_row_matches_frame_text_on_every_string(row: dict[str, Any]) -> None:
    expected = {
        key: frame_text(value)
        if isinstance(value, str)
        else [frame_text(v) for v in value]
        if isinstance(value, list) and value and isinstance(value[0], str)
        else value
        for key, value in row.items()
    }
    cleaned = clean_row(row)
    assert cleaned == expected and list(cleaned) == list(row)
