"""Exceptions the CLI turns into one-line messages and a non-zero exit."""
from __future__ import annotations

from pathlib import Path


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
        super().__init__(where + message)


class StoreError(KgnormError):
    """The graph store is unreachable, or rejected a query."""
