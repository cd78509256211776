"""Safe byte reads for the ``read`` and ``store`` packages: the base module ``subagent_catalog.regular``.

(It moved to layer 0 so that ``prices``, beside ``read`` in layer 1, reads a user's price table the
same way; these names stay importable from here.)
"""

from __future__ import annotations

from subagent_catalog.regular import (
    OPEN_FLAGS,
    NotRegularFileError,
    open_regular,
    read_regular,
    regular_file_problem,
)

__all__ = ["OPEN_FLAGS", "NotRegularFileError", "open_regular", "read_regular", "regular_file_problem"]
