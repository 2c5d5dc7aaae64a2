"""Hashing a file's bytes in 1 MiB blocks: what every digest of an input, a run or a model
directory is built from (memory follows the block, not the file)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

BLOCK = 1 << 20


def update_with_file(h: Any, path: str | Path) -> Any:
    """Feed the bytes of `path` into the hashlib object `h`; returns `h`."""
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(BLOCK), b""):
            h.update(block)
    return h
