"""Per-file facts as bytes, and the digest of the code that derives them.

The facts cache and archives store ``LogFacts``
as pickles of this package's own dataclasses (built from parsed JSON values,
events stripped) and read them back with an unpickler that admits only those
classes, so stored facts never load anything else. ``reader_digest``
names the reader's code: stored facts are reused only under the same code.
"""

from __future__ import annotations

import hashlib
import io
import pickle
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from subagent_catalog.read.logread import DescriptorRecord, LogFacts, ProblemRecord

_ALLOWED_CLASSES = {
    ("subagent_catalog.read.logread", "LogFacts"): LogFacts,
    ("subagent_catalog.read.logread", "DescriptorRecord"): DescriptorRecord,
    ("subagent_catalog.read.logread", "ProblemRecord"): ProblemRecord,
}


class _FactsUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        cls = _ALLOWED_CLASSES.get((module, name))
        if cls is None:
            raise pickle.UnpicklingError(f"facts pickles may only hold LogFacts records, not {module}.{name}")
        return cls


def dump_facts(facts: LogFacts) -> bytes | None:
    """Pickle one file's facts without its events (``None`` if they cannot be pickled).

    Examples:
        >>> blob = dump_facts(LogFacts(size=3, events=[(1,)]))
        >>> load_facts(blob).events is None
        True
    """
    try:
        return pickle.dumps(replace(facts, events=None, events_ipc=None), protocol=5)
    except (RecursionError, pickle.PicklingError, TypeError, AttributeError, ValueError):
        return None  # e.g. a header holding JSON nested deeper than pickle recurses


def load_facts(blob: bytes) -> LogFacts:
    """Unpickle facts written by ``dump_facts``, refusing any other class.

    Raises:
        pickle.UnpicklingError: the bytes name a class other than the facts records.

    Examples:
        >>> load_facts(dump_facts(LogFacts(size=7)) or b"").size
        7
        >>> import datetime, pickle
        >>> load_facts(pickle.dumps(datetime.date(2020, 1, 1)))
        Traceback (most recent call last):
        ...
        _pickle.UnpicklingError: facts pickles may only hold LogFacts records, not datetime.date
    """
    value = _FactsUnpickler(io.BytesIO(blob)).load()
    if not isinstance(value, LogFacts):
        raise pickle.UnpicklingError(f"facts pickle holds {type(value).__name__}, not LogFacts")
    return value


@lru_cache(maxsize=1)
def reader_modules() -> tuple[str, ...]:
    """The modules whose code decides per-file facts: the ``read`` package and the base modules it may import.

    The layer rule (``read`` imports nothing above it) makes this list complete.

    Examples:
        >>> {"read.logread", "read.scanner", "read.descriptor", "errors"} <= set(reader_modules())
        True
    """
    package = Path(__file__).resolve().parent.parent
    names = [f"read.{path.stem}" for path in (package / "read").glob("*.py")]
    return tuple(sorted([*names, "errors", "progress", "version"]))


@lru_cache(maxsize=1)
def reader_digest() -> str:
    """A digest of the package version and the reader's source: stored facts are reused only under the same code.

    Examples:
        >>> len(reader_digest())
        64
    """
    from subagent_catalog.version import __version__

    digest = hashlib.sha256(__version__.encode())
    package = Path(__file__).resolve().parent.parent
    for name in reader_modules():
        path = package.joinpath(*name.split(".")).with_suffix(".py")
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"?")
    return digest.hexdigest()
