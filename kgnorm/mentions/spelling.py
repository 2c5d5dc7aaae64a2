"""The spelling map of the text pipeline (BioSyn's spelling correction), read from a file."""
from __future__ import annotations

from pathlib import Path

from kgnorm.errors import InputError
from kgnorm.mentions.readers import iter_lines


def load_spelling(path: str | Path) -> dict[str, str]:
    """Read a spelling map, one ``wrong<TAB>right`` pair a line (BioSyn's ``wrong||right`` is
    accepted too); blank lines and lines starting with '#' are skipped."""
    mapping: dict[str, str] = {}
    for lineno, line in iter_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        if "\t" in line:
            fields = line.split("\t")
        else:
            fields = line.split("||")
        if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
            raise InputError("expected 'wrong<TAB>right'", path, lineno)
        mapping[fields[0].strip()] = fields[1].strip()
    return mapping
