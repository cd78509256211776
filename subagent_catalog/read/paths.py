"""Where upstream stores a session: the on-disk identity of a header.

A header's ``id`` and ``cwd`` name exactly one path under the root:
``ROOT/<project-dir>/<encodeSegment(id)>/session.jsonl[.zstd]``. A file
found anywhere else makes upstream's whole listing fail, so the reader
recomputes the expected path for every header.
"""

from __future__ import annotations

import re
from typing import Literal

from subagent_catalog.read.jsvalue import utf16_units

Compression = Literal["zstd", "none"]

NO_CWD_DIR = "_no-cwd"
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_ALL_SAFE = re.compile(r"[A-Za-z0-9._\-]+")  # every code unit literal (ASCII only: no re.IGNORECASE)
_SAFE_OR_SEPARATOR = re.compile(r"[A-Za-z0-9._\-/\\:]+")
_SEPARATORS = re.compile(r"[/\\:]+")


class PathIdentityError(ValueError):
    """An id or cwd that cannot name a storage path (the empty string)."""


def log_name(compression: Compression) -> str:
    """The log file name for an encoding.

    Examples:
        >>> log_name("zstd"), log_name("none")
        ('session.jsonl.zstd', 'session.jsonl')
    """
    return "session.jsonl.zstd" if compression == "zstd" else "session.jsonl"


def other_compression(compression: Compression) -> Compression:
    """The encoding a root must not also hold.

    Examples:
        >>> other_compression("zstd")
        'none'
    """
    return "none" if compression == "zstd" else "zstd"


def _escape(unit: int) -> str:
    return "~" + format(unit, "04X")


def encode_segment(raw: str) -> str:
    """Encode a session id as one path segment, exactly as upstream does.

    Safe characters stay literal; every other UTF-16 code unit (``~``
    included) becomes ``~XXXX``; ``.`` and ``..`` are escaped whole.

    Raises:
        PathIdentityError: for the empty string.

    Examples:
        >>> encode_segment("a b~"), encode_segment(".."), encode_segment("\\U0001F600")
        ('a~0020b~007E', '~002E~002E', '~D83D~DE00')
    """
    if raw == "":
        raise PathIdentityError("cannot encode an empty path segment")
    if raw == ".":
        return "~002E"
    if raw == "..":
        return "~002E~002E"
    if _ALL_SAFE.fullmatch(raw):
        return raw  # the common case: nothing to escape
    return _encode_units(raw)


def _encode_units(raw: str) -> str:
    return "".join(chr(u) if u in _SAFE else _escape(u) for u in utf16_units(raw))


def project_key(cwd: str) -> str:
    """The project directory name upstream derives from a cwd.

    Separators (``/``, ``\\``, ``:``) collapse to one ``-``, other unsafe
    code units are escaped, leading dashes are dropped (``root`` when
    nothing is left) and the slug is cut to 251 code units.

    Raises:
        PathIdentityError: for the empty string.

    Examples:
        >>> project_key("/home/dev/My Projects"), project_key("/")
        ('--home-dev-My~0020Projects--', '--root--')
    """
    if cwd == "":
        raise PathIdentityError("cannot encode an empty project path")
    if _SAFE_OR_SEPARATOR.fullmatch(cwd):  # the common case: separators collapse, nothing to escape
        slug = _SEPARATORS.sub("-", cwd).lstrip("-") or "root"
        return f"--{slug[:251]}--"
    return _project_units(cwd)


def _project_units(cwd: str) -> str:
    parts: list[str] = []
    separator_run = False
    for unit in utf16_units(cwd):
        if unit in (0x2F, 0x5C, 0x3A):
            if not separator_run:
                parts.append("-")
            separator_run = True
        elif unit in _SAFE:
            parts.append(chr(unit))
            separator_run = False
        else:
            parts.append(_escape(unit))
            separator_run = False
    slug = "".join(parts).lstrip("-") or "root"
    return f"--{slug[:251]}--"


class _Missing:
    """The marker for a JSON key that is absent (distinct from ``null``)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


def _js_length_positive(length: object) -> bool:
    if isinstance(length, bool) or length is None:
        return bool(length) if isinstance(length, bool) else False
    if isinstance(length, (int, float)):
        return length > 0
    if isinstance(length, str):
        try:
            return float(length.strip() or "0") > 0
        except ValueError:
            return False
    return False


def project_dir_name(cwd: object) -> str:
    """The project directory upstream derives from a header's ``cwd`` value.

    ``MISSING`` (no ``cwd`` key) gives ``_no-cwd``. Values of other JSON
    types follow what upstream's string code does with them: a value without
    a usable ``length`` (a number, a boolean, most objects) gives
    ``--root--``; ``null``, arrays and objects whose ``length`` makes the
    loop run fail as an unnameable path.

    Raises:
        PathIdentityError: when upstream cannot name a storage path.

    Examples:
        >>> project_dir_name(MISSING), project_dir_name("/srv/app"), project_dir_name(5)
        ('_no-cwd', '--srv-app--', '--root--')
    """
    if cwd is MISSING:
        return NO_CWD_DIR
    if isinstance(cwd, str):
        return project_key(cwd)
    if cwd is None:
        raise PathIdentityError("cannot read the length of null")
    if isinstance(cwd, list):
        raise PathIdentityError("cannot encode a project path from an array")
    if isinstance(cwd, dict) and "length" in cwd:
        length = cwd["length"]
        if (isinstance(length, (int, float)) and not isinstance(length, bool) and length == 0) or _js_length_positive(
            length
        ):
            raise PathIdentityError("cannot encode a project path from this object")
    return "--root--"


CompressionOption = Literal["zstd", "none", "auto"]
