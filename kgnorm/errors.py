"""Exceptions the CLI turns into one-line messages and a non-zero exit."""
from __future__ import annotations

import re
from pathlib import Path

_LINE_BREAKS = re.compile(r"\s*[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+\s*")  # what str.splitlines splits on


class KgnormError(Exception):
    """Any failure the user can act on; the CLI prints it without a traceback."""


class InputError(KgnormError):
    """Bad input data: names the file and, where known, the line or record."""

    def __init__(self, message: str, path: str | Path | None = None,
                 line: int | None = None, record: str | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.record = record
        where = ""
        if self.path:
            where = self.path
            if line is not None:
                where += f":{line}"
            if record:
                where += f" (record {record})"
            where += ": "
        elif record:
            where = f"record {record}: "
        # one line whatever the cause said (lxml's messages end in "\n, line 1, column 3")
        super().__init__(where + _LINE_BREAKS.sub(" ", message).strip())


class StoreError(KgnormError):
    """The graph store is unreachable, or rejected a query."""
